//go:build linux

// Package nsinit is the sandbox's init stage: moat re-executed as pid 1 inside new
// user, mount, pid, network, ipc and uts namespaces, which builds the mount view,
// drops every privilege, applies Landlock and seccomp, runs the command and reaps.
package nsinit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linux/ctty"
	"github.com/moat-sandbox/moat/internal/linux/privs"
	"github.com/moat-sandbox/moat/internal/spec"
	"github.com/moat-sandbox/moat/internal/starttrace"
)

// Descriptors the launcher passes to init.
const (
	specFD   = 3 // the JSON spec, one line; then the numbers of signals to forward, one byte each
	resultFD = 4 // init writes one JSON spec.Result here before it exits
)

// Main runs the init stage and never returns.
func Main() {
	starttrace.Mark("init", "main")
	if os.Getpid() != 1 {
		// Run by hand: without its own namespaces, building a root would change
		// the caller's mounts.
		fmt.Fprintln(os.Stderr, "moat: error: __moat_init is the internal stage of 'moat run'; it is not run by hand")
		os.Exit(125)
	}
	runtime.GOMAXPROCS(1) // init does little; fewer threads to restrict
	// Swallow the signals a terminal or the supervisor's process group gets: init is
	// pid 1 and only forwards what the supervisor asks it to. At SIG_DFL the kernel
	// drops them (signals_unsafe.go), and the command starts with them at SIG_DFL.
	swallow := []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
		syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGTSTP}
	if defaultSignals(swallow...) != nil {
		// Handled (not ignored) signals are reset to their defaults in the command.
		sigs := make([]os.Signal, len(swallow))
		for i, sig := range swallow {
			sigs[i] = sig
		}
		signal.Notify(make(chan os.Signal, 16), sigs...)
	}

	result := os.NewFile(resultFD, "result")
	// Nothing inherited above the result pipe reaches the command.
	_ = unix.CloseRange(resultFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	_, _ = unix.FcntlInt(specFD, unix.F_SETFD, unix.FD_CLOEXEC)
	_, _ = unix.FcntlInt(resultFD, unix.F_SETFD, unix.FD_CLOEXEC)

	ctl := bufio.NewReader(os.NewFile(specFD, "spec"))
	res := run(ctl, json.NewEncoder(result))
	// On the thread that forked the command: run locked this goroutine to it.
	endSandbox()
	_ = json.NewEncoder(result).Encode(res)
	os.Exit(0)
}

// endSandbox kills every process of the sandbox but init and reaps them all, so that
// when init writes its final report nothing the sandbox started can act any more:
// the supervisor relies on that to remove its placeholders while init itself is still
// exiting (launch.Process.Ended), which would detach their covers in this mount
// namespace under a live process.
//
// kill(-1) from pid 1 reaches every process of this pid namespace and of those nested
// in it, stopped and traced ones included; a process that forks meanwhile either has
// its child listed before kill walks the task list (the child gets SIGKILL too) or
// gets SIGKILL before it lists the child, and then the kernel fails the fork (kill
// walks under the task list lock, fork adds the child holding it). Init sends it from
// the thread that forked the command, which alone has the command's Landlock domain
// (applyLandlock): signal scoping lets a thread of that domain signal into the
// sandbox, and init's other threads have no domain to be scoped by.
//
// The proof is the wait, not the kill: wait4 fails with ECHILD only when init has no
// child at all, and a live process of the sandbox always has an ancestor that is init's
// child, as orphans are reparented to init or to a subreaper that is itself in the
// sandbox. __WALL counts the children whose exit signal isn't SIGCHLD too.
func endSandbox() {
	_ = unix.Kill(-1, unix.SIGKILL)
	for {
		_, err := unix.Wait4(-1, nil, unix.WALL, nil)
		switch err {
		case nil, unix.EINTR:
		case unix.ECHILD:
			return
		default:
			// wait4 fails otherwise only for bad arguments. Without the proof there is
			// no report: the supervisor then waits for init's exit, when the kernel
			// has ended the rest.
			fmt.Fprintf(os.Stderr, "moat: error: bug: sandbox init: wait4: %v\n", err)
			os.Exit(125)
		}
	}
}

// stageError is a failure of one setup stage, reported to the supervisor.
type stageError struct {
	stage, hint string
	err         error
}

func (e *stageError) Error() string { return e.stage + ": " + e.err.Error() }

func fail(stage string, err error, hint string) spec.Result {
	return spec.Result{Stage: stage, Error: err.Error(), Hint: hint, ExitCode: -1}
}

// run builds the sandbox, runs the command and returns its final report; report
// carries the interim ones (the command stopped).
func run(ctl *bufio.Reader, report *json.Encoder) spec.Result {
	// The command is forked from this thread, which alone drops its capabilities.
	runtime.LockOSThread()
	// Init is not dumpable, so the command, which has no capabilities, can't reach it
	// through /proc/1 (its descriptors: the spec and result pipes, whatever moat's
	// caller left open; its memory and environment) or ptrace. Landlock alone would
	// allow that when this thread is init's first, whose domain /proc/1 checks.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail("capabilities", os.NewSyscallError("prctl(PR_SET_DUMPABLE)", err), "")
	}
	// What needs no spec is done while the supervisor plans the sandbox.
	if err := LoopbackUp(); err != nil {
		return fail("network", err, "")
	}
	filter, filterErr := seccompProgram()
	starttrace.Mark("init", "ready for spec")
	line, err := ctl.ReadBytes('\n')
	if err != nil {
		return fail("spec", err, "")
	}
	starttrace.Mark("init", "spec read")
	var s spec.Spec
	if err := json.Unmarshal(line, &s); err != nil {
		return fail("spec", err, "")
	}
	tty := ctty.Open() // before the mount view replaces /dev
	debugf := func(format string, a ...any) {
		if s.Debug {
			fmt.Fprintf(os.Stderr, "moat: debug: "+format+"\n", a...)
		}
	}
	if err := buildRoot(&s); err != nil {
		return fail("mount", err, "run 'moat doctor' to see what this host supports")
	}
	debugf("mount view built: %d steps", len(s.Mounts))
	starttrace.Mark("init", "root built")
	if s.Net != nil {
		if err := openNet(s.Net); err != nil {
			return fail("network", err, "")
		}
		debugf("proxy on 127.0.0.1:%d, DNS stub on 127.0.0.1:53, host ports %v", s.Net.ProxyPort, s.Net.HostPorts)
	}
	starttrace.Mark("init", "net opened")
	if err := unix.Chdir(s.Dir); err != nil {
		return fail("chdir", fmt.Errorf("working directory %s is not visible in the sandbox: %w", s.Dir, err),
			"run moat from a directory the policy lets the command read")
	}
	path, err := privs.LookPath(s.Argv[0], s.Env)
	if err != nil {
		r := fail("exec", err, "")
		r.Errno = int(errnoOf(err))
		return r
	}
	// The command is forked from this thread (run locks it), so it starts
	// with no capabilities either.
	if err := privs.DropCapabilities(); err != nil {
		return fail("capabilities", err, "")
	}
	abi, err := applyLandlock(s.Writable)
	starttrace.Mark("init", "landlock applied")
	if err != nil {
		return fail("landlock", err, "Landlock must be enabled in the kernel (lsm=...,landlock); run 'moat doctor'")
	}
	debugf("landlock ABI %d applied; writable: %v", abi, s.Writable)
	if filterErr == nil {
		filterErr = applySeccomp(filter)
	}
	if filterErr != nil {
		return fail("seccomp", filterErr, "run 'moat doctor'")
	}
	starttrace.Mark("init", "seccomp applied")
	// syscall.ForkExec, not os.StartProcess: init reaps with wait4 and needs no
	// os.Process, whose first start probes pidfd support by forking a test child.
	// Fd, as os.StartProcess calls it, hands the command its stdio in blocking mode
	// (a terminal shared with moat may have been left non-blocking).
	pid, err := syscall.ForkExec(path, s.Argv, &syscall.ProcAttr{
		Dir:   s.Dir,
		Env:   s.Env,
		Files: []uintptr{os.Stdin.Fd(), os.Stdout.Fd(), os.Stderr.Fd()},
		Sys:   ctty.JobAttr(tty),
	})
	if err != nil {
		r := fail("exec", &os.PathError{Op: "fork/exec", Path: path, Err: err}, "")
		r.Errno = int(errnoOf(err))
		return r
	}
	starttrace.Mark("init", "command started")
	done := make(chan spec.Result, 1)
	go func() { done <- reap(pid, report) }()
	ctlc := make(chan byte)
	go readControl(ctl, ctlc)
	// Signals are sent from this thread, the one Landlock restricted (applyLandlock),
	// whose domain the command inherited: scoping lets it signal the command.
	for {
		select {
		case r := <-done:
			starttrace.Mark("init", "command exited")
			return r
		case b := <-ctlc:
			_ = unix.Kill(pid, syscall.Signal(b))
		}
	}
}

// readControl passes on the bytes the supervisor writes: signal numbers. When the supervisor goes away, it asks for SIGKILL, and
// the sandbox ends with it.
func readControl(ctl *bufio.Reader, out chan<- byte) {
	for {
		b, err := ctl.ReadByte()
		if err != nil {
			out <- byte(unix.SIGKILL)
			return
		}
		out <- b
	}
}

// reap waits for every process in the sandbox and returns when the command exits;
// endSandbox then kills whatever is left, daemons included. When the command
// stops (Ctrl-Z), it tells the supervisor, which stops too, the way a shell's
// job stops, so that the caller's shell gets its terminal back.
func reap(pid int, report *json.Encoder) spec.Result {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, unix.WUNTRACED, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fail("wait", err, "")
		}
		if got != pid {
			continue
		}
		switch {
		case ws.Stopped():
			_ = report.Encode(spec.Result{Stopped: int(ws.StopSignal())})
		case ws.Exited():
			return spec.Result{ExitCode: ws.ExitStatus()}
		case ws.Signaled():
			return spec.Result{ExitCode: 128 + int(ws.Signal()), Signal: int(ws.Signal())}
		}
	}
}

func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.ENOENT
}

// LoopbackUp brings up lo in the calling thread's network namespace: in init, the
// sandbox's, so servers the command starts on 127.0.0.1 work; nothing else is there.
func LoopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return os.NewSyscallError("SIOCGIFFLAGS lo", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return os.NewSyscallError("SIOCSIFFLAGS lo", err)
	}
	return nil
}
