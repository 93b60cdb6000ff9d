package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// childEnv makes the test binary, re-executed, run Detect and print the Report as JSON.
// Its value names a /proc/sys/user limit to set to 0 first, or is empty.
const childEnv = "MOAT_PROBE_TEST_CHILD"

func TestMain(m *testing.M) {
	if limit, ok := os.LookupEnv(childEnv); ok {
		os.Exit(child(limit))
	}
	os.Exit(m.Run())
}

func child(limit string) int {
	if limit != "" {
		// The limits under /proc/sys/user belong to the user namespace this child
		// runs in: setting one here leaves the host's alone.
		if err := os.WriteFile("/proc/sys/user/"+limit, []byte("0\n"), 0); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			return 1
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(Detect()); err != nil {
		return 1
	}
	return 0
}

// detectIn runs Detect in a re-executed copy of the test binary at exe, started with sys.
func detectIn(t *testing.T, exe, limit string, sys *syscall.SysProcAttr) Report {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+limit)
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = sys
	if err := cmd.Run(); err != nil {
		t.Fatalf("re-executed test binary: %v\n%s", err, errb.Bytes())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("decoding the child's report: %v\n%s", err, out.Bytes())
	}
	return r
}

// inUserNS is a SysProcAttr for a child that is root in a new user namespace.
func inUserNS() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
	}
}

// skipUnlessUserNS skips the test when this host's configuration forbids the current
// user to create user namespaces, saying which switch does.
func skipUnlessUserNS(t *testing.T, root bool) {
	t.Helper()
	if v := sysctl("/proc/sys/user/max_user_namespaces"); v == "0" {
		t.Skip("user.max_user_namespaces=0: no user namespaces on this host")
	}
	if root {
		return
	}
	if v := sysctl("/proc/sys/kernel/unprivileged_userns_clone"); v == "0" {
		t.Skip("kernel.unprivileged_userns_clone=0: unprivileged user namespaces are off")
	}
	if v := sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); v == "1" {
		t.Skip("kernel.apparmor_restrict_unprivileged_userns=1: AppArmor restricts unprivileged user namespaces")
	}
}

func TestDetectShape(t *testing.T) {
	r := Detect()
	want := []string{UserNS, MountNS, PIDNS, NetNS, IPCNS, UTSNS, Landlock, Seccomp, SeccompNotify,
		CgroupV2, MountSetattr, Pidfd, PidfdGetfd, TIOCSTI, MPTCP}
	if len(r.Features) != len(want) {
		t.Fatalf("Detect() has %d features, want %d: %+v", len(r.Features), len(want), r.Features)
	}
	for i, f := range r.Features {
		if f.Name != want[i] {
			t.Errorf("feature %d is %q, want %q", i, f.Name, want[i])
		}
		if f.Detail == "" {
			t.Errorf("%s: empty Detail", f.Name)
		}
		if f.Status != Available && (f.Meaning == "" || f.Fix == "") {
			t.Errorf("%s is %v but lacks a meaning or a fix: %+v", f.Name, f.Status, f)
		}
	}
	if !strings.HasPrefix(r.Kernel, "Linux ") || r.Arch == "" || r.User == "" {
		t.Errorf("header: kernel %q, arch %q, user %q", r.Kernel, r.Arch, r.User)
	}
	if r.Root != (os.Geteuid() == 0) {
		t.Errorf("Root = %v with euid %d", r.Root, os.Geteuid())
	}
}

func TestLandlockHost(t *testing.T) {
	// Ask the kernel directly, so that the assertions below only run where Landlock is.
	raw, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	r := Detect()
	f, _ := r.Feature(Landlock)
	switch errno {
	case 0:
	case unix.ENOSYS, unix.EOPNOTSUPP:
		if f.Status != Missing || r.LandlockABI != 0 {
			t.Errorf("kernel says %v, Detect says %+v (ABI %d)", errno, f, r.LandlockABI)
		}
		t.Skipf("landlock_create_ruleset: %v: Landlock is not enabled in this kernel", errno)
	default:
		t.Fatalf("landlock_create_ruleset: %v", errno)
	}
	if r.LandlockABI < 1 || r.LandlockABI != int(raw) {
		t.Fatalf("LandlockABI = %d, kernel says %d", r.LandlockABI, raw)
	}
	if !strings.HasPrefix(f.Detail, "ABI "+strconv.Itoa(int(raw))+":") {
		t.Errorf("Detail = %q", f.Detail)
	}
	want := Partial
	if r.LandlockABI >= LandlockFullABI {
		want = Available
	}
	if f.Status != want {
		t.Errorf("ABI %d: status %v, want %v", r.LandlockABI, f.Status, want)
	}
	// A mainline kernel has at least the ABI its release introduced.
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	release := unix.ByteSliceToString(u.Release[:])
	for abi := 1; abi <= len(landlockABIs); abi++ {
		if k := landlockKernel(abi); k != "" && versionAtLeast(release, k) && r.LandlockABI < abi {
			t.Errorf("kernel %s has Landlock ABI %d, but %s introduced ABI %d", release, r.LandlockABI, k, abi)
		}
	}
}

// versionAtLeast compares the major.minor of a kernel release with want ("6.12").
func versionAtLeast(release, want string) bool {
	parse := func(s string) (int, int) {
		s, _, _ = strings.Cut(s, "-")
		parts := strings.SplitN(s, ".", 3)
		if len(parts) < 2 {
			return 0, 0
		}
		a, _ := strconv.Atoi(parts[0])
		b, _ := strconv.Atoi(parts[1])
		return a, b
	}
	ra, rb := parse(release)
	wa, wb := parse(want)
	return ra > wa || ra == wa && rb >= wb
}

func TestUserNamespacesHost(t *testing.T) {
	skipUnlessUserNS(t, os.Geteuid() == 0)
	r := Detect()
	for _, name := range []string{UserNS, MountNS, PIDNS, NetNS, IPCNS, UTSNS} {
		if f, _ := r.Feature(name); f.Status != Available {
			t.Errorf("%s: %v (%s), but no sysctl forbids it", name, f.Status, f.Detail)
		}
	}
	// A second opinion from util-linux, which creates the namespaces its own way.
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Log("no unshare(1) for a second opinion")
		return
	}
	if out, err := exec.Command(unshare, "--user", "--map-root-user", "--mount", "--pid", "--fork", "--net", "--ipc", "--uts", "true").CombinedOutput(); err != nil {
		t.Errorf("Detect says the namespaces work but unshare(1) fails: %v\n%s", err, out)
	}
}

func TestUserNamespacesUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a copy of the test as nobody; TestUserNamespacesHost covers this user")
	}
	skipUnlessUserNS(t, false)
	exe := copyTestBinary(t)
	r := detectIn(t, exe, "", &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}})
	if r.Root {
		t.Fatalf("the child runs as %s, want nobody", r.User)
	}
	for _, name := range []string{UserNS, MountNS, PIDNS, NetNS} {
		if f, _ := r.Feature(name); f.Status != Available {
			t.Errorf("as %s, %s: %v (%s), but no sysctl forbids it", r.User, name, f.Status, f.Detail)
		}
	}
}

// copyTestBinary copies the test binary where other users can execute it.
func copyTestBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "moat-probe-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	exe := filepath.Join(dir, "probe.test")
	out, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return exe
}

func TestUserNamespacesLimitZero(t *testing.T) {
	skipUnlessUserNS(t, os.Geteuid() == 0)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := detectIn(t, self, "max_user_namespaces", inUserNS())
	f, _ := r.Feature(UserNS)
	if f.Status != Missing {
		t.Fatalf("with user.max_user_namespaces=0: %+v", f)
	}
	for _, want := range []string{"no space left on device", "user.max_user_namespaces=0"} {
		if !strings.Contains(f.Detail, want) {
			t.Errorf("Detail %q lacks %q", f.Detail, want)
		}
	}
	if !strings.Contains(f.Fix, "sysctl -w user.max_user_namespaces=") {
		t.Errorf("Fix %q doesn't raise the limit", f.Fix)
	}
	if ns, _ := r.Feature(NetNS); ns.Status != Missing || !strings.Contains(ns.Detail, "needs a user namespace") {
		t.Errorf("network namespace without user namespaces: %+v", ns)
	}
	// The host's own direct-mode features hold in there too: moat run would use it.
	want := ModeDirect
	if host := Detect(); host.Mode.Name == ModeNone || host.LandlockABI == 0 {
		want = ModeNone
	}
	if r.Mode.Name != want || !strings.Contains(r.Mode.Detail, "user namespaces are unavailable") {
		t.Errorf("mode with user.max_user_namespaces=0: %+v, want %s", r.Mode, want)
	}
}

func TestDirectModeFeaturesHost(t *testing.T) {
	r := Detect()
	if !versionAtLeast(r.Kernel[len("Linux "):], "5.19") {
		t.Skipf("kernel %s predates the direct mode's seccomp flags", r.Kernel)
	}
	if procStatus("Seccomp") != "0" {
		t.Skip("this process is already under a seccomp filter, which may deny what is probed")
	}
	for _, name := range []string{SeccompNotify, PidfdGetfd} {
		if f, _ := r.Feature(name); f.Status != Available || !f.DirectMode {
			t.Errorf("%s on %s: %+v", name, r.Kernel, f)
		}
	}
}

func TestNetNamespaceLimitZero(t *testing.T) {
	skipUnlessUserNS(t, os.Geteuid() == 0)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := detectIn(t, self, "max_net_namespaces", inUserNS())
	for _, f := range r.Features[:len(nsTable)+1] {
		switch f.Name {
		case NetNS:
			if f.Status != Missing || !strings.Contains(f.Detail, "user.max_net_namespaces=0") ||
				!strings.Contains(f.Fix, "sysctl -w user.max_net_namespaces=") || !f.Required {
				t.Errorf("with user.max_net_namespaces=0: %+v", f)
			}
		default:
			if f.Status != Available {
				t.Errorf("%s should be unaffected by max_net_namespaces=0: %+v", f.Name, f)
			}
		}
	}
}

func TestSeccompHost(t *testing.T) {
	if procStatus("Seccomp") == "" {
		t.Skip(`no "Seccomp:" in /proc/self/status: kernel without CONFIG_SECCOMP`)
	}
	r := Detect()
	if f, _ := r.Feature(Seccomp); f.Status != Available {
		t.Errorf("seccomp: %+v", f)
	}
	avail, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
	if err != nil || !bytes.Contains(avail, []byte("user_notif")) {
		t.Skipf("kernel.seccomp.actions_avail = %q, %v: no user notification", avail, err)
	}
	if f, _ := r.Feature(SeccompNotify); f.Status != Available {
		t.Errorf("seccomp user notification: %+v", f)
	}
}

func TestCgroupHost(t *testing.T) {
	r := Detect()
	f, _ := r.Feature(CgroupV2)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); errors.Is(err, os.ErrNotExist) {
		// v1 or hybrid, as on moat's development machines.
		if f.Status != Missing || !strings.Contains(f.Meaning, "rlimits") {
			t.Errorf("no unified cgroup hierarchy, but: %+v", f)
		}
		return
	}
	if f.Status == Missing {
		t.Errorf("/sys/fs/cgroup/cgroup.controllers exists, but: %+v", f)
	}
}

func TestSysctlReportedAsFound(t *testing.T) {
	r := Detect()
	for _, c := range []struct{ name, path, key string }{
		{TIOCSTI, "/proc/sys/dev/tty/legacy_tiocsti", "dev.tty.legacy_tiocsti="},
		{MPTCP, "/proc/sys/net/mptcp/enabled", "net.mptcp.enabled="},
	} {
		v := sysctl(c.path)
		if v == "" {
			t.Logf("%s: no %s", c.name, c.path)
			continue
		}
		f, _ := r.Feature(c.name)
		if !strings.Contains(f.Detail, c.key+v) {
			t.Errorf("%s: %s is %s, Detail %q", c.name, c.path, v, f.Detail)
		}
		if f.Status != Available {
			t.Errorf("%s: %+v, but seccomp can deny it here", c.name, f)
		}
	}
}

func TestMountSetattrAndPidfdHost(t *testing.T) {
	r := Detect()
	if !versionAtLeast(r.Kernel[len("Linux "):], "5.12") {
		t.Skipf("kernel %s predates mount_setattr", r.Kernel)
	}
	for _, name := range []string{MountSetattr, Pidfd} {
		if f, _ := r.Feature(name); f.Status != Available {
			t.Errorf("%s on %s: %+v", name, r.Kernel, f)
		}
	}
}

func BenchmarkDetect(b *testing.B) {
	for b.Loop() {
		Detect()
	}
}
