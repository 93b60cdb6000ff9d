package escape_test

import (
	"github.com/moat-sandbox/moat/internal/testmoat"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// seccompVerdicts are kernel_probe.py's results inside the sandbox: the errno of each
// system call moat's seccomp filter removes.
var seccompVerdicts = map[string]string{
	"unshare_user": "EPERM", "unshare_mount": "EPERM", "unshare_net": "EPERM",
	"mount_tmpfs": "EPERM", "io_uring_setup": "ENOSYS", "clone3": "ENOSYS",
	"bpf": "EPERM", "userfaultfd": "EPERM", "keyctl": "EPERM", "perf_event_open": "EPERM",
	"personality_no_aslr": "EPERM", "open_tree": "EPERM", "fsopen": "EPERM",
	"open_by_handle_at": "EPERM", "ptrace_traceme": "EPERM", "setns_net": "EPERM",
	"socket_af_packet": "EPERM", "socket_af_vsock": "EPERM", "socket_mptcp": "EPERM",
	"socket_mptcp_cloexec": "EPERM", "socket_mptcp6": "EPERM", "socket_raw_icmp": "EPERM",
	"socket_inet_packet": "EPERM",
}

// testKernelSurface: the kernel interfaces the seccomp filter removes answer with the
// exact errno, from real system calls made inside. There is no host artifact for
// these, so the verdict is the errno, compared exactly; a control run outside shows
// the probe itself works.
func testKernelSurface(t *testing.T) {
	b := newBox(t)
	probe := b.tool("kernel_probe.py")

	// Control: outside, the harmless probes get the kernel's own answers.
	ctl := testmoat.KeyValues(b.host(b.ws, nil, "python3", probe, "--control").stdout)
	for _, k := range []string{"io_uring_setup", "clone3"} {
		if ctl[k] == "" || ctl[k] == "ENOSYS" {
			t.Errorf("control: %s outside the sandbox gave %q; the probe or this kernel can't show the filter's ENOSYS", k, ctl[k])
		}
	}
	t.Logf("outside: %v", ctl)

	r := b.run(opts{script: "python3 " + shq(probe) + " > probe"})
	got := testmoat.KeyValues(testmoat.ReadFile(t, filepath.Join(b.ws, "probe")))
	if len(got) == 0 {
		t.Fatalf("control: the probe printed nothing inside:\n%s", r)
	}
	for k, w := range seccompVerdicts {
		if got[k] != w {
			t.Errorf("%s inside the sandbox: %q, want %s", k, got[k], w)
		}
	}

	// The unshare command, as an agent would try it.
	for _, args := range [][]string{{"unshare", "-U", "true"}, {"unshare", "-r", "true"}, {"unshare", "-Urm", "true"}} {
		if c := b.host(b.ws, nil, args[0], args[1:]...); c.code != 0 && args[1] == "-U" {
			t.Errorf("control: %q fails outside the sandbox too:\n%s", args, c)
		}
		if r := b.run(opts{argv: args}); r.code == 0 || !strings.Contains(r.stderr, "Operation not permitted") {
			t.Errorf("%q inside the sandbox: want a failure with EPERM:\n%s", args, r)
		}
	}

	// An i386 system call (int 0x80) from a 64-bit program: the filter must not let
	// another architecture's numbers through. The command's status is moat's own.
	if runtime.GOARCH != "amd64" {
		return
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Log("no cc on this host: the int 0x80 check is skipped")
		return
	}
	bin := filepath.Join(b.root, "int80")
	src := b.tool("int80.c")
	if c := b.host(b.root, nil, cc, "-o", bin, src); c.code != 0 {
		t.Logf("cc can't build the int 0x80 probe here, skipped:\n%s", c)
		return
	}
	if c := b.host(b.root, nil, bin); c.code != 0 || !strings.HasPrefix(c.stdout, "int80 getpid ") || strings.HasPrefix(c.stdout, "int80 getpid -") {
		t.Logf("control: i386 system calls don't work outside the sandbox either (%s); skipped", strings.TrimSpace(c.String()))
		return
	}
	if r := b.run(opts{argv: []string{bin}}); r.code != 128+31 {
		t.Errorf("an i386 system call inside the sandbox: exit %d, want %d (killed by SIGSYS):\n%s", r.code, 128+31, r)
	}
	_ = os.Remove(bin)
}
