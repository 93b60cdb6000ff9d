//go:build linux

package sandbox

import (
	"net"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCheckStdio sorts real sockets: those the command could point elsewhere are
// refused, a connected unix stream pair and non-sockets pass. What the command does
// with a refused one is TestEscape/socket_stdio's attack.
func TestCheckStdio(t *testing.T) {
	fdFile := func(fd int, err error) *os.File {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		f := os.NewFile(uintptr(fd), "socket")
		t.Cleanup(func() { f.Close() })
		return f
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pair[1])
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tcp, err := conn.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	for _, c := range []struct {
		name string
		f    *os.File
		want string // "" passes
	}{
		{"unix_stream_pair", fdFile(pair[0], nil), ""},
		{"dev_null", func() *os.File { f, _ := os.Open(os.DevNull); return f }(), ""},
		{"tcp_connected", tcp, "network socket"},
		{"udp", fdFile(unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)), "network socket"},
		{"unix_datagram", fdFile(unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)), "unconnected unix socket"},
		{"unix_stream_unconnected", fdFile(unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)), "unconnected unix socket"},
	} {
		err := checkStdio(nil, c.f, nil)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want a refusal naming %q", c.name, err, c.want)
		}
	}
}
