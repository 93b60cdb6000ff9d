//go:build linux

package sandbox

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/moat-sandbox/moat/internal/linux/connbroker"
	"github.com/moat-sandbox/moat/internal/spec"
)

func TestNamespacesRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"max_user_namespaces=0", fmt.Errorf("create namespaces: %w", &os.PathError{Op: "fork/exec", Path: "/proc/self/exe", Err: syscall.ENOSPC}), true},
		{"AppArmor or seccomp", fmt.Errorf("create namespaces: %w", &os.PathError{Op: "fork/exec", Path: "/proc/self/exe", Err: syscall.EPERM}), true},
		{"uid map write refused", fmt.Errorf("create namespaces: %w", syscall.EPERM), true},
		{"no CONFIG_USER_NS", syscall.EINVAL, true},
		// Not the namespaces: the sandbox would fail the same way without them.
		{"binary gone", &os.PathError{Op: "fork/exec", Path: "/proc/self/exe", Err: syscall.ENOENT}, false},
		{"out of memory", syscall.ENOMEM, false},
		{"not an errno", fmt.Errorf("send sandbox spec: broken"), false},
	} {
		if _, got := namespacesRefused(c.err); got != c.want {
			t.Errorf("%s: namespacesRefused(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

func TestDirectNote(t *testing.T) {
	for _, c := range []struct {
		abi           int
		want, notWant []string
	}{
		{7, []string{"listable", "command lines"}, []string{"signals", "truncate"}},
		{6, nil, []string{"signals", "truncate"}},
		{4, []string{"signals to your other processes (Landlock ABI 4 < 6, allowed by moat.allowUnscopedSignals)"}, []string{"truncate"}},
		{2, []string{"truncate(2)", "signals"}, nil},
	} {
		note := directNote("user namespaces are unavailable (creating one failed: no space left on device)", c.abi)
		if strings.Contains(note, "\n") || !strings.HasPrefix(note, "moat: note: user namespaces are unavailable (creating one failed: no space left on device); running in direct mode: ") ||
			!strings.HasSuffix(note, `see README "Hosts without user namespaces"`) {
			t.Errorf("ABI %d: not one line of the expected shape: %q", c.abi, note)
		}
		for _, w := range c.want {
			if !strings.Contains(note, w) {
				t.Errorf("ABI %d: note lacks %q: %s", c.abi, w, note)
			}
		}
		for _, w := range c.notWant {
			if strings.Contains(note, w) {
				t.Errorf("ABI %d: note has %q: %s", c.abi, w, note)
			}
		}
	}
}

func TestDirectMounts(t *testing.T) {
	in := []spec.Mount{
		{Op: spec.OpTmpfs, Path: "/tmp"},
		{Op: spec.OpBindRW, Path: "/w", Source: "/w"},
		{Op: spec.OpMaskFile, Path: "/home/u/.ssh/agent.sock", Optional: true, Reason: "host socket"},
		{Op: spec.OpMaskDir, Path: "/home/u/.ssh"},
		{Op: spec.OpFile, Path: "/etc/resolv.conf", Content: "nameserver 127.0.0.1\n"},
		{Op: spec.OpPlaceholder, Path: "/w/.vscode"},
	}
	var got []string
	for _, m := range directMounts(in) {
		got = append(got, string(m.Op)+" "+m.Path)
	}
	want := "tmpfs /tmp|bind-rw /w|mask-dir /home/u/.ssh|placeholder /w/.vscode"
	if strings.Join(got, "|") != want {
		t.Errorf("directMounts = %q, want %q", strings.Join(got, "|"), want)
	}
}

func TestVisibleIn(t *testing.T) {
	ms := []spec.Mount{
		{Op: spec.OpTmpfs, Path: "/run"},
		{Op: spec.OpBindRO, Path: "/run/user/1000/ok", Source: "/run/user/1000/ok"},
		{Op: spec.OpMaskDir, Path: "/home/u/.ssh"},
		{Op: spec.OpBindRW, Path: "/home/u/w", Source: "/home/u/w"},
	}
	for path, want := range map[string]bool{
		"/run/docker.sock":          false,
		"/run/user/1000/ok/s.sock":  true,
		"/run/user/1000/bus":        false,
		"/home/u/.ssh/cm.sock":      false,
		"/home/u/.sshx/s.sock":      true, // not beneath .ssh
		"/home/u/w/dev.sock":        true,
		"/var/lib/thing/thing.sock": true,
	} {
		if got := visibleIn(ms, path); got != want {
			t.Errorf("visibleIn(%s) = %v, want %v", path, got, want)
		}
	}
}

func TestBrokerEvent(t *testing.T) {
	proxy := netip.MustParseAddrPort("127.0.0.1:40000")
	for _, c := range []struct {
		name string
		in   connbroker.Event
		keep bool
		want Event // Time and Detail aren't compared
	}{
		{"connect to the proxy", connbroker.Event{Call: "connect", Addr: "127.0.0.1:40000", Allowed: true, Errno: syscall.EINPROGRESS, Reason: "the proxy"}, false, Event{}},
		{"refused connect", connbroker.Event{Call: "connect", Addr: "198.18.0.1:80", Errno: syscall.EACCES, Reason: "not the proxy"}, true,
			Event{Kind: "net", Action: "deny", Proto: "socket", Host: "198.18.0.1", Port: 80, Addr: "198.18.0.1:80", Reason: reasonRefused, Rule: "not the proxy", Hint: hintNotProxied}},
		{"refused unix socket", connbroker.Event{Call: "connect", Addr: "/run/docker.sock", Errno: syscall.EACCES, Reason: "a host socket, not in the allowed list"}, true,
			Event{Kind: "net", Action: "deny", Proto: "socket", Host: "/run/docker.sock", Addr: "/run/docker.sock", Reason: reasonRefused, Rule: "a host socket, not in the allowed list", Hint: socketHint("/run/docker.sock")}},
		{"refused listen", connbroker.Event{Call: "listen", Addr: "127.0.0.1:8080", Errno: syscall.EACCES, Reason: "the policy doesn't allow local binding"}, true,
			Event{Kind: "net", Action: "deny", Proto: "listen", Host: "127.0.0.1", Port: 8080, Addr: "127.0.0.1:8080", Reason: reasonRefused, Rule: "the policy doesn't allow local binding", Hint: hintListen}},
		{"allowed unix socket", connbroker.Event{Call: "connect", Addr: "/home/u/s.sock", Allowed: true, Reason: "an allowed socket"}, true,
			Event{Kind: "net", Action: "allow", Proto: "socket", Host: "/home/u/s.sock", Addr: "/home/u/s.sock", Rule: "an allowed socket"}},
		{"allowed, failed", connbroker.Event{Call: "connect", Addr: "127.0.0.1:9", Allowed: true, Errno: syscall.ECONNREFUSED, Reason: "a listener of the sandbox's own"}, true,
			Event{Kind: "net", Action: "error", Proto: "socket", Host: "127.0.0.1", Port: 9, Addr: "127.0.0.1:9", Rule: "a listener of the sandbox's own"}},
	} {
		got, keep := brokerEvent(c.in, proxy)
		if keep != c.keep {
			t.Errorf("%s: kept %v, want %v", c.name, keep, c.keep)
			continue
		}
		if !keep {
			continue
		}
		if got.Time.IsZero() || got.Detail != c.in.String() {
			t.Errorf("%s: time %v, detail %q", c.name, got.Time, got.Detail)
		}
		got.Time, got.Detail = c.want.Time, ""
		if got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

func TestNameservers(t *testing.T) {
	dir := t.TempDir()
	conf := dir + "/resolv.conf"
	os.WriteFile(conf, []byte("# comment\nsearch example.org\nnameserver 10.0.0.53\nnameserver  fe80::1%eth0 \nnameserver ::ffff:192.0.2.1\nnameserver bogus\noptions ndots:2\n"), 0o644)
	var got []string
	for _, ap := range nameservers(conf) {
		got = append(got, ap.String())
	}
	if want := "10.0.0.53:53 [fe80::1]:53 192.0.2.1:53"; strings.Join(got, " ") != want {
		t.Errorf("nameservers = %q, want %q", got, want)
	}
	// None listed, or no file: glibc asks the local host.
	got = nil
	for _, ap := range nameservers(dir + "/missing") {
		got = append(got, ap.String())
	}
	if want := "127.0.0.1:53 [::1]:53"; strings.Join(got, " ") != want {
		t.Errorf("nameservers without a file = %q, want %q", got, want)
	}
}

func TestWithResolverOption(t *testing.T) {
	got := withResolverOption([]string{"A=1", "RES_OPTIONS=ndots:3 ", "B=2"}, "use-vc")
	if want := "A=1 B=2 RES_OPTIONS=ndots:3 use-vc"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", got, want)
	}
	got = withResolverOption([]string{"A=1"}, "use-vc")
	if want := "A=1 RES_OPTIONS=use-vc"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
