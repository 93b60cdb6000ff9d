package sandbox

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/moat-sandbox/moat/internal/spec"
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

// TestBaitSockets checks which hidden host sockets get a cover of their own (the
// ones the environment names and the well-known ones) and that the plan puts it
// inside the private /tmp, where the host's socket is absent already.
func TestBaitSockets(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "moat-bait-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	listen := func(name string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return p
	}
	agent, bus, allowed := listen("agent.sock"), listen("bus"), listen("docker.sock")
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, nil, 0o600)
	env := []string{"SSH_AUTH_SOCK=" + agent, "XDG_RUNTIME_DIR=" + dir, "DOCKER_HOST=unix://" + plain}
	pol := &policy.Policy{Network: policy.Network{AllowUnixSockets: []string{allowed}}}

	got := map[string]string{}
	for _, b := range baitSockets(pol, env) {
		got[b.path] = b.reason
	}
	if got[agent] == "" || got[bus] == "" {
		t.Errorf("baits %q: want $SSH_AUTH_SOCK's %s and the session bus %s", got, agent, bus)
	}
	if _, ok := got[plain]; ok {
		t.Errorf("bait for %s, which is no socket", plain)
	}
	if _, ok := got[allowed]; ok {
		t.Errorf("bait for %s, which allowUnixSockets lists ($XDG_RUNTIME_DIR/docker.sock)", allowed)
	}
	if b := baitSockets(&policy.Policy{Network: policy.Network{AllowAllUnixSockets: true}}, env); b != nil {
		t.Errorf("allowAllUnixSockets: baits %v, want none", b)
	}

	p, err := newPlan(pol, planOptions{extraDeny: hostSockets(pol, env), bait: baitSockets(pol, env)})
	if err != nil {
		t.Fatal(err)
	}
	covers := map[string]spec.Mount{}
	for _, m := range p.mounts {
		covers[m.Path] = m
	}
	for _, path := range []string{agent, bus} {
		m, ok := covers[path]
		if !ok || m.Op != spec.OpMaskFile || !m.Socket || m.Optional {
			t.Errorf("cover of %s: %+v (present %v), want a mask-file step marked as a socket, not optional", path, m, ok)
		}
	}
	if m := covers[allowed]; m.Op != spec.OpBindRO {
		t.Errorf("allowed socket: %+v, want it bound into the sandbox", m)
	}
}
