package connbroker

import (
	"net"
	"net/netip"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDiagListeners checks the sock_diag parsers find fresh listeners every time, with
// their cookies (a dump spanning several reads once lost entries to buffer reuse).
func TestDiagListeners(t *testing.T) {
	dir := t.TempDir()
	for i := range 200 {
		// A plain TCP socket: Go's net.Listen may make an MPTCP one, whose TCP subflow
		// listener (what sock_diag lists) has a cookie of its own.
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		if err := unix.Listen(fd, 1); err != nil {
			t.Fatal(err)
		}
		sa, _ := unix.Getsockname(fd)
		ap := netip.AddrPortFrom(netip.AddrFrom4(sa.(*unix.SockaddrInet4).Addr), uint16(sa.(*unix.SockaddrInet4).Port))
		cookie, _ := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
		ls, err := tcpListeners(unix.AF_INET)
		if err != nil {
			t.Fatal(err)
		}
		if !hasListener(ls, func(l listener) bool { return l.addr == ap && l.cookie == cookie }) {
			t.Fatalf("round %d: %v (cookie %d) missing from %v", i, ap, cookie, ls)
		}
		unix.Close(fd)
	}
	path := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	ls, err := unixListeners()
	if err != nil {
		t.Fatal(err)
	}
	if !hasListener(ls, func(l listener) bool { return l.dev == uint64(st.Dev) && l.ino32 == uint32(st.Ino) }) {
		t.Errorf("unix listener %s (dev %d ino %d) missing from %v", path, st.Dev, st.Ino, ls)
	}
}

func hasListener(ls []listener, match func(listener) bool) bool {
	for _, l := range ls {
		if match(l) {
			return true
		}
	}
	return false
}
