package network_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDNSExfiltration: lookups the policy refuses never leave the host, whatever
// the query type or the tool; allowed names are resolved through the supervisor's
// resolver. Judged by the log of the DNS server that resolver uses: the test
// host's (root), or one serving the loopback of a user and network namespace the
// supervisor runs in (any user).
func TestDNSExfiltration(t *testing.T) {
	if _, err := exec.LookPath("dig"); err != nil {
		t.Skip("needs dig (Debian: dnsutils)")
	}
	t.Run("supervisor_on_host", func(t *testing.T) {
		h := needTestHost(t)
		t.Parallel()
		testDNSExfiltration(t, h.dns, h.ip(addrAllowed), func(b *box, script string) result { return b.onTestHost(h, script) })
	})
	t.Run("supervisor_in_user_namespace", func(t *testing.T) {
		t.Parallel()
		d := newDNSServer(map[string][4]byte{
			"allowed.moat-test": {198, 18, 0, 2}, // never connected to
			"denied.moat-test":  {198, 18, 0, 3},
			"other.moat-test":   {198, 18, 0, 4},
		})
		conf := settings([]string{"*.allowed.moat-test", "*.denied.moat-test"}, []string{"*.denied.moat-test"})
		testDNSExfiltration(t, d, "", func(b *box, script string) result {
			return b.run(opts{script: script, config: conf, where: inUserNS, dns: d})
		})
	})
}

// testDNSExfiltration runs the lookups; upstream is the DNS server's address as
// the sandbox would have to reach it directly ("" when it can't be named).
func testDNSExfiltration(t *testing.T, d *dnsServer, upstream string, run func(*box, string) result) {
	b := newBox(t)
	client := shq(b.client())
	digc := dig("")
	controls := map[string]string{} // token -> command
	secrets := map[string]string{}
	var script []string
	add := func(m map[string]string, kind, cmd string) {
		tok := token(kind)
		m[tok] = strings.ReplaceAll(cmd, "{T}", tok)
		script = append(script, m[tok])
	}
	add(controls, "c", digc+"+short A {T}.allowed.moat-test")
	add(controls, "c", "getent hosts {T}.allowed.moat-test")
	add(controls, "c", "python3 "+client+" resolve {T}.allowed.moat-test")
	add(secrets, "s", digc+"A {T}.denied.moat-test")
	add(secrets, "s", digc+"AAAA {T}.denied.moat-test")
	add(secrets, "s", digc+"A {T}.other.moat-test")
	add(secrets, "s", digc+"+tcp A {T}.other.moat-test")
	add(secrets, "s", digc+"A {T}.OTHER.moat-test.")
	add(secrets, "s", digc+"TXT {T}.allowed.moat-test")
	add(secrets, "s", digc+"ANY {T}.allowed.moat-test")
	add(secrets, "s", digc+"MX {T}.allowed.moat-test")
	add(secrets, "s", digc+"CNAME {T}.allowed.moat-test")
	add(secrets, "s", "getent hosts {T}.other.moat-test")
	add(secrets, "s", "python3 "+client+" resolve {T}.denied.moat-test")
	add(secrets, "s", "getent ahosts {T}.denied.moat-test")
	var direct []string // straight to the upstream server: no route
	if upstream != "" {
		// In the direct mode, a TCP connection to the nameserver reaches moat's stub
		// instead, which resolves an allowed name upstream as getent would: ask it
		// for a name the policy doesn't allow.
		name := "allowed"
		if directMode {
			name = "other"
		}
		add(secrets, "s", digc+"@"+upstream+" A {T}."+name+".moat-test")
		add(secrets, "s", "python3 "+client+" probe dns:"+upstream+":{T}.allowed.moat-test")
		direct = script[len(script)-2:]
	}

	r := run(b, strings.Join(script, "; "))
	d.settle(t)
	for tok, cmd := range secrets {
		expectNone(t, d.containing(tok), "the upstream DNS server got a query from `"+cmd+"`", r)
		isDirect := false
		for _, c := range direct {
			isDirect = isDirect || c == cmd
		}
		if isDirect {
			continue
		}
		found := false
		for _, e := range r.denials() {
			// A refused query type names the host only in the detail: see
			// TestEventLog/refused_query_type_names_host.
			found = found || (e.Proto == "dns" && strings.Contains(strings.ToLower(e.Host+" "+e.Detail), tok))
		}
		if !found {
			t.Errorf("no DNS refusal in the event log for `%s`", cmd)
		}
	}
	if t.Failed() {
		t.Logf("the run:\n%s", r)
	}
	t.Logf("upstream saw %d queries; inside:\n%s", len(d.all()), r.stdout)
	// Last, as a bug here makes the verdicts above vacuous: allowed names resolve.
	for tok, cmd := range controls {
		if len(d.containing(tok)) == 0 {
			if e, ok := refusedLookup(r, tok); ok {
				bug(t, "the DNS stub refuses a name the policy allows: `%s` got %s %s (rule %q); the no-leak verdicts above are vacuous until it is fixed", cmd, e.Action, e.Reason, e.Rule)
			}
		}
		expectHit(t, d.containing(tok), "the supervisor resolved the allowed name of `"+cmd+"` upstream", r)
	}
}

// refusedLookup returns moat's refusal of a lookup of a name containing tok.
func refusedLookup(r result, tok string) (event, bool) {
	for _, e := range r.denials() {
		if e.Proto == "dns" && strings.Contains(e.Host, tok) {
			return e, true
		}
	}
	return event{}, false
}
