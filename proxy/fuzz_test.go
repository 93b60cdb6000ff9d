package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// checkCanonical fails unless host is what canonHost returns for itself: an IP
// literal that netip prints the same way, or a name of the accepted bytes that
// does not parse as an address.
func checkCanonical(t *testing.T, host string, ip netip.Addr) {
	t.Helper()
	again, ip2, err := canonHost(host)
	if err != nil || again != host || ip2 != ip {
		t.Fatalf("canonical host %q does not canonicalize to itself: %q %v %v", host, again, ip2, err)
	}
	if ip.IsValid() {
		if ip.Is4In6() || ip.Zone() != "" || ip.String() != host {
			t.Fatalf("literal %q for address %v", host, ip)
		}
		return
	}
	if _, err := netip.ParseAddr(host); err == nil {
		t.Fatalf("name %q parses as an address", host)
	}
	if host == "" || len(host) > maxNameLen || strings.Trim(host, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != "" ||
		strings.HasPrefix(host, ".") || strings.HasSuffix(host, ".") || strings.Contains(host, "..") {
		t.Fatalf("name %q has bytes or labels canonHost should refuse", host)
	}
}

func FuzzCanonHost(f *testing.F) {
	for _, s := range []string{"example.com", "Example.COM.", "127.1", "0x7f.1", "2130706433", "[::ffff:127.0.0.1]",
		"::1", "a..b", "allowed@evil", "ex%61mple", "bücher.example", "1.2.3.4.5", "0x", "08.1", "[fe80::1%25eth0]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, ip, err := canonHost(s)
		if err != nil {
			if !errors.Is(err, errBadHost) {
				t.Fatalf("error %v is not errBadHost", err)
			}
			return
		}
		checkCanonical(t, host, ip)
		if up, _, err := canonHost(strings.ToUpper(s)); err == nil && up != host && !strings.ContainsAny(s, "xX") {
			t.Fatalf("case changes the host: %q vs %q", host, up)
		}
	})
}

// FuzzRequestHead parses arbitrary request heads the way serveHTTP does and
// checks that whatever is accepted has a canonical target and forwards as a
// request net/http reads back with exactly that Host and no proxy fields.
func FuzzRequestHead(f *testing.F) {
	for _, s := range []string{
		"GET http://example.com/a HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
		"POST http://[::1]:8080/x?y HTTP/1.0\r\nContent-Length: 3\r\nConnection: x-a, close\r\nX-A: 1\r\n\r\nabc",
		"GET http://allowed@evil/ HTTP/1.1\r\n\r\n",
		"GET http://0x7f.1/ HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"\r\n\r\nOPTIONS http://a.example HTTP/1.1\r\nProxy-Authorization: x\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := readHead(bufio.NewReaderSize(bytes.NewReader(data), maxLine))
		if err != nil {
			return
		}
		if !isToken(h.method) || h.minor > 1 || h.target == "" {
			t.Fatalf("accepted request line %q %q 1.%d", h.method, h.target, h.minor)
		}
		for _, fl := range h.fields {
			if !isToken(fl.name) || strings.ContainsAny(fl.value, "\r\n\x00") {
				t.Fatalf("accepted field %q: %q", fl.name, fl.value)
			}
		}
		if h.method == http.MethodConnect {
			if tg, err := parseAuthority(h.target, 0); err == nil {
				checkCanonical(t, tg.host, tg.ip)
				checkHostHeader(h, tg, true)
			}
			return
		}
		auth, path, err := parseAbsoluteTarget(h.method, h.target)
		if err != nil {
			return
		}
		tg, err := parseAuthority(auth, 80)
		if err != nil {
			return
		}
		checkCanonical(t, tg.host, tg.ip)
		if tg.port < 1 || tg.port > 65535 {
			t.Fatalf("port %d", tg.port)
		}
		if r := checkHostHeader(h, tg, false); r != nil {
			return
		}
		body, err := requestFraming(h)
		if err != nil {
			return
		}
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		writeForwardHead(w, h, tg, path, body)
		w.Flush()
		req, err := http.ReadRequest(bufio.NewReader(&out))
		if err != nil {
			t.Fatalf("forwarded head does not parse: %v\n%q", err, out.String())
		}
		wantHost := tg.host
		if tg.ip.Is6() {
			wantHost = "[" + wantHost + "]"
		}
		if tg.port != 80 {
			wantHost = joinHostPort(tg.host, tg.port)
		}
		if req.Host != wantHost {
			t.Fatalf("forwarded Host %q, want %q\n%q", req.Host, wantHost, out.String())
		}
		for k := range req.Header {
			if lk := strings.ToLower(k); strings.HasPrefix(lk, "proxy-") || hopByHop[lk] && lk != "connection" && lk != "transfer-encoding" {
				t.Fatalf("forwarded %s\n%q", k, out.String())
			}
		}
	})
}

func FuzzSOCKSRequest(f *testing.F) {
	f.Add([]byte{5, 1, 0}, socksRequest(1, socksAtypDomain, "example.com", 443))
	f.Add([]byte{5, 2, 2, 0}, socksRequest(1, socksAtypIPv6, "::ffff:127.0.0.1", 80))
	f.Add([]byte{5, 1, 0}, socksRequest(3, socksAtypIPv4, "1.2.3.4", 0))
	f.Add([]byte{5, 1, 0}, []byte{5, 1, 0, 3, 4, '0', 'x', '7', 'f', 0, 22})
	f.Fuzz(func(t *testing.T, greet, req []byte) {
		if _, err := readSOCKSGreeting(bytes.NewReader(greet)); err != nil {
			return
		}
		tg, reason, err := readSOCKSRequest(bytes.NewReader(req))
		if (err == nil) != (reason == "") {
			t.Fatalf("reason %q with error %v", reason, err)
		}
		if err != nil {
			info(reason) // every refusal has a reply code
			return
		}
		checkCanonical(t, tg.host, tg.ip)
		if tg.port < 1 || tg.port > 65535 || req[1] != socksCmdConnect {
			t.Fatalf("accepted %v, command %d", tg, req[1])
		}
	})
}

// helloConn feeds bytes to a crypto/tls server and swallows what it writes.
type helloConn struct {
	net.Conn
	r *bytes.Reader
}

func (c *helloConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *helloConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *helloConn) Close() error                     { return nil }
func (c *helloConn) SetDeadline(time.Time) error      { return nil }
func (c *helloConn) SetReadDeadline(time.Time) error  { return nil }
func (c *helloConn) SetWriteDeadline(time.Time) error { return nil }
func (c *helloConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *helloConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }

// goServerName returns the server name crypto/tls reads from a ClientHello, and
// whether it accepted the ClientHello at all.
func goServerName(data []byte) (string, bool) {
	var name string
	seen := false
	stop := errors.New("stop")
	srv := tls.Server(&helloConn{r: bytes.NewReader(data)}, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			name, seen = h.ServerName, true
			return nil, stop
		},
	})
	srv.Handshake()
	return name, seen
}

// FuzzClientHello reads arbitrary bytes as the start of a tunnel: a ClientHello
// the proxy accepts must come from the input's prefix, and where crypto/tls
// reads the same ClientHello, both must see the same server name.
func FuzzClientHello(f *testing.F) {
	hello := helloWithSNI(f, "example.com")
	f.Add(hello)
	f.Add(fragment(hello, 3))
	f.Add(helloWithExts(f, sniExt("a.example"), sniExt("b.example")))
	f.Add(clientHello(f, "example.com"))
	f.Add(clientHello(f, ""))
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, body, err := readClientHello(bytes.NewReader(data))
		if !bytes.HasPrefix(data, raw) {
			t.Fatalf("raw is not a prefix of the input")
		}
		if err != nil {
			return
		}
		sni, has, err := parseClientHello(body)
		if err != nil {
			return
		}
		if has && sni == "" {
			t.Fatalf("empty server name accepted")
		}
		goName, ok := goServerName(data)
		if !ok {
			return
		}
		ours, _, err1 := canonHost(sni)
		theirs, _, err2 := canonHost(goName)
		if has && goName == "" || !has && goName != "" || err1 == nil && err2 == nil && ours != theirs {
			t.Fatalf("proxy reads server name %q (%v), crypto/tls reads %q", sni, has, goName)
		}
	})
}

// FuzzDNS answers arbitrary messages: only an allowed name may be looked up,
// and every answer parses, echoes the ID and holds only allowed addresses.
func FuzzDNS(f *testing.F) {
	f.Add(query(1, q("allowed.example.", dnsmessage.TypeA)))
	f.Add(query(2, q("secret.attacker.example.", dnsmessage.TypeAAAA)))
	f.Add(query(3, q("allowed.example.", dnsmessage.TypeTXT), q("x.", dnsmessage.TypeA)))
	f.Add([]byte{0, 1, 0x80, 0, 0, 1, 0, 0, 0, 0, 0, 0})
	r := parseRules([]string{"allowed.example", "*.allowed.example"}, []string{"deny.allowed.example"})
	var resolved []string
	s := &Server{
		Check:     r.Check,
		CheckName: r.CheckName,
		Resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
			resolved = append(resolved, host)
			return []netip.Addr{netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("127.0.0.1"),
				netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("fe80::1")}, nil
		},
	}
	s.init()
	f.Fuzz(func(t *testing.T, msg []byte) {
		resolved = resolved[:0]
		resp := s.answerDNS(context.Background(), msg)
		for _, n := range resolved {
			if d := r.CheckName(n); !d.Allow {
				t.Fatalf("looked up %q, which the policy refuses", n)
			}
		}
		if resp == nil {
			return
		}
		if len(resp) > 512 {
			t.Fatalf("%d-byte answer", len(resp))
		}
		var p dnsmessage.Parser
		h, err := p.Start(resp)
		if err != nil || !h.Response || resp[0] != msg[0] || resp[1] != msg[1] {
			t.Fatalf("answer header %+v %v", h, err)
		}
		p.SkipAllQuestions()
		all, err := p.AllAnswers()
		if err != nil {
			t.Fatalf("answers do not parse: %v", err)
		}
		if len(all) > 0 && len(resolved) != 1 {
			t.Fatalf("answers without one lookup")
		}
		for _, a := range all {
			var ip netip.Addr
			switch b := a.Body.(type) {
			case *dnsmessage.AResource:
				ip = netip.AddrFrom4(b.A)
			case *dnsmessage.AAAAResource:
				ip = netip.AddrFrom16(b.AAAA)
			default:
				t.Fatalf("answer of type %v", a.Header.Type)
			}
			if reason, _ := s.refused(ip); reason != "" {
				t.Fatalf("answered %v (%s)", ip, reason)
			}
		}
	})
}
