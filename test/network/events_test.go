package network_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// bug fails a check that once failed because of a moat bug, naming it as such.
func bug(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("BUG: "+format, args...)
}

// TestEventLog: each refusal is one JSON line naming the host, the reason and the
// rule; the summary on stderr names each refused host and how to allow it.
func TestEventLog(t *testing.T) {
	b := newBox(t)
	l := mustListen(t, "tcp4", "127.0.0.1:0")
	port := strconv.Itoa(l.port())
	r := b.run(opts{
		config: settings([]string{"localhost", "denied.invalid", "allowed.invalid"}, []string{"denied.invalid"}),
		script: strings.Join([]string{
			"curl -sS -m 5 -o /dev/null http://refused.invalid/",
			"curl -sS -m 5 -o /dev/null http://denied.invalid/",
			"curl --noproxy '' -x http://$MOAT_PROXY -sS -m 5 -o /dev/null http://localhost:" + port + "/",
			"python3 " + shq(b.client()) + " resolve secret.refused.invalid",
			"python3 " + shq(b.client()) + " resolve txt-probe.allowed.invalid", // A and AAAA: allowed, and .invalid fails upstream
		}, "; ") + "; " + dig("TXT") + " txt-probe.allowed.invalid || true",
	})
	l.settle(t)
	expectNone(t, l.all(), "the host's loopback listener was reached", r)

	byHost := map[string][]event{}
	for _, e := range r.denials() {
		byHost[e.Host] = append(byHost[e.Host], e)
	}
	one := func(host string) event {
		t.Helper()
		if n := len(byHost[host]); n != 1 {
			t.Errorf("%d refusals of %s in the event log, want 1:\n%s", n, host, r)
			return event{}
		}
		return byHost[host][0]
	}
	if e := one("refused.invalid"); e.Host != "" {
		if e.Kind != "net" || e.Proto != "http" || e.Port != 80 || e.Reason != "not-allowed" || e.Rule == "" || !strings.Contains(e.Hint, "--allow-net refused.invalid") {
			t.Errorf("refusal of a host no rule names: %+v", e)
		}
	}
	if e := one("denied.invalid"); e.Host != "" {
		if e.Reason != "denied-by-rule" || !strings.Contains(e.Rule, "network.deniedDomains") || !strings.Contains(e.Hint, "deniedDomains") {
			t.Errorf("refusal by a deniedDomains rule (deny wins over allow): %+v", e)
		}
	}
	if e := one("localhost"); e.Host != "" {
		if !strings.HasPrefix(e.Reason, "address-") || e.Port != l.port() || !strings.Contains(e.Addr, "127.0.0.1") || e.Hint == "" {
			t.Errorf("refusal of a name that resolves to loopback: %+v", e)
		}
	}
	if len(byHost["secret.refused.invalid"]) == 0 {
		t.Errorf("no refusal of the DNS lookup of secret.refused.invalid:\n%s", r)
	}
	for _, e := range r.denials() {
		if e.Kind != "net" || e.Reason == "" || e.Proto == "" {
			t.Errorf("event without kind, proto or reason: %+v", e)
		}
	}

	summary := r.stderr
	for _, want := range []string{
		"refused.invalid:80", "--allow-net refused.invalid",
		"denied.invalid:80", "network.deniedDomains",
		"localhost:" + port, "secret.refused.invalid",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary on stderr does not say %q:\n%s", want, summary)
		}
	}

	t.Run("refused_query_type_names_host", func(t *testing.T) {
		for _, e := range r.denials() {
			if e.Reason == "qtype-not-supported" && e.Host != "txt-probe.allowed.invalid" {
				bug(t, "a DNS query refused for its type is logged without its host (host %q, detail %q); the summary then prints %q",
					e.Host, e.Detail, firstLine(summary, "qtype"))
			}
		}
	})
	t.Run("summary_has_no_empty_rule", func(t *testing.T) {
		if strings.Contains(summary, ": )") {
			bug(t, "a summary line ends its reason with an empty rule: %q", firstLine(summary, ": )"))
		}
	})
}

func firstLine(s, containing string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, containing) {
			return l
		}
	}
	return ""
}

// hintFlagRE finds the flag in a hint such as "allow with --allow-net HOST:PORT, or
// add ... to network.allowedDomains in FILE".
var hintFlagRE = regexp.MustCompile(`--allow-net ([^\s,;]+)`)

// TestHintAllows: the hint a refusal gives works: passing it to moat run lets the
// same request reach the host.
func TestHintAllows(t *testing.T) {
	h := needTestHost(t)
	b := newBox(t)
	web := h.web(t)
	tok := token("h")
	url := "http://" + tok + ".other.moat-test:" + strconv.Itoa(web.httpPort()) + "/" + tok
	r := b.onTestHost(h, "curl -sS -m 10 -o /dev/null "+url+"-refused")
	var hint string
	for _, e := range r.denials() {
		if e.Host == tok+".other.moat-test" {
			hint = e.Hint
		}
	}
	m := hintFlagRE.FindStringSubmatch(hint)
	if m == nil {
		t.Fatalf("the refusal's hint is %q, want one naming --allow-net HOST:\n%s", hint, r)
	}
	r2 := b.run(opts{script: "curl -sS -m 10 -o /dev/null " + url + "-allowed", config: h.settings(), where: viaTestHost, flags: []string{"--allow-net", m[1]}})
	if r2.code == 125 && strings.Contains(r2.stderr, "not defined") {
		bug(t, "the hint %q names a flag moat run does not accept: %s", hint, strings.TrimSpace(r2.stderr))
	}
	web.settle(t)
	expectHit(t, web.match(and(hasPath(tok+"-allowed"), h.at(addrOther))), "the request reached other.moat-test with the hint's flag", r2)
	expectNone(t, web.containing(tok+"-refused"), "the refused request reached the test host", r)
}
