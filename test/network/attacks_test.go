package network_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testmoat"
)

// vars expands a script template: {T} the run's token ({TU} upper case), {HP}
// {SP} {RP} {UP} the ports of the run's HTTP, HTTPS, raw TCP and UDP servers, {C}
// the client, {P} the proxy, {CA} the certificate, {A} {D} {UNLISTED} {LISTED} the
// test host's allowed, denied, unlisted and listed addresses, {IF} {IDX} the host's
// end of the veth pair and its index.
func (h *testHost) vars(b *box, tok string, web *webServer, tcp *tcpServer, udp *udpServer) *strings.Replacer {
	kv := []string{"{T}", tok, "{TU}", strings.ToUpper(tok), "{C}", "python3 " + shq(b.client()), "{P}", `"$MOAT_PROXY"`,
		"{CA}", shq(testCert().caFile), "{A}", h.ip(addrAllowed), "{D}", h.ip(addrDenied),
		"{UNLISTED}", h.ip(addrUnlisted), "{LISTED}", h.ip(addrListed),
		"{IF}", h.hostIf, "{IDX}", strconv.Itoa(h.hostIfIdx)}
	if web != nil {
		kv = append(kv, "{HP}", strconv.Itoa(web.httpPort()), "{SP}", strconv.Itoa(web.httpsPort()))
	}
	if tcp != nil {
		kv = append(kv, "{RP}", strconv.Itoa(tcp.port()))
	}
	if udp != nil {
		kv = append(kv, "{UP}", strconv.Itoa(udp.port()))
	}
	return strings.NewReplacer(kv...)
}

// TestDirect: with the proxy left aside, no packet of any kind leaves the
// sandbox. The same probe run on the host is the control: it reaches every target.
func TestDirect(t *testing.T) {
	h := needTestHost(t)
	b := newBox(t)
	tcp, udp, web := h.tcp(t), h.udp(t), h.web(t)
	client := b.client()
	type target struct {
		spec string // the probe's target
		log  *evlog // where it leaves evidence
		v6ll bool   // reached the test host's IPv6 link-local address
	}
	targets := func(tok string) []target {
		r := h.vars(b, tok, web, tcp, udp)
		return []target{
			{spec: r.Replace("tcp:{A}:{RP}"), log: tcp.evlog},
			{spec: r.Replace("tcp:{UNLISTED}:{RP}"), log: tcp.evlog},
			{spec: r.Replace("mptcp:{A}:{RP}"), log: tcp.evlog},
			{spec: r.Replace("tcp6:fe80::2%{IF}:{RP}"), log: tcp.evlog, v6ll: true},
			{spec: r.Replace("tcp6:fe80::2%{IDX}:{RP}"), log: tcp.evlog, v6ll: true},
			{spec: r.Replace("tcp6:::ffff:{A}:{RP}"), log: tcp.evlog},
			{spec: r.Replace("udp:{A}:{UP}"), log: udp.evlog},
			{spec: r.Replace("icmp:{A}"), log: h.icmp},
			{spec: r.Replace("packet:{IF}"), log: h.packets},
			{spec: r.Replace("dns:{A}:{T}.allowed.moat-test"), log: h.dns.evlog},
		}
	}
	probe := func(tok string) string {
		var specs []string
		for _, tg := range targets(tok) {
			specs = append(specs, shq(tg.spec))
		}
		return "PROBE_TOKEN=" + tok + " python3 " + shq(client) + " probe " + strings.Join(specs, " ") +
			h.vars(b, tok, web, tcp, udp).Replace("; curl --noproxy '*' -sS -m 5 -o /dev/null http://{A}:{HP}/{T}")
	}
	settleAll := func() {
		tcp.settle(t)
		udp.settle(t)
		web.settle(t)
		h.dns.settle(t)
		h.settleICMP(t)
		h.settlePackets(t)
	}

	tc := token("c")
	ctl := b.host("sh", "-c", probe(tc))
	settleAll()
	for _, tg := range targets(tc) {
		want := tg.spec + " " + tc
		if strings.HasPrefix(tg.spec, "dns:") {
			want = tc + ".allowed.moat-test"
		}
		hits := tg.log.match(func(x hit) bool {
			return strings.Contains(x.Path+" "+x.Name, want) && (!tg.v6ll || strings.HasPrefix(x.Local, "[fe80::2"))
		})
		expectHit(t, hits, "the host reached "+tg.spec, ctl)
	}
	expectHit(t, web.match(hasPath("/"+tc)), "curl on the host reached the HTTP server directly", ctl)
	before := len(tcp.all()) + len(udp.all()) + len(web.all())

	ta := token("a")
	r := b.onTestHost(h, probe(ta))
	settleAll()
	res := testmoat.KeyValues(r.stdout)
	for _, tg := range targets(ta) {
		if res[tg.spec] == "" {
			t.Errorf("the probe did not try %s inside:\n%s", tg.spec, r)
		}
		expectNone(t, tg.log.containing(ta), "evidence on the test host of "+tg.spec+" from the sandbox (inside: "+res[tg.spec]+")", r)
	}
	if after := len(tcp.all()) + len(udp.all()) + len(web.all()); after != before {
		t.Errorf("the test host's servers logged %d more connections or datagrams during the sandboxed run", after-before)
	}
	t.Logf("inside: %v", res)
}

// abuse is an attack through the proxy and its control: the same client, on the
// same path, where the policy allows it.
type abuse struct {
	name            string
	attack, control string         // script templates (see vars)
	forbid          func(hit) bool // evidence of an escape on the attack's servers; nil: any hit
}

// tlsOrHTTP: a tunnel to the allowed host may open, but no ClientHello and no
// request may get through.
func tlsOrHTTP(x hit) bool { return x.Kind == "tls" || x.Kind == "http" }

var abuses = []abuse{
	// Names the policy refuses, through every protocol the proxy speaks.
	{name: "denied_name_http",
		attack:  `curl -sS -m 10 http://{T}.denied.moat-test:{HP}/{T}`,
		control: `curl -sS -m 10 http://{T}.allowed.moat-test:{HP}/{T}`},
	{name: "denied_name_https",
		attack:  `curl -sS -m 10 --cacert {CA} https://{T}.denied.moat-test:{SP}/{T}`,
		control: `curl -sS -m 10 --cacert {CA} https://{T}.allowed.moat-test:{SP}/{T}`},
	{name: "denied_name_socks5h",
		attack:  `curl -sS -m 10 --socks5-hostname {P} http://{T}.denied.moat-test:{HP}/{T}`,
		control: `curl -sS -m 10 --socks5-hostname {P} http://{T}.allowed.moat-test:{HP}/{T}`},
	{name: "denied_name_socks5_raw",
		attack:  `{C} socks {P} domain {T}.denied.moat-test {RP} raw {T}`,
		control: `{C} socks {P} domain {T}.allowed.moat-test {RP} raw {T}`},
	{name: "denied_name_connect",
		attack:  `{C} connect {P} {T}.denied.moat-test:{RP} raw {T}`,
		control: `{C} connect {P} {T}.allowed.moat-test:{RP} raw {T}`},
	{name: "unlisted_name",
		attack:  `curl -sS -m 10 http://{T}.other.moat-test:{HP}/{T}; {C} connect {P} {T}.other.moat-test:{RP} raw {T}`,
		control: `curl -sS -m 10 http://{T}.allowed.moat-test:{HP}/{T}-curl; {C} connect {P} {T}.allowed.moat-test:{RP} raw {T}-connect`},

	// IP literals: only a listed one.
	{name: "unlisted_ip_literal",
		attack:  `curl -sS -m 10 http://{UNLISTED}:{HP}/{T}; {C} connect {P} {UNLISTED}:{RP} raw {T}; {C} socks {P} ipv4 {UNLISTED} {RP} raw {T}`,
		control: `curl -sS -m 10 http://{LISTED}:{HP}/{T}-curl; {C} connect {P} {LISTED}:{RP} raw {T}-connect; {C} socks {P} ipv4 {LISTED} {RP} raw {T}-socks`},
	{name: "address_of_denied_name",
		attack:  `{C} connect {P} {D}:{RP} raw {T}; {C} socks {P} ipv4 {D} {RP} raw {T}`,
		control: `{C} connect {P} {LISTED}:{RP} raw {T}-connect; {C} socks {P} ipv4 {LISTED} {RP} raw {T}-socks`},
	{name: "ipv4_mapped_ipv6_literal",
		attack:  `{C} connect {P} '[::ffff:{UNLISTED}]:{RP}' raw {T}; {C} socks {P} ipv6 ::ffff:{UNLISTED} {RP} raw {T}`,
		control: `{C} connect {P} '[::ffff:{LISTED}]:{RP}' raw {T}-connect; {C} socks {P} ipv6 ::ffff:{LISTED} {RP} raw {T}-socks`},
	{name: "ipv6_link_local",
		attack:  `{C} connect {P} '[fe80::2]:{RP}' raw {T}; {C} connect {P} '[fe80::2%25{IF}]:{RP}' raw {T}; {C} connect {P} '[fe80::2%{IF}]:{RP}' raw {T}; {C} socks {P} ipv6 fe80::2 {RP} raw {T}`,
		control: `{C} connect {P} {LISTED}:{RP} raw {T}-connect; {C} socks {P} ipv4 {LISTED} {RP} raw {T}-socks`},

	// TLS ClientHello naming another host than the tunnel's.
	{name: "sni_fronting", forbid: tlsOrHTTP,
		attack:  `{C} connect {P} {T}.allowed.moat-test:{SP} tls {T}.denied.moat-test /{T}`,
		control: `{C} connect {P} {T}.allowed.moat-test:{SP} tls {T}.allowed.moat-test /{T}`},
	{name: "sni_fronting_socks5", forbid: tlsOrHTTP,
		attack:  `{C} socks {P} domain {T}.allowed.moat-test {SP} tls {T}.denied.moat-test /{T}`,
		control: `{C} socks {P} domain {T}.allowed.moat-test {SP} tls {T}.allowed.moat-test /{T}`},
	{name: "sni_fronting_after_alert", forbid: tlsOrHTTP,
		attack: `{C} connect {P} {T}.allowed.moat-test:{SP} alerttls {T}.denied.moat-test /{T}; {C} socks {P} domain {T}.allowed.moat-test {SP} alerttls {T}.denied.moat-test /{T}; ` +
			`{C} connect {P} {T}.allowed.moat-test:{SP} alerttls0 {T}.denied.moat-test /{T}; {C} socks {P} domain {T}.allowed.moat-test {SP} alerttls0 {T}.denied.moat-test /{T}`,
		control: `{C} connect {P} {T}.allowed.moat-test:{SP} tls {T}.allowed.moat-test /{T}`},
	{name: "sni_unlisted_name", forbid: tlsOrHTTP,
		attack:  `{C} connect {P} {T}.allowed.moat-test:{SP} tls {T}.other.moat-test /{T}`,
		control: `{C} connect {P} {T}.allowed.moat-test:{SP} tls {T}.allowed.moat-test /{T}`},
	{name: "sni_absent", forbid: tlsOrHTTP,
		attack:  `{C} connect {P} {T}.allowed.moat-test:{SP} tls - /{T}`,
		control: `{C} connect {P} {T}.allowed.moat-test:{SP} tls {T}.allowed.moat-test /{T}`},
	{name: "sni_fronting_ip_literal", forbid: tlsOrHTTP,
		attack:  `{C} connect {P} {LISTED}:{SP} tls {T}.denied.moat-test /{T}`,
		control: `{C} connect {P} {LISTED}:{SP} tls - /{T}`},

	// Host header naming another host than the request.
	{name: "host_fronting", forbid: tlsOrHTTP,
		attack:  `{C} http {P} {T}.allowed.moat-test:{HP} {T}.denied.moat-test:{HP} {T}; {C} http {P} {T}.allowed.moat-test:{HP} {T}.denied.moat-test {T}`,
		control: `{C} http {P} {T}.allowed.moat-test:{HP} {T}.allowed.moat-test:{HP} {T}-http`},
	{name: "host_fronting_curl", forbid: tlsOrHTTP,
		attack:  `curl -sS -m 10 -H 'Host: {T}.denied.moat-test' http://{T}.allowed.moat-test:{HP}/{T}`,
		control: `curl -sS -m 10 -H 'Host: {T}.allowed.moat-test:{HP}' http://{T}.allowed.moat-test:{HP}/{T}`},
	{name: "host_fronting_pipelined", forbid: func(x hit) bool { return strings.Contains(x.Name, "denied") || strings.HasSuffix(x.Path, "-2") },
		attack:  `{C} send {P} 'GET http://{T}.allowed.moat-test:{HP}/{T}-1 HTTP/1.1\r\nHost: {T}.allowed.moat-test:{HP}\r\n\r\nGET http://{T}.allowed.moat-test:{HP}/{T}-2 HTTP/1.1\r\nHost: {T}.denied.moat-test\r\nConnection: close\r\n\r\n'`,
		control: `{C} send {P} 'GET http://{T}.allowed.moat-test:{HP}/{T}-1 HTTP/1.1\r\nHost: {T}.allowed.moat-test:{HP}\r\n\r\nGET http://{T}.allowed.moat-test:{HP}/{T}-2 HTTP/1.1\r\nHost: {T}.allowed.moat-test:{HP}\r\nConnection: close\r\n\r\n'`},
	{name: "request_smuggling", forbid: func(x hit) bool { return strings.Contains(x.Name, "denied") || strings.HasSuffix(x.Path, "-b") },
		attack:  `{C} send {P} 'POST http://{T}.allowed.moat-test:{HP}/{T}-a HTTP/1.1\r\nHost: {T}.allowed.moat-test:{HP}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /{T}-b HTTP/1.1\r\nHost: {T}.denied.moat-test\r\n\r\n'`,
		control: `{C} send {P} 'POST http://{T}.allowed.moat-test:{HP}/{T}-a HTTP/1.1\r\nHost: {T}.allowed.moat-test:{HP}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi'`},

	// Host names a careless parser would read as an allowed one, or turn into a
	// denied one after the check.
	{name: "nul_byte_names",
		attack: `{C} connect {P} '{T}.denied.moat-test\x00.allowed.moat-test:{RP}' raw {T}; ` +
			`{C} connect {P} '{T}.denied.moat-test:{RP}\x00.allowed.moat-test:{RP}' raw {T}; ` +
			`{C} http {P} '{T}.denied.moat-test\x00.allowed.moat-test:{HP}' - {T}; ` +
			`{C} socks {P} domain '{T}.denied.moat-test\x00.allowed.moat-test' {RP} raw {T}`,
		control: `{C} connect {P} {T}.allowed.moat-test:{RP} raw {T}-connect; {C} http {P} {T}.allowed.moat-test:{HP} - {T}-http; {C} socks {P} domain {T}.allowed.moat-test {RP} raw {T}-socks`},
	{name: "percent_encoded_names",
		attack: `{C} http {P} '{T}%2edenied%2emoat-test:{HP}' - {T}; ` +
			`{C} http {P} '{T}.denied.moat-test%00.allowed.moat-test:{HP}' - {T}; ` +
			`{C} connect {P} '{T}%2edenied.moat-test:{RP}' raw {T}; ` +
			`{C} connect {P} '{T}.denied.moat-test%2e:{RP}' raw {T}; ` +
			`curl -sS -m 10 'http://{T}%2Edenied.moat-test:{HP}/{T}'`,
		control: `{C} http {P} {T}.allowed.moat-test:{HP} - {T}-http; {C} connect {P} {T}.allowed.moat-test:{RP} raw {T}-connect; curl -sS -m 10 'http://{T}.allowed.moat-test:{HP}/{T}-curl'`},
	{name: "case_and_trailing_dot",
		attack:  `{C} connect {P} '{TU}.DENIED.MOAT-TEST.:{RP}' raw {T}; {C} http {P} '{TU}.DeNiEd.moat-test.:{HP}' - {T}`,
		control: `{C} connect {P} '{TU}.ALLOWED.MOAT-TEST.:{RP}' raw {T}-connect; {C} http {P} '{TU}.AlLoWeD.moat-test.:{HP}' - {T}-http`},
	{name: "userinfo_and_odd_bytes",
		attack: `{C} http {P} '{T}.allowed.moat-test:{HP}@{T}.denied.moat-test:{HP}' - {T}; ` +
			`curl -sS -m 10 'http://{T}.allowed.moat-test:{HP}@{T}.denied.moat-test:{HP}/{T}'; ` +
			`{C} connect {P} '{T}.denied.moat-test\t.allowed.moat-test:{RP}' raw {T}; ` +
			`{C} connect {P} '{T}.denied.moat-test .allowed.moat-test:{RP}' raw {T}; ` +
			`{C} connect {P} '{T}.denied.moat-test\\.allowed.moat-test:{RP}' raw {T}; ` +
			`{C} connect {P} '{T}.denied\xef\xbc\x8emoat-test:{RP}' raw {T}; ` +
			`{C} socks {P} domain '{T}.denied.moat-test:{RP}' {RP} raw {T}`,
		control: `{C} http {P} {T}.allowed.moat-test:{HP} - {T}-http; curl -sS -m 10 'http://{T}.allowed.moat-test:{HP}/{T}-curl'; {C} connect {P} {T}.allowed.moat-test:{RP} raw {T}-connect; {C} socks {P} domain {T}.allowed.moat-test {RP} raw {T}-socks`},
}

var evidenceRE = regexp.MustCompile(`\{T\}(-[a-z0-9]+)?`)

// controlEvidence lists the markers a control's commands leave on its servers:
// each "{T}-name", or the token itself when there is none.
func controlEvidence(control, tok string) []string {
	var out []string
	for _, m := range evidenceRE.FindAllStringSubmatch(control, -1) {
		if m[1] != "" && !slices.Contains(out, tok+m[1]) {
			out = append(out, tok+m[1])
		}
	}
	if len(out) == 0 {
		out = []string{tok}
	}
	return out
}

// TestProxyAbuse runs each abuse against servers of its own on the test host, and
// its control against others.
func TestProxyAbuse(t *testing.T) {
	h := needTestHost(t)
	for _, c := range abuses {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newBox(t)
			tc, ta := token("c"), token("a")
			cWeb, cTCP := h.web(t), h.tcp(t)
			aWeb, aTCP := h.web(t), h.tcp(t)
			ctl := b.onTestHost(h, h.vars(b, tc, cWeb, cTCP, nil).Replace(c.control))
			r := b.onTestHost(h, h.vars(b, ta, aWeb, aTCP, nil).Replace(c.attack))
			for _, s := range []interface{ settle(*testing.T) }{cWeb, cTCP, aWeb, aTCP, h.dns} {
				s.settle(t)
			}
			// Every "{T}-name" in the control is one command's evidence.
			for _, want := range controlEvidence(c.control, tc) {
				expectHit(t, append(cWeb.containing(want), cTCP.containing(want)...), "the control's "+want+" got through", ctl)
			}
			forbid := c.forbid
			if forbid == nil {
				forbid = func(hit) bool { return true }
			}
			expectNone(t, append(aWeb.match(forbid), aTCP.match(forbid)...), "the attack's server logged", r)
			// The proxy must not even look up a name it refuses.
			expectNone(t, h.dns.match(func(x hit) bool {
				n := strings.ToLower(x.Name)
				return strings.Contains(n, ta) && !strings.HasSuffix(n, ".allowed.moat-test")
			}), "the test host's DNS server was asked", r)
			t.Logf("inside: %s", strings.TrimSpace(r.stdout+r.stderr))
			for _, e := range r.denials() {
				t.Logf("refused: %s %s:%d %s", e.Proto, e.Host, e.Port, e.Reason)
			}
		})
	}
}
