package seccomp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The kernel tests re-execute the test binary: a filter can't be removed, so it is installed
// in a child process, which makes real syscalls and prints what the kernel answered as
// "probe<TAB>name<TAB>result" lines. The parent judges those answers, and runs the same probes
// without the filter to show each denial is the filter's doing and not the host's.

const helperEnv = "MOAT_SECCOMP_TEST_HELPER"

// Helper modes.
const (
	modeFiltered  = "filtered"   // install the filter, then probe
	modeControl   = "control"    // probe without a filter
	modeInherit   = "inherit"    // exec'd by a probing child: probe once, filtered or not as inherited
	modeTSYNCFail = "tsync-fail" // give one thread its own filter, then expect Install to fail
)

// expectation is what the parent requires of one probe.
type expectation struct {
	probe   string
	want    string // the answer under the filter: an errno name, "OK", or a value
	control string // the answer without the filter; "" = anything but want
	same    string // why the unfiltered answer may equal want on some hosts or users
}

var expectations = []expectation{
	// Denied.
	{probe: "ptrace(PTRACE_TRACEME)", want: "EPERM", control: "skipped"}, // unfiltered it would trace the child
	{probe: "ptrace(PTRACE_CONT, parent)", want: "EPERM"},
	{probe: "unshare(CLONE_NEWUSER)", want: "EPERM"},
	{probe: "clone(CLONE_NEWUSER) by exec.Cmd", want: "EPERM"},
	{probe: "clone3(NULL, 0)", want: "ENOSYS"},
	{probe: "fchmod(a new file, 04755)", want: "EPERM"},
	{probe: "openat(O_CREAT, 02755)", want: "EPERM"},
	{probe: "ioctl(ctty, TIOCSTI)", want: "EPERM"},
	{probe: "ioctl(ctty, 0x1_00005412)", want: "EPERM"},
	{probe: "ioctl(ctty, TIOCLINUX)", want: "EPERM"},
	{probe: "io_uring_setup(1, NULL)", want: "ENOSYS"},
	{probe: "socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP)", want: "EPERM"},
	{probe: "socket(AF_INET6, SOCK_STREAM, IPPROTO_MPTCP)", want: "EPERM"},
	{probe: "socket(AF_PACKET, SOCK_RAW, 0)", want: "EPERM", same: "without CAP_NET_RAW the kernel also answers EPERM"},
	{probe: "socket(AF_INET, SOCK_PACKET, 0)", want: "EPERM", same: "without CAP_NET_RAW the kernel also answers EPERM"},
	{probe: "socket(AF_VSOCK, SOCK_STREAM, 0)", want: "EPERM"},
	{probe: "mount(tmpfs on a missing dir)", want: "EPERM"},
	{probe: "personality(ADDR_NO_RANDOMIZE)", want: "EPERM"},
	{probe: "keyctl(GET_KEYRING_ID, user keyring)", want: "EPERM"},
	// Allowed.
	{probe: "/proc/self/status Seccomp", want: "2", control: "0"},
	{probe: "/proc/self/status NoNewPrivs", want: "1", control: "0"},
	{probe: "getpid", want: "OK", control: "OK"},
	{probe: "read a file", want: "OK", control: "OK"},
	{probe: "pty setup (ptmx, unlock, setsid, TIOCSCTTY)", want: "OK", control: "OK"},
	{probe: "ioctl(ctty, TCGETS)", want: "OK", control: "OK"},
	{probe: "ioctl(ctty, 0x1_00005401)", want: "OK", control: "OK"},
	{probe: "socket(AF_UNIX, SOCK_STREAM, 0)", want: "OK", control: "OK"},
	{probe: "socket(AF_INET, SOCK_STREAM, 0)", want: "OK", control: "OK"},
	{probe: "socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)", want: "OK", control: "OK"},
	{probe: "unshare(CLONE_FS)", want: "OK", control: "OK"},
	{probe: "personality(query)", want: "OK", control: "OK"},
	{probe: "new OS threads", want: "OK", control: "OK"},
	// The filter reaches a thread made before Install, and survives fork and exec.
	{probe: "other thread: /proc/thread-self/status Seccomp", want: "2", control: "0"},
	{probe: "other thread: io_uring_setup(1, NULL)", want: "ENOSYS"},
	{probe: "other thread: unshare(CLONE_NEWUSER)", want: "EPERM"},
	{probe: "exec'd child: io_uring_setup(1, NULL)", want: "ENOSYS"},
}

func TestInstall(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("inside a helper process")
	}
	skipUnlessSeccomp(t)
	t.Run("host", func(t *testing.T) { checkProbes(t, false) })
	// As the sandbox runs: root of a new user namespace, with CAP_NET_RAW over a new network
	// namespace, so no probe is answered EPERM by a missing capability instead of the filter.
	t.Run("userns", func(t *testing.T) { checkProbes(t, true) })
}

func checkProbes(t *testing.T, userns bool) {
	filtered, _ := runHelper(t, modeFiltered, userns)
	control, _ := runHelper(t, modeControl, userns)
	for _, e := range expectations {
		got, ok := filtered[e.probe]
		if !ok {
			t.Errorf("%s: no result from the filtered child", e.probe)
			continue
		}
		if got != e.want {
			t.Errorf("%s: got %s under the filter, want %s", e.probe, got, e.want)
		}
		ctl := control[e.probe]
		switch {
		case e.control != "" && ctl != e.control:
			t.Errorf("%s: got %s without the filter, want %s", e.probe, ctl, e.control)
		case e.control == "" && ctl == e.want && (e.same == "" || userns):
			t.Errorf("%s: got %s without the filter too: the probe doesn't show the filter's effect", e.probe, ctl)
		case e.control == "" && ctl == e.want:
			t.Logf("%s: %s without the filter too (%s; the userns run settles it)", e.probe, ctl, e.same)
		}
	}
	for name := range filtered {
		if !strings.HasPrefix(name, "tid ") && !hasExpectation(name) {
			t.Errorf("probe %q has no expectation", name)
		}
	}
	if main, other := filtered["tid main"], filtered["tid other"]; main == "" || main == other {
		t.Errorf("probing thread %q and other thread %q: want two different threads", main, other)
	}
}

func skipUnlessSeccomp(t *testing.T) {
	t.Helper()
	if _, err := Program(runtime.GOARCH); errors.Is(err, ErrUnsupportedArch) {
		t.Skipf("no filter for GOARCH=%s", runtime.GOARCH)
	}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		t.Skipf("kernel without seccomp (prctl(PR_GET_SECCOMP): %v)", err)
	}
}

func hasExpectation(probe string) bool {
	for _, e := range expectations {
		if e.probe == probe {
			return true
		}
	}
	return false
}

// TestInstallNoSilentSingleThread gives one thread a filter of its own so TSYNC can't
// synchronize it, and requires Install to fail without loading anything.
func TestInstallNoSilentSingleThread(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("inside a helper process")
	}
	skipUnlessSeccomp(t)
	got, out := runHelper(t, modeTSYNCFail, false)
	if e := got["Install"]; !strings.Contains(e, "thread") {
		t.Errorf("Install with a diverging thread: %q, want an error naming the thread\n%s", e, out)
	}
	if e := got["io_uring_setup(1, NULL) after the failed Install"]; e == "ENOSYS" || e == "" {
		t.Errorf("io_uring_setup after the failed Install: %q, want the kernel's own answer (nothing loaded)\n%s", e, out)
	}
}

func TestInstallRejectsBadPrograms(t *testing.T) {
	if err := Install(nil); err == nil {
		t.Error("Install(nil) succeeded")
	}
	if err := Install(make([]bpf.RawInstruction, maxInsns+1)); err == nil {
		t.Error("Install of an oversized program succeeded")
	}
}

// runHelper runs the helper in mode, in a new user and network namespace if userns, and
// returns its probe results and its output.
func runHelper(t *testing.T, mode string, userns bool) (map[string]string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperSeccompChild$", "-test.v", "-test.timeout=90s")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	if userns {
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  unix.CLONE_NEWUSER | unix.CLONE_NEWNET,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		}
	}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		if userns {
			t.Skipf("can't start a helper in a new user and network namespace (disabled on this host?): %v", err)
		}
		t.Fatalf("%s helper: %v", mode, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s helper: %v\n%s", mode, err, buf.Bytes())
	}
	out := buf.Bytes()
	results := parseProbes(out)
	if results["done"] != "OK" {
		t.Fatalf("%s helper did not finish\n%s", mode, out)
	}
	delete(results, "done")
	return results, string(out)
}

func parseProbes(out []byte) map[string]string {
	results := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if f := strings.Split(sc.Text(), "\t"); len(f) == 3 && f[0] == "probe" {
			results[f[1]] = f[2]
		}
	}
	return results
}

func report(name string, err error) { fmt.Printf("probe\t%s\t%s\n", name, result(err)) }

func reportValue(name, v string) { fmt.Printf("probe\t%s\t%s\n", name, v) }

func result(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "OK"
	case errors.As(err, &errno):
		if n := unix.ErrnoName(errno); n != "" {
			return n
		}
		return fmt.Sprintf("errno %d", int(errno))
	}
	return strings.ReplaceAll(err.Error(), "\t", " ")
}

func rawErr(_, _ uintptr, errno syscall.Errno) error {
	if errno != 0 {
		return errno
	}
	return nil
}

// closing runs a call that returns a descriptor and closes it.
func closing(fd int, err error) error {
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// statusField returns a field of a /proc status file.
func statusField(path, field string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return result(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "missing"
}

func ioUringSetup() error { return rawErr(unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)) }

func unshareNewUser() error { return unix.Unshare(unix.CLONE_NEWUSER) }

// TestHelperSeccompChild is the re-executed child; it does nothing in a normal test run.
func TestHelperSeccompChild(t *testing.T) {
	mode := os.Getenv(helperEnv)
	switch mode {
	case "":
		t.Skip("helper for TestInstall; runs only when re-executed")
	case modeInherit:
		report("io_uring_setup", ioUringSetup())
		os.Exit(0)
	case modeTSYNCFail:
		tsyncFail(t)
		os.Exit(0)
	}

	// A thread that exists before Install: TSYNC must filter it too.
	ready, start := make(chan int), make(chan struct{})
	otherDone := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is not reused
		ready <- unix.Gettid()
		<-start
		reportValue("other thread: /proc/thread-self/status Seccomp", statusField("/proc/thread-self/status", "Seccomp"))
		report("other thread: io_uring_setup(1, NULL)", ioUringSetup())
		report("other thread: unshare(CLONE_NEWUSER)", unshareNewUser())
		close(otherDone)
	}()
	other := <-ready

	runtime.LockOSThread()
	reportValue("tid main", fmt.Sprint(unix.Gettid()))
	reportValue("tid other", fmt.Sprint(other))
	if mode == modeFiltered {
		prog, err := Program(runtime.GOARCH)
		if err != nil {
			t.Fatal(err)
		}
		if err := Install(prog); err != nil {
			t.Fatal(err)
		}
	}

	reportValue("/proc/self/status Seccomp", statusField("/proc/self/status", "Seccomp"))
	reportValue("/proc/self/status NoNewPrivs", statusField("/proc/self/status", "NoNewPrivs"))
	report("getpid", func() error {
		if unix.Getpid() != os.Getpid() {
			return errors.New("wrong pid")
		}
		return nil
	}())
	report("read a file", func() error {
		b, err := os.ReadFile("/proc/self/cmdline")
		if err == nil && !bytes.Contains(b, []byte("TestHelperSeccompChild")) {
			err = errors.New("unexpected content")
		}
		return err
	}())

	// Terminal: a pty of our own as controlling terminal, so TIOCSTI works without the filter.
	ctty, err := openCtty()
	report("pty setup (ptmx, unlock, setsid, TIOCSCTTY)", err)
	if err == nil {
		report("ioctl(ctty, TIOCSTI)", unix.IoctlSetPointerInt(ctty, unix.TIOCSTI, 'x'))
		report("ioctl(ctty, 0x1_00005412)", unix.IoctlSetPointerInt(ctty, 1<<32|unix.TIOCSTI, 'y'))
		report("ioctl(ctty, TIOCLINUX)", unix.IoctlSetPointerInt(ctty, unix.TIOCLINUX, 0))
		_, err := unix.IoctlGetTermios(ctty, unix.TCGETS)
		report("ioctl(ctty, TCGETS)", err)
		_, err = unix.IoctlGetTermios(ctty, 1<<32|unix.TCGETS)
		report("ioctl(ctty, 0x1_00005401)", err)
	}

	if mode == modeFiltered {
		// Unfiltered this would make the child a tracee of go test, which it can't survive.
		report("ptrace(PTRACE_TRACEME)", rawErr(unix.Syscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)))
	} else {
		reportValue("ptrace(PTRACE_TRACEME)", "skipped")
	}
	report("ptrace(PTRACE_CONT, parent)", rawErr(unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_CONT, uintptr(os.Getppid()), 0, 0, 0, 0)))
	report("unshare(CLONE_NEWUSER)", unshareNewUser())
	report("clone(CLONE_NEWUSER) by exec.Cmd", func() error {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}
		return cmd.Run()
	}())
	report("clone3(NULL, 0)", rawErr(unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)))
	if f, err := os.CreateTemp("", "moat-seccomp-"); err == nil {
		report("fchmod(a new file, 04755)", f.Chmod(0o4755|os.ModeSetuid))
		f.Close()
		os.Remove(f.Name())
		name := f.Name() + "-setgid"
		fd, err := unix.Open(name, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o2755)
		report("openat(O_CREAT, 02755)", closing(fd, err))
		os.Remove(name)
	} else {
		reportValue("fchmod(a new file, 04755)", "no temp file: "+err.Error())
		reportValue("openat(O_CREAT, 02755)", "no temp file: "+err.Error())
	}
	report("io_uring_setup(1, NULL)", ioUringSetup())
	report("socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP)", closing(unix.Socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP)))
	report("socket(AF_INET6, SOCK_STREAM, IPPROTO_MPTCP)", closing(unix.Socket(unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP)))
	report("socket(AF_PACKET, SOCK_RAW, 0)", closing(unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)))
	report("socket(AF_INET, SOCK_PACKET, 0)", closing(unix.Socket(unix.AF_INET, unix.SOCK_PACKET, 0)))
	report("socket(AF_VSOCK, SOCK_STREAM, 0)", closing(unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0)))
	report("socket(AF_UNIX, SOCK_STREAM, 0)", closing(unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)))
	report("socket(AF_INET, SOCK_STREAM, 0)", closing(unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)))
	report("socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)", closing(unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)))
	// The lookup of the missing target fails before any permission check, unless filtered.
	report("mount(tmpfs on a missing dir)", unix.Mount("none", "/nonexistent-moat-seccomp-test", "tmpfs", 0, ""))
	report("personality(ADDR_NO_RANDOMIZE)", func() error {
		err := rawErr(unix.Syscall(unix.SYS_PERSONALITY, addrNoRandomize, 0, 0))
		if err == nil {
			unix.Syscall(unix.SYS_PERSONALITY, perLinux, 0, 0) // undo, in the unfiltered run
		}
		return err
	}())
	report("personality(query)", rawErr(unix.Syscall(unix.SYS_PERSONALITY, perQuery, 0, 0)))
	report("keyctl(GET_KEYRING_ID, user keyring)", func() error {
		_, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_USER_KEYRING, 0, 0, 0)
		return err
	}())
	report("unshare(CLONE_FS)", unix.Unshare(unix.CLONE_FS))
	report("new OS threads", newThreads(other))
	close(start)
	<-otherDone

	// Fork and exec still work, and the child inherits the filter.
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSeccompChild$")
	cmd.Env = append(os.Environ(), helperEnv+"="+modeInherit)
	out, err := cmd.Output()
	if err != nil {
		reportValue("exec'd child: io_uring_setup(1, NULL)", result(err))
	} else {
		reportValue("exec'd child: io_uring_setup(1, NULL)", parseProbes(out)["io_uring_setup"])
	}
	reportValue("done", "OK")
	os.Exit(0)
}

// openCtty opens a new pty and makes its terminal side this process's controlling terminal.
func openCtty() (int, error) {
	ptmx, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	// ptmx stays open for the life of the process: closing it would hang up the terminal.
	if err := unix.IoctlSetPointerInt(ptmx, unix.TIOCSPTLCK, 0); err != nil {
		return -1, fmt.Errorf("unlock pty: %w", err)
	}
	n, err := unix.IoctlGetInt(ptmx, unix.TIOCGPTN)
	if err != nil {
		return -1, fmt.Errorf("pty number: %w", err)
	}
	tty, err := unix.Open(fmt.Sprintf("/dev/pts/%d", n), unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if _, err := unix.Setsid(); err != nil {
		return -1, fmt.Errorf("setsid: %w", err)
	}
	if err := unix.IoctlSetInt(tty, unix.TIOCSCTTY, 0); err != nil {
		return -1, fmt.Errorf("TIOCSCTTY: %w", err)
	}
	return tty, nil
}

// newThreads makes the runtime start new OS threads (clone with thread flags) and checks each
// goroutine ran on a thread of its own.
func newThreads(exclude ...int) error {
	const n = 4
	tids := make(chan int, n)
	hold := make(chan struct{})
	for range n {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- unix.Gettid()
			<-hold
		}()
	}
	seen := map[int]bool{unix.Gettid(): true}
	for _, e := range exclude {
		seen[e] = true
	}
	for range n {
		select {
		case tid := <-tids:
			if seen[tid] {
				close(hold)
				return fmt.Errorf("thread %d reused", tid)
			}
			seen[tid] = true
		case <-time.After(10 * time.Second):
			close(hold)
			return errors.New("timed out waiting for new threads")
		}
	}
	close(hold)
	return nil
}

func tsyncFail(t *testing.T) {
	// One thread gets a filter of its own (allow everything), so its filter is no longer an
	// ancestor of the one Install loads and TSYNC can't synchronize it.
	ready := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread keeps its filter and stays parked
		allowAll, err := bpf.Assemble([]bpf.Instruction{bpf.RetConstant{Val: retAllow}})
		if err == nil {
			err = unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
		}
		if err == nil {
			_, err = setFilter(allowAll, 0)
		}
		ready <- err
		select {}
	}()
	if err := <-ready; err != nil {
		t.Fatalf("thread filter: %v", err)
	}
	prog, err := Program(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	report("Install", Install(prog))
	report("io_uring_setup(1, NULL) after the failed Install", ioUringSetup())
	reportValue("done", "OK")
}
