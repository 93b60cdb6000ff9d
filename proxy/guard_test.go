package proxy

import (
	"fmt"
	"net/netip"
	"testing"
)

func TestRefused(t *testing.T) {
	calls := 0
	s := &Server{HostAddrs: func() []netip.Addr {
		calls++
		return []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10")}
	}}
	tests := []struct {
		name, addr, reason string
	}{
		{"loopback", "127.0.0.1", ReasonLoopback},
		{"loopback elsewhere in 127/8", "127.53.0.1", ReasonLoopback},
		{"IPv6 loopback", "::1", ReasonLoopback},
		{"IPv4-mapped loopback", "::ffff:127.0.0.1", ReasonLoopback},
		{"NAT64 loopback", "64:ff9b::7f00:1", ReasonLoopback},
		{"NAT64 local-use metadata", "64:ff9b:1::a9fe:a9fe", ReasonMetadata},
		{"IPv4-compatible loopback", "::127.0.0.1", ReasonLoopback},
		{"unspecified", "0.0.0.0", ReasonUnspecified},
		{"this network", "0.1.2.3", ReasonUnspecified},
		{"IPv6 unspecified", "::", ReasonUnspecified},
		{"AWS/GCP/Azure metadata", "169.254.169.254", ReasonMetadata},
		{"mapped metadata", "::ffff:169.254.169.254", ReasonMetadata},
		{"NAT64 metadata", "64:ff9b::a9fe:a9fe", ReasonMetadata},
		{"AWS IPv6 metadata", "fd00:ec2::254", ReasonMetadata},
		{"Alibaba metadata", "100.100.100.200", ReasonMetadata},
		{"Azure WireServer", "168.63.129.16", ReasonMetadata},
		{"ECS credentials (link-local)", "169.254.170.2", ReasonLinkLocal},
		{"IPv6 link-local", "fe80::1", ReasonLinkLocal},
		{"multicast", "224.0.0.1", ReasonMulticast},
		{"IPv6 multicast", "ff02::1", ReasonMulticast},
		{"broadcast", "255.255.255.255", ReasonBroadcast},
		{"host address", "192.0.2.10", ReasonHostAddr},
		{"mapped host address", "::ffff:192.0.2.10", ReasonHostAddr},
		{"IPv6 host address", "2001:db8::10", ReasonHostAddr},
		{"NAT64 host address", "64:ff9b::c000:20a", ReasonHostAddr},

		{"RFC 1918 10/8", "10.1.2.3", ""},
		{"RFC 1918 172.16/12", "172.16.0.1", ""},
		{"RFC 1918 192.168/16", "192.168.1.1", ""},
		{"benchmarking 198.18/15", "198.18.0.1", ""},
		{"CGNAT 100.64/10 beside Alibaba", "100.100.100.201", ""},
		{"public IPv4", "93.184.215.14", ""},
		{"public IPv6", "2606:4700::1111", ""},
		{"ULA beside AWS metadata", "fd00:ec2::253", ""},
		{"NAT64 of a public address", "64:ff9b::5db8:d70e", ""},
		{"other host-range address", "192.0.2.11", ""},
		{"just past link-local", "169.255.0.1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, why := s.refused(netip.MustParseAddr(tt.addr))
			if reason != tt.reason {
				t.Fatalf("refused(%s) = %q (%s), want %q", tt.addr, reason, why, tt.reason)
			}
			if reason != "" && why == "" {
				t.Fatalf("refused(%s) gives no why", tt.addr)
			}
		})
	}
	if calls != 1 {
		t.Errorf("HostAddrs called %d times, want once", calls)
	}
	var never Server
	if reason, _ := never.refused(netip.MustParseAddr("192.0.2.10")); reason != "" {
		t.Errorf("nil HostAddrs refuses %q", reason)
	}
}

// A Server that never checks an address never lists the host's addresses.
func TestHostAddrsLazy(t *testing.T) {
	called := false
	e := newEnv(t, []string{"allowed.example"}, nil, func(s *Server) {
		s.HostAddrs = func() []netip.Addr { called = true; return nil }
	})
	rawHTTP(t, e.proxyAddr, "GET http://denied.example/ HTTP/1.1\r\n\r\n")
	e.close()
	if called {
		t.Fatal("HostAddrs called for a request refused before any address was checked")
	}
}

// Every table entry has a reason the reporting table knows and a why, and no
// entry is hidden behind an earlier, wider one.
func TestRefusedRangesTable(t *testing.T) {
	for i, r := range refusedRanges {
		t.Run(r.prefix.String(), func(t *testing.T) {
			if r.why == "" {
				t.Errorf("no why")
			}
			if ri := info(r.reason); ri.action != actionDeny {
				t.Errorf("reason %s is not a deny", r.reason)
			}
			for _, earlier := range refusedRanges[:i] {
				if earlier.prefix.Overlaps(r.prefix) && earlier.prefix.Bits() <= r.prefix.Bits() {
					t.Errorf("shadowed by %v", earlier.prefix)
				}
			}
		})
	}
}

func TestReasonsTable(t *testing.T) {
	for _, r := range []string{ReasonDenied, ReasonNotAllowed, ReasonLoopback, ReasonLinkLocal, ReasonMetadata,
		ReasonUnspecified, ReasonMulticast, ReasonBroadcast, ReasonHostAddr, ReasonSNIMismatch, ReasonBadTLS,
		ReasonHostHeader, ReasonBadRequest, ReasonBadHost, ReasonAuth, ReasonCommand, ReasonAddrType, ReasonQType,
		ReasonResolveFailed, ReasonDialFailed, ReasonUpstreamFailed} {
		ri := info(r) // panics on a missing entry
		if ri.action != actionDeny && ri.action != actionError {
			t.Errorf("%s: action %q", r, ri.action)
		}
	}
}

func TestHandouts(t *testing.T) {
	var h handouts
	a := netip.MustParseAddr("198.18.0.1")
	h.add("one.example", []netip.Addr{a})
	h.add("two.example", []netip.Addr{netip.MustParseAddr("::ffff:198.18.0.1")})
	if got := h.names(a); fmt.Sprint(got) != "[two.example one.example]" {
		t.Fatalf("names = %v, want most recent first, mapped form merged", got)
	}
	h.add("one.example", []netip.Addr{a})
	if got := h.names(a); fmt.Sprint(got) != "[one.example two.example]" {
		t.Fatalf("names after a repeat = %v", got)
	}
	for i := range maxNamesPerAddr + 5 {
		h.add(fmt.Sprintf("n%d.example", i), []netip.Addr{a})
	}
	if got := h.names(a); len(got) != maxNamesPerAddr {
		t.Fatalf("%d names kept, want %d", len(got), maxNamesPerAddr)
	}
	if h.names(netip.MustParseAddr("198.18.0.2")) != nil {
		t.Fatalf("names for an address never handed out")
	}
	for i := range maxHandedAddrs + 10 {
		h.add("bulk.example", []netip.Addr{netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})})
	}
	if h.lru.Len() != maxHandedAddrs || len(h.byAddr) != maxHandedAddrs {
		t.Fatalf("table holds %d/%d addresses, want %d", h.lru.Len(), len(h.byAddr), maxHandedAddrs)
	}
	if h.names(a) != nil {
		t.Fatalf("the least recently handed out address was kept")
	}
	if h.names(netip.AddrFrom4([4]byte{10, 0, 0, 20})) == nil {
		t.Fatalf("a recent address was dropped")
	}
}
