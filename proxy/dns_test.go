package proxy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// query builds a DNS query message.
func query(id uint16, qs ...dnsmessage.Question) []byte {
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	b.StartQuestions()
	for _, q := range qs {
		if err := b.Question(q); err != nil {
			panic(err)
		}
	}
	out, err := b.Finish()
	if err != nil {
		panic(err)
	}
	return out
}

func q(name string, typ dnsmessage.Type) dnsmessage.Question {
	return dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}
}

// answers parses a response into its rcode and answered addresses.
func answers(t testing.TB, resp []byte) (dnsmessage.RCode, []string) {
	t.Helper()
	var p dnsmessage.Parser
	h, err := p.Start(resp)
	if err != nil {
		t.Fatalf("response does not parse: %v", err)
	}
	if !h.Response {
		t.Fatalf("response without the response bit")
	}
	p.SkipAllQuestions()
	var addrs []string
	for {
		rh, err := p.AnswerHeader()
		if err != nil {
			break
		}
		if rh.TTL > 60 {
			t.Errorf("TTL %d", rh.TTL)
		}
		switch rh.Type {
		case dnsmessage.TypeA:
			r, _ := p.AResource()
			addrs = append(addrs, netip.AddrFrom4(r.A).String())
		case dnsmessage.TypeAAAA:
			r, _ := p.AAAAResource()
			addrs = append(addrs, netip.AddrFrom16(r.AAAA).String())
		default:
			p.SkipAnswer()
		}
	}
	return h.RCode, addrs
}

func TestDNS(t *testing.T) {
	chaos := q("version.bind.", dnsmessage.TypeTXT)
	chaos.Class = dnsmessage.ClassCHAOS
	opcode := query(7, q("allowed.example.", dnsmessage.TypeA))
	opcode[2] |= 2 << 3 // STATUS
	response := query(7, q("allowed.example.", dnsmessage.TypeA))
	response[2] |= 0x80
	tests := []struct {
		name     string
		msg      []byte
		rcode    int // -1: no answer at all
		answers  string
		resolved string // names looked up, as fmt.Sprint
		reason   string // the one event's reason, "" for allow
	}{
		{"A of an allowed name", query(1, q("allowed.example.", dnsmessage.TypeA)), int(dnsmessage.RCodeSuccess), "[198.18.0.1 198.18.0.2]", "[allowed.example]", ""},
		{"AAAA of an allowed name", query(1, q("allowed.example.", dnsmessage.TypeAAAA)), int(dnsmessage.RCodeSuccess), "[2001:db8::1]", "[allowed.example]", ""},
		{"mixed case and port-specific rule", query(1, q("Port.EXAMPLE.", dnsmessage.TypeA)), int(dnsmessage.RCodeSuccess), "[198.18.0.3]", "[port.example]", ""},
		{"refused addresses dropped", query(1, q("rebind.allowed.example.", dnsmessage.TypeA)), int(dnsmessage.RCodeSuccess), "[198.18.0.4]", "[rebind.allowed.example]", ""},
		{"only refused addresses", query(1, q("local.allowed.example.", dnsmessage.TypeA)), int(dnsmessage.RCodeSuccess), "[]", "[local.allowed.example]", ""},
		{"explicitly denied address dropped", query(1, q("mixed.allowed.example.", dnsmessage.TypeA)), int(dnsmessage.RCodeSuccess), "[198.18.0.1]", "[mixed.allowed.example]", ""},
		{"allowed name that does not exist", query(1, q("nx.allowed.example.", dnsmessage.TypeA)), int(dnsmessage.RCodeNameError), "[]", "[nx.allowed.example]", ReasonResolveFailed},
		{"exfiltration by name", query(1, q("c2VjcmV0.secret.attacker.example.", dnsmessage.TypeA)), int(dnsmessage.RCodeRefused), "[]", "[]", ReasonNotAllowed},
		{"denied by rule", query(1, q("denied.allowed.example.", dnsmessage.TypeA)), int(dnsmessage.RCodeRefused), "[]", "[]", ReasonDenied},
		{"TXT of an allowed name", query(1, q("allowed.example.", dnsmessage.TypeTXT)), int(dnsmessage.RCodeNotImplemented), "[]", "[]", ReasonQType},
		{"TXT of a secret name", query(1, q("secret.attacker.example.", dnsmessage.TypeTXT)), int(dnsmessage.RCodeNotImplemented), "[]", "[]", ReasonQType},
		{"MX", query(1, q("allowed.example.", dnsmessage.TypeMX)), int(dnsmessage.RCodeNotImplemented), "[]", "[]", ReasonQType},
		{"ANY", query(1, q("allowed.example.", dnsmessage.TypeALL)), int(dnsmessage.RCodeNotImplemented), "[]", "[]", ReasonQType},
		{"HTTPS", query(1, q("allowed.example.", dnsmessage.Type(65))), int(dnsmessage.RCodeNotImplemented), "[]", "[]", ReasonQType},
		{"PTR", query(1, q("1.0.18.198.in-addr.arpa.", dnsmessage.TypePTR)), int(dnsmessage.RCodeNotImplemented), "[]", "[]", ReasonQType},
		{"CHAOS class", query(1, chaos), int(dnsmessage.RCodeNotImplemented), "[]", "[]", ReasonQType},
		{"two questions", query(1, q("allowed.example.", dnsmessage.TypeA), q("secret.attacker.example.", dnsmessage.TypeA)), int(dnsmessage.RCodeFormatError), "[]", "[]", ReasonBadRequest},
		{"no question", query(1), int(dnsmessage.RCodeFormatError), "[]", "[]", ReasonBadRequest},
		{"opcode STATUS", opcode, int(dnsmessage.RCodeNotImplemented), "[]", "[]", ReasonBadRequest},
		{"truncated question", query(1, q("allowed.example.", dnsmessage.TypeA))[:20], int(dnsmessage.RCodeFormatError), "[]", "[]", ReasonBadRequest},
		{"a response", response, -1, "[]", "[]", ReasonBadRequest},
		{"short header", []byte{1, 2, 3}, -1, "[]", "[]", ReasonBadRequest},
		{"address as a name", query(1, q("127.0.0.1.", dnsmessage.TypeA)), int(dnsmessage.RCodeRefused), "[]", "[]", ReasonBadHost},
		{"odd address as a name", query(1, q("0x7f.1.", dnsmessage.TypeA)), int(dnsmessage.RCodeRefused), "[]", "[]", ReasonBadHost},
		{"root", query(1, q(".", dnsmessage.TypeA)), int(dnsmessage.RCodeRefused), "[]", "[]", ReasonBadHost},
		{"space in a label", query(1, q("a b.allowed.example.", dnsmessage.TypeA)), int(dnsmessage.RCodeRefused), "[]", "[]", ReasonBadHost},
		{"NUL in a label", query(1, q("allowed.example\x00.evil.", dnsmessage.TypeA)), int(dnsmessage.RCodeRefused), "[]", "[]", ReasonBadHost},
		{"non-ASCII label", query(1, q("bücher.allowed.example.", dnsmessage.TypeA)), int(dnsmessage.RCodeRefused), "[]", "[]", ReasonBadHost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, []string{"allowed.example", "*.allowed.example", "port.example:443"},
				[]string{"denied.allowed.example", "198.18.0.9"})
			e.host("allowed.example", "198.18.0.1", "127.0.0.1", "198.18.0.2", "2001:db8::1", "::1")
			e.host("port.example", "198.18.0.3")
			e.host("rebind.allowed.example", "169.254.169.254", "198.18.0.4", "0.0.0.0")
			e.host("local.allowed.example", "127.0.0.1")
			e.host("mixed.allowed.example", "198.18.0.9", "198.18.0.1")
			e.host("secret.attacker.example", "198.18.0.66")
			resp := e.srv.answerDNS(context.Background(), tt.msg)
			e.close()
			if tt.rcode < 0 {
				if resp != nil {
					t.Fatalf("answered %x, want no answer", resp)
				}
			} else {
				if resp == nil {
					t.Fatalf("no answer")
				}
				rcode, addrs := answers(t, resp)
				if int(rcode) != tt.rcode || fmt.Sprint(addrs) != tt.answers {
					t.Fatalf("answer %v %v, want %v %s", rcode, addrs, tt.rcode, tt.answers)
				}
				if id := uint16(resp[0])<<8 | uint16(resp[1]); id != uint16(tt.msg[0])<<8|uint16(tt.msg[1]) {
					t.Fatalf("answer ID %d", id)
				}
			}
			if got := fmt.Sprint(e.Resolved()); got != tt.resolved {
				t.Fatalf("looked up %s, want %s", got, tt.resolved)
			}
			ev := e.Events()
			if len(ev) != 1 || ev[0].Proto != "dns" || ev[0].Reason != tt.reason || (tt.reason == "") != (ev[0].Action == actionAllow) {
				t.Fatalf("events %+v, want one with reason %q", ev, tt.reason)
			}
		})
	}
}

// The stub works for Go's own resolver over UDP and TCP, and a refused name
// causes no lookup at all.
func TestDNSOverSockets(t *testing.T) {
	e := newEnv(t, []string{"allowed.example"}, nil)
	e.host("allowed.example", "198.18.0.1")
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				if network == "tcp" {
					return d.DialContext(ctx, network, e.dnsTCP)
				}
				return d.DialContext(ctx, network, e.dnsAddr)
			}}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			addrs, err := r.LookupNetIP(ctx, "ip4", "allowed.example")
			if err != nil || fmt.Sprint(addrs) != "[198.18.0.1]" {
				t.Fatalf("allowed.example: %v %v", addrs, err)
			}
			if addrs, err := r.LookupNetIP(ctx, "ip4", "secret.attacker.example"); err == nil {
				t.Fatalf("secret.attacker.example resolved to %v", addrs)
			}
		})
	}
	e.close()
	for _, n := range e.Resolved() {
		if strings.Contains(n, "attacker") {
			t.Fatalf("looked up %s", n)
		}
	}
}

// An address the stub handed out maps back to its name: a client that resolved
// first and then asks for the address is checked as the name.
func TestHandedOutAddress(t *testing.T) {
	tests := []struct {
		name    string
		addr    string
		port    int
		hello   string // SNI sent after the tunnel opens, "" for none
		refused string // reply or reason, "" for a tunnel
		host    string // the allow event's host
	}{
		{"handed out, allowed port", "198.18.0.1", 443, "", "", "allowed.example"},
		{"handed out, SNI of the name", "198.18.0.1", 443, "allowed.example", "", "allowed.example"},
		{"handed out, SNI of a host the policy refuses", "198.18.0.1", 443, "evil.example", ReasonSNIMismatch, "allowed.example"},
		{"handed out, port not allowed for the name", "198.18.0.1", 8080, "", "not-allowed", ""},
		{"handed out, literal denied on this port", "198.18.0.1", 22, "", "denied-by-rule", ""},
		{"never handed out", "198.18.0.2", 443, "", "not-allowed", ""},
		{"handed out for a refused name only", "198.18.0.3", 443, "", "not-allowed", ""},
	}
	for _, proto := range []string{"connect", "socks5"} {
		for _, tt := range tests {
			t.Run(proto+"/"+tt.name, func(t *testing.T) {
				e := newEnv(t, []string{"allowed.example:443", "allowed.example:22"}, []string{"198.18.0.1:22"})
				e.host("allowed.example", "198.18.0.1")
				e.host("other.example", "198.18.0.3")
				for _, port := range []int{443, 8080, 22} {
					for _, a := range []string{"198.18.0.1", "198.18.0.2", "198.18.0.3"} {
						e.upstream(a, port, echo)
					}
				}
				rcode, got := answers(t, e.srv.answerDNS(context.Background(), query(1, q("allowed.example.", dnsmessage.TypeA))))
				if rcode != dnsmessage.RCodeSuccess || fmt.Sprint(got) != "[198.18.0.1]" {
					t.Fatalf("stub answered %v %v", rcode, got)
				}
				e.srv.answerDNS(context.Background(), query(2, q("other.example.", dnsmessage.TypeA))) // refused: not handed out
				c, refused := openTunnel(t, e, proto, tt.addr, tt.port)
				if c != nil && tt.hello != "" {
					c.SetDeadline(time.Now().Add(5 * time.Second))
					c.Write(helloWithSNI(t, tt.hello))
					c.(interface{ CloseWrite() error }).CloseWrite()
					buf := make([]byte, 1)
					c.Read(buf)
				}
				if c != nil {
					c.Close()
				}
				e.close()
				var allow []Event
				var reasons []string
				for _, ev := range e.Events() {
					if ev.Proto == "dns" {
						continue
					}
					if ev.Action == actionAllow {
						allow = append(allow, ev)
					} else {
						reasons = append(reasons, ev.Reason)
					}
				}
				if tt.refused == "" || tt.refused == ReasonSNIMismatch {
					if c == nil {
						t.Fatalf("refused: %s", refused)
					}
					if len(allow) != 1 || allow[0].Host != tt.host || allow[0].Addr != fmt.Sprintf("%s:%d", tt.addr, tt.port) {
						t.Fatalf("allow events %+v, want host %s", allow, tt.host)
					}
					if fmt.Sprint(reasons) != fmt.Sprint(strings.Fields(tt.refused)) {
						t.Fatalf("refusals %v, want %q", reasons, tt.refused)
					}
					return
				}
				if c != nil || len(allow) != 0 || fmt.Sprint(reasons) != "["+tt.refused+"]" {
					t.Fatalf("tunnel %v, allows %+v, refusals %v; want refusal %s", c != nil, allow, reasons, tt.refused)
				}
				if d := e.Dialed(); len(d) != 0 {
					t.Fatalf("dialed %v", d)
				}
			})
		}
	}
}
