package sandbox

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/moat-sandbox/moat/policy"
)

func TestUnixTablePath(t *testing.T) {
	for _, tc := range []struct{ name, line, want string }{
		{"unbound", "000000001db2c3ec: 00000003 00000000 00000000 0001 03  1178", ""},
		{"pathname", "0000000000000000: 00000002 00000000 00010000 0001 01 23 /run/user/1000/bus", "/run/user/1000/bus"},
		{"abstract", "0000000000000000: 00000002 00000000 00010000 0001 01 23 @/tmp/.X11-unix/X0", "@/tmp/.X11-unix/X0"},
		{"space in path", "0000000000000000: 00000002 00000000 00010000 0001 01 23 /home/u/My Socks/s", "/home/u/My Socks/s"},
		{"short line", "garbage", ""},
	} {
		if got := unixTablePath(tc.line); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestHostSockets(t *testing.T) {
	dir := t.TempDir()
	listen := func(name string) string {
		p := filepath.Join(dir, name)
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return p
	}
	a, b := listen("a.sock"), listen("b.sock")
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, nil, 0o600)

	got := hostSockets(&policy.Policy{}, nil)
	if !slices.Contains(got, a) || !slices.Contains(got, b) {
		t.Errorf("bound sockets %s and %s not covered: %q", a, b, got)
	}
	got = hostSockets(&policy.Policy{Network: policy.Network{AllowUnixSockets: []string{a}}}, []string{"SSH_AUTH_SOCK=" + plain})
	if slices.Contains(got, a) || !slices.Contains(got, b) {
		t.Errorf("allowUnixSockets %s: got %q, want only the other one covered", a, got)
	}
	if !slices.Contains(got, plain) {
		t.Errorf("SSH_AUTH_SOCK path not covered: %q", got)
	}
	if got := hostSockets(&policy.Policy{Network: policy.Network{AllowAllUnixSockets: true}}, []string{"SSH_AUTH_SOCK=" + plain}); got != nil {
		t.Errorf("allowAllUnixSockets: got %q, want nothing covered", got)
	}
}
