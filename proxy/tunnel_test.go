package proxy

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// openTunnel opens a tunnel to host:port with CONNECT or SOCKS5 (domain address
// type for names, IPv4 or IPv6 for literals) and returns it, or nil and what
// the proxy answered: the X-Moat-Blocked/X-Moat-Error reason for CONNECT, the
// reply code for SOCKS5.
func openTunnel(t testing.TB, e *env, proto, host string, port int) (net.Conn, string) {
	t.Helper()
	switch proto {
	case "connect":
		resp, c := connectVia(t, e.proxyAddr, joinHostPort(host, port))
		if c == nil {
			return nil, fmt.Sprint(resp.StatusCode, " ", resp.Header.Get("X-Moat-Blocked")+resp.Header.Get("X-Moat-Error"))
		}
		return c, ""
	case "socks5":
		atyp := byte(socksAtypDomain)
		if a, err := netip.ParseAddr(host); err == nil {
			atyp = socksAtypIPv6
			if a.Is4() {
				atyp = socksAtypIPv4
			}
		}
		code, c := socksVia(t, e.proxyAddr, socksRequest(socksCmdConnect, atyp, host, port))
		if c == nil {
			return nil, fmt.Sprintf("socks %#02x", code)
		}
		return c, ""
	}
	t.Fatalf("proto %q", proto)
	return nil, ""
}

func proxyPort(e *env) int {
	p, _ := strconv.Atoi(e.proxyAddr[strings.LastIndexByte(e.proxyAddr, ':')+1:])
	return p
}

func TestTunnels(t *testing.T) {
	tests := []struct {
		name       string
		host       string
		port       int    // 0: the proxy's own port
		connect    string // CONNECT: "" for a tunnel, else "status reason"
		socks      string // SOCKS5: "" for a tunnel, else the reply code
		wantDialed string // the dial log, as fmt.Sprint
	}{
		{"allowed name", "allowed.example", 443, "", "", "[198.18.0.1:443]"},
		{"allowed by wildcard", "api.allowed.example", 443, "", "", "[198.18.0.1:443]"},
		{"denied by rule", "denied.allowed.example", 443, "403 " + ReasonDenied, "socks 0x02", "[]"},
		{"not allowed", "evil.example", 443, "403 " + ReasonNotAllowed, "socks 0x02", "[]"},
		{"allowed name, other port", "allowed.example", 22, "403 " + ReasonNotAllowed, "socks 0x02", "[]"},
		{"the proxy itself by address", "127.0.0.1", 0, "403 " + ReasonNotAllowed, "socks 0x02", "[]"},
		{"the proxy itself by IPv6 loopback", "::1", 0, "403 " + ReasonNotAllowed, "socks 0x02", "[]"},
		{"the proxy itself by mapped address", "::ffff:127.0.0.1", 0, "403 " + ReasonNotAllowed, "socks 0x02", "[]"},
		{"the proxy itself by an allowed name", "self.allowed.example", 0, "403 " + ReasonLoopback, "socks 0x02", "[]"},
		{"localhost allowed by name only", "localhost", 0, "403 " + ReasonLoopback, "socks 0x02", "[]"},
		{"metadata by an allowed name", "meta.allowed.example", 80, "403 " + ReasonMetadata, "socks 0x02", "[]"},
		{"host address by an allowed name", "hostaddr.allowed.example", 443, "403 " + ReasonHostAddr, "socks 0x02", "[]"},
		{"loopback literal allowed explicitly", "127.0.0.1", 9, "", "", "[127.0.0.1:9]"},
		{"loopback skipped, next address used", "mixed.allowed.example", 443, "", "", "[198.18.0.1:443]"},
		{"dead address skipped", "flaky.allowed.example", 443, "", "", "[198.18.0.98:443 198.18.0.1:443]"},
		{"allowed literal", "198.18.0.1", 443, "", "", "[198.18.0.1:443]"},
		{"resolve fails", "nxdomain.allowed.example", 443, "502 " + ReasonResolveFailed, "socks 0x04", "[]"},
		{"connection refused", "down.allowed.example", 443, "502 " + ReasonDialFailed, "socks 0x05", "[198.18.0.98:443]"},
		{"odd IPv4 form of loopback", "0x7f.1", 443, "403 " + ReasonNotAllowed, "socks 0x02", "[]"},
		{"name with NUL", "allowed.example\x00.evil.example", 443, "400 " + ReasonBadRequest, "socks 0x02", "[]"},
		{"name with space", "allowed.example evil", 443, "400 " + ReasonBadRequest, "socks 0x02", "[]"},
		{"name with percent", "allowed%2eexample", 443, "400 " + ReasonBadHost, "socks 0x02", "[]"},
		{"userinfo", "allowed.example@evil.example", 443, "400 " + ReasonBadHost, "socks 0x02", "[]"},
		{"port 0", "allowed.example", -1, "400 " + ReasonBadHost, "socks 0x02", "[]"},
	}
	for _, proto := range []string{"connect", "socks5"} {
		for _, tt := range tests {
			t.Run(proto+"/"+tt.name, func(t *testing.T) {
				e := newEnv(t, []string{"allowed.example:443", "*.allowed.example", "localhost", "198.18.0.1:443", "127.0.0.1:9"},
					[]string{"denied.allowed.example"}, func(s *Server) {
						s.HostAddrs = func() []netip.Addr { return []netip.Addr{netip.MustParseAddr("198.18.0.77")} }
					})
				e.upstream("198.18.0.1", 443, echo)
				e.upstream("127.0.0.1", 9, echo)
				e.host("allowed.example", "198.18.0.1")
				e.host("api.allowed.example", "198.18.0.1")
				e.host("self.allowed.example", "127.0.0.1")
				e.host("localhost", "127.0.0.1", "::1")
				e.host("meta.allowed.example", "169.254.169.254", "fd00:ec2::254")
				e.host("hostaddr.allowed.example", "198.18.0.77")
				e.host("mixed.allowed.example", "127.0.0.1", "198.18.0.1")
				e.host("flaky.allowed.example", "198.18.0.98", "198.18.0.1")
				e.host("down.allowed.example", "198.18.0.98")
				port := tt.port
				switch port {
				case 0:
					port = proxyPort(e)
				case -1:
					port = 0
				}
				want := tt.connect
				if proto == "socks5" {
					want = tt.socks
				}
				host := tt.host // NUL or space in a CONNECT line make the request line malformed
				c, got := openTunnel(t, e, proto, host, port)
				if got != want {
					t.Fatalf("%s %s:%d: got %q, want %q", proto, host, port, got, want)
				}
				if c != nil {
					msg := bytes.Repeat([]byte("moat "), 1000)
					if back := roundTrip(t, c, msg); !bytes.Equal(back, msg) {
						t.Fatalf("echo returned %d bytes, want %d", len(back), len(msg))
					}
					c.Close()
				}
				e.close()
				wantDialed := strings.ReplaceAll(tt.wantDialed, ":0]", fmt.Sprintf(":%d]", port))
				if got := fmt.Sprint(e.Dialed()); got != wantDialed {
					t.Fatalf("dialed %s, want %s", got, wantDialed)
				}
				ev := e.Events()
				if want == "" {
					if len(ev) != 1 || ev[0].Action != actionAllow || ev[0].Proto != proto || ev[0].Addr == "" || ev[0].Rule == "" {
						t.Fatalf("events %+v, want one allow", ev)
					}
					return
				}
				if len(ev) != 1 || ev[0].Action == actionAllow {
					t.Fatalf("events %+v, want one refusal", ev)
				}
				if proto == "connect" && !strings.HasSuffix(want, " "+ev[0].Reason) {
					t.Fatalf("event reason %q, the proxy answered %q", ev[0].Reason, want)
				}
			})
		}
	}
}

func TestSOCKSProtocol(t *testing.T) {
	tests := []struct {
		name   string
		greet  []byte
		req    []byte
		method byte   // the method the proxy selects
		reply  int    // the reply code, -1 for none
		reason string // the one event's reason
	}{
		{"BIND", []byte{5, 1, 0}, socksRequest(2, socksAtypDomain, "allowed.example", 443), 0, socksBadCommand, ReasonCommand},
		{"UDP ASSOCIATE", []byte{5, 1, 0}, socksRequest(3, socksAtypIPv4, "0.0.0.0", 0), 0, socksBadCommand, ReasonCommand},
		{"unknown command", []byte{5, 1, 0}, socksRequest(9, socksAtypDomain, "allowed.example", 443), 0, socksBadCommand, ReasonCommand},
		{"unknown address type", []byte{5, 1, 0}, []byte{5, 1, 0, 5, 1, 2, 3, 4, 0, 80}, 0, socksBadAddrType, ReasonAddrType},
		{"wrong version in request", []byte{5, 1, 0}, []byte{4, 1, 0, 1, 1, 2, 3, 4, 0, 80}, 0, socksFailure, ReasonBadRequest},
		{"empty domain", []byte{5, 1, 0}, []byte{5, 1, 0, 3, 0, 1, 187}, 0, socksNotAllowed, ReasonBadHost},
		{"only username/password offered", []byte{5, 1, 2}, nil, socksNoMethod, -1, ReasonAuth},
		{"no methods", []byte{5, 0}, nil, 0, -1, ReasonBadRequest},
		{"no-auth among others", []byte{5, 3, 2, 1, 0}, socksRequest(2, socksAtypDomain, "allowed.example", 443), 0, socksBadCommand, ReasonCommand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, []string{"allowed.example"}, nil)
			c, err := net.Dial("tcp", e.proxyAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.Write(tt.greet)
			var m [2]byte
			_, err = io.ReadFull(c, m[:])
			if tt.name == "no methods" {
				if err == nil {
					t.Fatalf("method reply %x to a greeting without methods", m)
				}
			} else if err != nil || m != [2]byte{5, tt.method} {
				t.Fatalf("method reply %x %v, want 05 %02x", m, err, tt.method)
			}
			if tt.reply >= 0 {
				c.Write(tt.req)
				var rep [10]byte
				if _, err := io.ReadFull(c, rep[:]); err != nil || rep[1] != byte(tt.reply) {
					t.Fatalf("reply %x %v, want code %#02x", rep, err, tt.reply)
				}
			}
			if _, err := c.Read(m[:1]); err != io.EOF {
				t.Fatalf("connection not closed after a refusal: %v", err)
			}
			e.close()
			if r := e.refusals(); len(r) != 1 || r[0] != tt.reason {
				t.Fatalf("refusals %v, want [%s]", r, tt.reason)
			}
			if len(e.Resolved()) != 0 || len(e.Dialed()) != 0 {
				t.Fatalf("resolved %v, dialed %v", e.Resolved(), e.Dialed())
			}
		})
	}
}

func TestReadSOCKSRequest(t *testing.T) {
	tests := []struct {
		name   string
		in     []byte
		want   string // target, "" when refused
		reason string
	}{
		{"domain", socksRequest(1, socksAtypDomain, "Allowed.Example.", 443), "allowed.example:443", ""},
		{"IPv4", socksRequest(1, socksAtypIPv4, "198.18.0.1", 80), "198.18.0.1:80", ""},
		{"IPv6", socksRequest(1, socksAtypIPv6, "2001:db8::1", 80), "[2001:db8::1]:80", ""},
		{"mapped IPv6 becomes IPv4", socksRequest(1, socksAtypIPv6, "::ffff:127.0.0.1", 80), "127.0.0.1:80", ""},
		{"IP literal as a domain", socksRequest(1, socksAtypDomain, "0x7f.1", 80), "127.0.0.1:80", ""},
		{"IPv6 literal as a domain", socksRequest(1, socksAtypDomain, "[::1]", 80), "[::1]:80", ""},

		{"BIND", socksRequest(2, socksAtypDomain, "allowed.example", 443), "", ReasonCommand},
		{"address type 2", []byte{5, 1, 0, 2, 0, 0}, "", ReasonAddrType},
		{"NUL in domain", socksRequest(1, socksAtypDomain, "a.example\x00b", 80), "", ReasonBadHost},
		{"percent in domain", socksRequest(1, socksAtypDomain, "a%2eexample", 80), "", ReasonBadHost},
		{"port 0", socksRequest(1, socksAtypDomain, "allowed.example", 0), "", ReasonBadHost},
		{"truncated domain", []byte{5, 1, 0, 3, 10, 'a'}, "", ReasonBadRequest},
		{"truncated port", []byte{5, 1, 0, 1, 1, 2, 3, 4, 0}, "", ReasonBadRequest},
		{"version 4", []byte{4, 1, 0, 1, 1, 2, 3, 4, 0, 80}, "", ReasonBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason, err := readSOCKSRequest(bytes.NewReader(tt.in))
			if tt.want == "" {
				if err == nil || reason != tt.reason {
					t.Fatalf("readSOCKSRequest = %v, %q, %v; want refusal %q", got, reason, err, tt.reason)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Fatalf("readSOCKSRequest = %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}

// clientHello returns the first flight crypto/tls sends for serverName ("" or
// an IP address: no server_name extension).
func clientHello(t testing.TB, serverName string) []byte {
	t.Helper()
	c1, c2 := net.Pipe()
	defer c2.Close()
	go func() {
		tls.Client(c1, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}).Handshake()
		c1.Close()
	}()
	raw, body, err := readClientHello(c2)
	if err != nil {
		t.Fatal(err)
	}
	sni, has, err := parseClientHello(body)
	if err != nil || has && !strings.EqualFold(sni, strings.TrimSuffix(serverName, ".")) {
		t.Fatalf("parsing crypto/tls's ClientHello for %q: %q %v %v", serverName, sni, has, err)
	}
	return raw
}

// fragment re-frames TLS records so the handshake spans records of n bytes.
func fragment(raw []byte, n int) []byte {
	var hs []byte
	for len(raw) >= 5 {
		l := int(binary.BigEndian.Uint16(raw[3:5]))
		hs = append(hs, raw[5:5+l]...)
		raw = raw[5+l:]
	}
	var out []byte
	for len(hs) > 0 {
		k := min(n, len(hs))
		out = append(out, 0x16, 3, 1, byte(k>>8), byte(k))
		out = append(out, hs[:k]...)
		hs = hs[k:]
	}
	return out
}

func TestTunnelFirstBytes(t *testing.T) {
	helloAllowed := clientHello(t, "allowed.example")
	tests := []struct {
		name   string
		host   string // tunnel destination (port 443)
		first  []byte // what the client sends first
		reason string // "" for forwarded
	}{
		{"SNI equals the host", "allowed.example", helloAllowed, ""},
		{"SNI in other case", "allowed.example", clientHello(t, "ALLOWED.example"), ""},
		{"SNI with a trailing dot", "allowed.example", helloWithSNI(t, "allowed.example."), ""},
		{"SNI with a NUL", "allowed.example", helloWithSNI(t, "allowed.example\x00.evil.example"), ReasonSNIMismatch},
		{"SNI of another allowed host", "allowed.example", clientHello(t, "other.allowed.example"), ReasonSNIMismatch},
		{"SNI of a denied host", "allowed.example", clientHello(t, "evil.example"), ReasonSNIMismatch},
		{"no SNI for a name", "allowed.example", clientHello(t, ""), ReasonSNIMismatch},
		{"SNI as an IP for a name", "allowed.example", helloWithSNI(t, "198.18.0.1"), ReasonSNIMismatch},
		{"fragmented, SNI allowed", "allowed.example", fragment(helloAllowed, 7), ""},
		{"one-byte records, SNI allowed", "allowed.example", fragment(helloAllowed, 1), ""},
		{"fragmented, SNI denied", "allowed.example", fragment(clientHello(t, "evil.example"), 7), ReasonSNIMismatch},
		{"literal, no SNI", "198.18.0.1", clientHello(t, ""), ""},
		{"literal, SNI allowed", "198.18.0.1", helloAllowed, ""},
		{"literal, SNI of a denied host", "198.18.0.1", clientHello(t, "evil.example"), ReasonSNIMismatch},
		{"two server_name extensions", "allowed.example", helloWithExts(t, sniExt("allowed.example"), sniExt("evil.example")), ReasonBadTLS},
		{"two names in one extension", "allowed.example", helloWithExts(t, sniList([]byte{0, 0, 15}, "allowed.example", []byte{0, 0, 12}, "evil.example")), ReasonBadTLS},
		{"handshake type other than ClientHello", "allowed.example", []byte{0x16, 3, 1, 0, 4, 2, 0, 0, 0}, ReasonBadTLS},
		{"0x16 then garbage", "allowed.example", append([]byte{0x16, 9, 9, 0, 3}, "abc"...), ReasonBadTLS},
		{"data after the ClientHello in its record", "allowed.example", appendInRecord(helloAllowed, []byte{1, 2, 3}), ReasonBadTLS},
		{"alert record, then a ClientHello of a denied host", "allowed.example", append([]byte{0x15, 3, 3, 0, 2, 1, 0x5a}, clientHello(t, "evil.example")...), ReasonBadTLS},
		{"change_cipher_spec record first", "allowed.example", append([]byte{0x14, 3, 3, 0, 1, 1}, helloAllowed...), ReasonBadTLS},
		{"application data record first", "allowed.example", []byte{0x17, 3, 3, 0, 1, 'x'}, ReasonBadTLS},
		{"alert record of version 0.0, then a ClientHello of a denied host", "allowed.example", append([]byte{0x15, 0, 0, 0, 2, 1, 0x5a}, clientHello(t, "evil.example")...), ReasonBadTLS},
		{"0x15 not followed by a TLS version", "allowed.example", []byte{0x15, 'h', 'i'}, ""},
		{"ssh banner", "allowed.example", []byte("SSH-2.0-OpenSSH_9.6\r\n"), ""},
		// An SSL 2.0-format hello can't name a server: 0x80|length, length, CLIENT-HELLO, version, then
		// cipher-spec, session-id and challenge lengths, one cipher and a 16-byte challenge.
		{"SSL 2.0-format ClientHello for TLS 1.2", "allowed.example", append([]byte{0x80, 28, 1, 3, 3, 0, 3, 0, 0, 0, 16, 0, 0, 0x2f}, make([]byte, 16)...), ReasonBadTLS},
		{"SSL 2.0 ClientHello to a literal", "198.18.0.1", append([]byte{0x80, 28, 1, 0, 2, 0, 3, 0, 0, 0, 16, 1, 0, 0x80}, make([]byte, 16)...), ReasonBadTLS},
		{"binary protocol with the top bit set", "allowed.example", []byte{0x81, 5, 2, 0, 0, 9, 9}, ""},
		{"plain HTTP", "allowed.example", []byte("GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n"), ""},
		{"ClientHello then early data", "allowed.example", append(slices.Clone(helloAllowed), 0x17, 3, 3, 0, 1, 'x'), ""},
	}
	for _, proto := range []string{"connect", "socks5"} {
		for _, tt := range tests {
			t.Run(proto+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, []string{"allowed.example", "*.allowed.example", "198.18.0.1:443"}, nil)
				e.host("allowed.example", "198.18.0.1")
				got := make(chan []byte, 4)
				e.upstream("198.18.0.1", 443, func(c net.Conn) {
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					b, _ := io.ReadAll(c)
					got <- b
				})
				c, refused := openTunnel(t, e, proto, tt.host, 443)
				if c == nil {
					t.Fatalf("tunnel refused: %s", refused)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				c.Write(tt.first)
				c.(interface{ CloseWrite() error }).CloseWrite()
				io.ReadAll(c)
				var upstream []byte
				select {
				case upstream = <-got:
				case <-time.After(5 * time.Second):
					t.Fatal("upstream saw no end of connection")
				}
				e.close()
				if tt.reason == "" {
					if !bytes.Equal(upstream, tt.first) {
						t.Fatalf("upstream got %d bytes, want the %d sent", len(upstream), len(tt.first))
					}
					if r := e.refusals(); len(r) != 0 {
						t.Fatalf("refusals %v", r)
					}
					return
				}
				if len(upstream) != 0 {
					t.Fatalf("upstream got %d bytes of a refused tunnel", len(upstream))
				}
				if r := e.refusals(); len(r) != 1 || r[0] != tt.reason {
					t.Fatalf("refusals %v, want [%s]", r, tt.reason)
				}
			})
		}
	}
}

// A ClientHello begun and not finished is refused after HandshakeTimeout.
func TestTunnelClientHelloTimeout(t *testing.T) {
	e := newEnv(t, []string{"allowed.example"}, nil, func(s *Server) { s.HandshakeTimeout = 200 * time.Millisecond })
	e.host("allowed.example", "198.18.0.1")
	e.upstream("198.18.0.1", 443, echo)
	c, refused := openTunnel(t, e, "connect", "allowed.example", 443)
	if c == nil {
		t.Fatal(refused)
	}
	defer c.Close()
	hello := clientHello(t, "allowed.example")
	c.Write(hello[:20])
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("tunnel not closed: %v", err)
	}
	e.close()
	if r := e.refusals(); len(r) != 1 || r[0] != ReasonBadTLS {
		t.Fatalf("refusals %v", r)
	}
}

// Server-first protocols work: the upstream speaks before the client sends a byte.
func TestTunnelServerFirst(t *testing.T) {
	for _, proto := range []string{"connect", "socks5"} {
		t.Run(proto, func(t *testing.T) {
			e := newEnv(t, []string{"git.example"}, nil)
			e.host("git.example", "198.18.0.5")
			e.upstream("198.18.0.5", 22, func(c net.Conn) {
				io.WriteString(c, "SSH-2.0-server\r\n")
				echo(c)
			})
			c, refused := openTunnel(t, e, proto, "git.example", 22)
			if c == nil {
				t.Fatal(refused)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			banner := make([]byte, 16)
			if _, err := io.ReadFull(c, banner); err != nil || string(banner) != "SSH-2.0-server\r\n" {
				t.Fatalf("banner %q, %v", banner, err)
			}
			if got := roundTrip(t, c, []byte("SSH-2.0-client\r\n")); string(got) != "SSH-2.0-client\r\n" {
				t.Fatalf("echo %q", got)
			}
		})
	}
}

// Half-close, as git over a tunnel needs: the client sends everything and
// closes its write side; the upstream answers after EOF.
func TestTunnelHalfClose(t *testing.T) {
	for _, proto := range []string{"connect", "socks5"} {
		t.Run(proto, func(t *testing.T) {
			e := newEnv(t, []string{"git.example"}, nil)
			e.host("git.example", "198.18.0.5")
			e.upstream("198.18.0.5", 443, func(c net.Conn) {
				n, _ := io.Copy(io.Discard, c) // until the client's half-close
				fmt.Fprintf(c, "got %d bytes", n)
			})
			c, refused := openTunnel(t, e, proto, "git.example", 443)
			if c == nil {
				t.Fatal(refused)
			}
			defer c.Close()
			msg := make([]byte, 4<<20)
			rand.Read(msg)
			msg[0] = 'P' // not a TLS record
			if got := roundTrip(t, c, msg); string(got) != fmt.Sprintf("got %d bytes", len(msg)) {
				t.Fatalf("upstream answered %q", got)
			}
		})
	}
}

// Tunnels carry a real TLS session end to end.
func TestTunnelRealTLS(t *testing.T) {
	e := newEnv(t, []string{"tls.example"}, nil)
	e.host("tls.example", "198.18.0.6")
	cert := selfSigned(t, "tls.example")
	e.upstream("198.18.0.6", 443, func(c net.Conn) {
		s := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}})
		echo2(s)
	})
	for _, proto := range []string{"connect", "socks5"} {
		c, refused := openTunnel(t, e, proto, "tls.example", 443)
		if c == nil {
			t.Fatal(refused)
		}
		tc := tls.Client(c, &tls.Config{ServerName: "tls.example", InsecureSkipVerify: true})
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := tc.Write([]byte("ping")); err != nil {
			t.Fatalf("%s: %v", proto, err)
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(tc, buf); err != nil || string(buf) != "ping" {
			t.Fatalf("%s: %q %v", proto, buf, err)
		}
		tc.Close()
	}
}

// Bytes a client sends right behind its CONNECT or SOCKS5 request, before the
// proxy answers, are checked like any first bytes.
func TestTunnelPipelined(t *testing.T) {
	hello := map[string][]byte{"allowed": clientHello(t, "allowed.example"), "evil": clientHello(t, "evil.example")}
	for _, proto := range []string{"connect", "socks5"} {
		for _, sni := range []string{"allowed", "evil"} {
			t.Run(proto+"/"+sni, func(t *testing.T) {
				e := newEnv(t, []string{"allowed.example"}, nil)
				e.host("allowed.example", "198.18.0.1")
				got := make(chan []byte, 1)
				e.upstream("198.18.0.1", 443, func(c net.Conn) {
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					b, _ := io.ReadAll(c)
					got <- b
				})
				c, err := net.Dial("tcp", e.proxyAddr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				var msg []byte
				if proto == "connect" {
					msg = []byte("CONNECT allowed.example:443 HTTP/1.1\r\nHost: allowed.example:443\r\n\r\n")
				} else {
					msg = append([]byte{socksVersion, 1, socksNoAuth}, socksRequest(socksCmdConnect, socksAtypDomain, "allowed.example", 443)...)
				}
				c.Write(append(msg, hello[sni]...))
				c.(*net.TCPConn).CloseWrite()
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				io.ReadAll(c)
				upstream := <-got
				e.close()
				if sni == "allowed" {
					if !bytes.Equal(upstream, hello[sni]) {
						t.Fatalf("upstream got %d bytes, want the %d-byte ClientHello", len(upstream), len(hello[sni]))
					}
					return
				}
				if len(upstream) != 0 || fmt.Sprint(e.refusals()) != "["+ReasonSNIMismatch+"]" {
					t.Fatalf("upstream got %d bytes, refusals %v", len(upstream), e.refusals())
				}
			})
		}
	}
}
