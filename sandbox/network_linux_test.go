package sandbox

import (
	"net/netip"
	"testing"
)

// TestIsLocalAddr asks the real kernel: loopback and the host's interface
// addresses are its own, a documentation address is not.
func TestIsLocalAddr(t *testing.T) {
	if nonlocalBind() {
		t.Log("ip_nonlocal_bind is set here: isLocalAddr lists the interfaces instead of binding")
	}
	want := map[netip.Addr]bool{
		netip.MustParseAddr("127.0.0.1"):   true,
		netip.MustParseAddr("127.0.0.2"):   !nonlocalBind(), // all of 127/8 is local to the kernel, not to the interface list
		netip.MustParseAddr("192.0.2.123"): false,           // TEST-NET-1
	}
	for _, a := range hostAddrs() {
		if !a.IsLinkLocalUnicast() { // those bind only with a zone
			want[a] = true
		}
	}
	for a, local := range want {
		if got := isLocalAddr(a); got != local {
			t.Errorf("isLocalAddr(%s) = %v, want %v", a, got, local)
		}
	}
}
