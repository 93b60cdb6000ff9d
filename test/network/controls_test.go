package network_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// testHostSettings is the policy of runs against the test host: *.allowed.moat-test
// and one IP literal allowed; denied.moat-test both allowed and denied (deny must
// win); other.moat-test and the other literals named nowhere.
func (h *testHost) settings() string {
	return settings(
		[]string{"allowed.moat-test", "*.allowed.moat-test", "denied.moat-test", "*.denied.moat-test", "loop.moat-test", h.ip(addrListed)},
		[]string{"denied.moat-test", "*.denied.moat-test"})
}

// onTestHost runs script in moat with the test host's policy and DNS.
func (b *box) onTestHost(h *testHost, script string, env ...string) result {
	b.t.Helper()
	return b.run(opts{script: script, config: h.settings(), where: viaTestHost, env: env})
}

// expectHit fails unless some hit in hits; what names the evidence looked for.
func expectHit(t *testing.T, hits []hit, what string, r fmt.Stringer) {
	t.Helper()
	if len(hits) == 0 {
		t.Errorf("control: no evidence that %s:\n%s", what, r)
	}
}

// expectNone fails for every hit in hits: evidence of an escape.
func expectNone(t *testing.T, hits []hit, what string, r fmt.Stringer) {
	t.Helper()
	for _, h := range hits {
		t.Errorf("%s: %s", what, h)
	}
	if len(hits) > 0 {
		t.Logf("the run:\n%s", r)
	}
}

func hasPath(p string) func(hit) bool {
	return func(h hit) bool { return strings.Contains(h.Path, p) }
}

// at reports whether a hit reached the test host's address for role.
func (h *testHost) at(role int) func(hit) bool {
	return func(x hit) bool { return strings.HasPrefix(x.Local, h.ip(role)+":") }
}

func and(ps ...func(hit) bool) func(hit) bool {
	return func(h hit) bool {
		for _, p := range ps {
			if !p(h) {
				return false
			}
		}
		return true
	}
}

func kind(k string) func(hit) bool { return func(h hit) bool { return h.Kind == k } }

// TestControls: everyday clients reach an allowed host through the proxy, judged by
// the test host's logs. They are also the controls of the attacks.
func TestControls(t *testing.T) {
	h := needTestHost(t)
	ca := testCert().caFile
	type check struct {
		what string
		pred func(hit) bool
	}
	for _, c := range []struct {
		name   string
		script string // {T} token, {HP} {SP} http/https ports, {CA}, {C} client.py, {GO} the Go client
		want   func(tok string) []check
	}{
		{"curl_http", `curl -sS -m 20 -o /dev/null -w '%{http_code}\n' http://{T}.allowed.moat-test:{HP}/{T}`,
			func(tok string) []check {
				return []check{{"the HTTP server got GET /" + tok, and(kind("http"), hasPath("/"+tok), h.at(addrAllowed))}}
			}},
		{"curl_https", `curl -sS -m 20 --cacert {CA} -o /dev/null -w '%{http_code}\n' https://{T}.allowed.moat-test:{SP}/{T}`,
			func(tok string) []check {
				return []check{
					{"the TLS server got a ClientHello for " + tok + ".allowed.moat-test", func(x hit) bool { return x.Kind == "tls" && x.Name == tok+".allowed.moat-test" }},
					{"the HTTPS server got GET /" + tok, and(kind("http"), hasPath("/"+tok))},
				}
			}},
		{"curl_socks5h", `curl -sS -m 20 --socks5-hostname "$MOAT_PROXY" -o /dev/null -w '%{http_code}\n' http://{T}.allowed.moat-test:{HP}/{T}`,
			func(tok string) []check {
				return []check{{"the HTTP server got GET /" + tok, and(kind("http"), hasPath("/"+tok))}}
			}},
		{"python_urllib", `python3 {C} urllib http://{T}.allowed.moat-test:{HP}/{T}-http {CA}; python3 {C} urllib https://{T}.allowed.moat-test:{SP}/{T}-https {CA}`,
			func(tok string) []check {
				return []check{
					{"the HTTP server got GET /" + tok + "-http", and(kind("http"), hasPath("/"+tok+"-http"))},
					{"the HTTPS server got GET /" + tok + "-https", and(kind("http"), hasPath("/"+tok+"-https"))},
				}
			}},
		{"go_net_http", `{GO} get http://{T}.allowed.moat-test:{HP}/{T}-http {CA}; {GO} get https://{T}.allowed.moat-test:{SP}/{T}-https {CA}`,
			func(tok string) []check {
				return []check{
					{"the HTTP server got GET /" + tok + "-http", and(kind("http"), hasPath("/"+tok+"-http"))},
					{"the HTTPS server got GET /" + tok + "-https", and(kind("http"), hasPath("/"+tok+"-https"))},
				}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newBox(t)
			web := h.web(t)
			tok := token("c")
			script := strings.NewReplacer("{T}", tok, "{HP}", strconv.Itoa(web.httpPort()), "{SP}", strconv.Itoa(web.httpsPort()),
				"{CA}", shq(ca), "{C}", shq(b.client()), "{GO}", "env "+roleEnv+"=goclient "+shq(selfBin)).Replace(c.script)
			r := b.onTestHost(h, script)
			web.settle(t)
			for _, ch := range c.want(tok) {
				expectHit(t, web.match(ch.pred), ch.what, r)
			}
			if len(r.denials()) != 0 {
				t.Errorf("control: moat refused something:\n%s", r)
			}
			t.Logf("inside: %s", strings.TrimSpace(r.stdout))
		})
	}

	t.Run("git_https", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		web := h.web(t)
		web.gitRoot = filepath.Join(b.root, "git")
		tok := token("g")
		src := filepath.Join(b.root, "src")
		b.host("git", "init", "-q", "-b", "main", src)
		if err := os.WriteFile(filepath.Join(src, "README"), []byte(tok+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"-C", src, "add", "README"},
			{"-C", src, "-c", "user.name=moat", "-c", "user.email=moat@example.invalid", "commit", "-q", "-m", "x"},
			{"clone", "-q", "--bare", src, filepath.Join(web.gitRoot, "repo.git")},
		} {
			if r := b.host("git", args...); r.code != 0 {
				t.Fatalf("host git %q:\n%s", args, r)
			}
		}
		url := fmt.Sprintf("https://%s.allowed.moat-test:%d/git/repo.git", tok, web.httpsPort())
		r := b.onTestHost(h, "git -c http.sslCAInfo="+shq(ca)+" ls-remote "+url+" && git -c http.sslCAInfo="+shq(ca)+" clone -q "+url+" clone")
		web.settle(t)
		expectHit(t, web.match(and(kind("http"), hasPath("/git/repo.git/info/refs"))), "git asked the test host for /git/repo.git/info/refs", r)
		expectHit(t, web.match(and(kind("http"), hasPath("/git/repo.git/git-upload-pack"))), "git fetched with git-upload-pack", r)
		if got, _ := os.ReadFile(filepath.Join(b.ws, "clone", "README")); strings.TrimSpace(string(got)) != tok {
			t.Errorf("control: the clone's README on the host is %q, want %q:\n%s", got, tok, r)
		}
	})

	t.Run("name_lookup", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		t1, t2, t3 := token("n"), token("n"), token("n")
		r := b.onTestHost(h, fmt.Sprintf("getent hosts %s.allowed.moat-test; "+dig("+short")+" %s.allowed.moat-test; python3 %s resolve %s.allowed.moat-test",
			t1, t2, shq(b.client()), t3))
		h.dns.settle(t)
		for _, tok := range []string{t1, t2, t3} {
			if e, ok := refusedLookup(r, tok); ok && len(h.dns.containing(tok)) == 0 {
				bug(t, "the DNS stub refuses %s.allowed.moat-test, which the policy allows: %s (rule %q)", tok, e.Reason, e.Rule)
			}
			expectHit(t, h.dns.containing(tok), "the test host's DNS server was asked for "+tok+".allowed.moat-test", r)
		}
		if n := strings.Count(r.stdout, h.ip(addrAllowed)); n < 3 {
			t.Errorf("control: %d of 3 lookups inside answered %s:\n%s", n, h.ip(addrAllowed), r)
		}
	})

	// git over ssh runs "moat connect HOST PORT" as ssh's ProxyCommand.
	t.Run("moat_connect", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		srv := h.tcp(t)
		tok := token("m")
		r := b.onTestHost(h, fmt.Sprintf("echo %s | %s connect %s.allowed.moat-test %d", tok, shq(toolMoat), tok, srv.port()))
		srv.settle(t)
		expectHit(t, srv.match(and(hasPath(tok), h.at(addrAllowed))), "moat connect reached the test host", r)
	})
}
