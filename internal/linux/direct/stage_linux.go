package direct

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linux/connbroker"
	"github.com/moat-sandbox/moat/internal/linux/ctty"
	"github.com/moat-sandbox/moat/internal/linux/privs"
	"github.com/moat-sandbox/moat/internal/linux/reaper"
	"github.com/moat-sandbox/moat/internal/linux/seccomp"
	"github.com/moat-sandbox/moat/internal/spec"
)

// Descriptors of the supervisor stage (MainArg), as launch passes them to nsinit.
const (
	ctlFD    = 3 // the JSON Spec, one line; then one byte per signal to forward
	resultFD = 4 // one JSON spec.Result, written before the stage exits
	eventsFD = 5 // JSON connbroker.Event lines, one per decided network call
)

// Descriptors of the exec stage (ExecArg).
const (
	execCtlFD = 3 // unix socket to the supervisor stage
	rulesetFD = 4 // the Landlock ruleset to enforce
)

// execSpec is what the supervisor stage sends the exec stage.
type execSpec struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	FS   bool     `json:"fs"`   // the filter also sends filesystem calls (entry broker)
	Read bool     `json:"read"` // ... including every open, for read-guarded zones
}

// execFailure is what the exec stage reports when it can't run the command.
type execFailure struct {
	Stage string `json:"stage"`
	Error string `json:"error"`
	Errno int    `json:"errno,omitempty"`
}

// Main runs the supervisor stage (MainArg) and never returns. It is not sandboxed: it is
// the subreaper of everything the command starts and the broker of its network (and, in
// guarded directories, filesystem) calls; it forwards signals and reports how the command
// ended, after killing whatever the command left behind.
func Main() {
	refuseByHand(MainArg, ctlFD, unix.S_IFIFO)
	// Terminal signals reach the whole foreground process group; this stage only
	// forwards what the supervisor asks it to.
	signal.Notify(make(chan os.Signal, 16), syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
		syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGTSTP)
	result := os.NewFile(resultFD, "result")
	events := os.NewFile(eventsFD, "events")
	_ = unix.CloseRange(eventsFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	for _, fd := range []int{ctlFD, resultFD, eventsFD} {
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
	}
	ctl := bufio.NewReader(os.NewFile(ctlFD, "ctl"))
	enc := json.NewEncoder(result)
	res := supervise(ctl, events, func(r spec.Result) { _ = enc.Encode(r) })
	_ = enc.Encode(res)
	os.Exit(0)
}

// refuseByHand exits with an error when a stage's first descriptor isn't what its
// caller passes (typ: S_IFIFO, a pipe from Start; S_IFSOCK, the supervisor stage's
// socket): it was run by hand, not by moat run, and would otherwise end silently.
func refuseByHand(arg string, fd int, typ uint32) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != typ {
		fmt.Fprintf(os.Stderr, "moat: error: %s is an internal stage of 'moat run'; it is not run by hand\n", arg)
		os.Exit(125)
	}
}

func fail(stage string, err error, hint string) spec.Result {
	return spec.Result{Stage: stage, Error: err.Error(), Hint: hint, ExitCode: -1}
}

// withTemp points the temp-dir variables at dir.
func withTemp(env []string, dir string) []string {
	if dir == "" {
		return env
	}
	out := make([]string, 0, len(env)+4)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "TMPDIR", "TMP", "TEMP", "TEMPDIR":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "TMPDIR="+dir, "TMP="+dir, "TEMP="+dir, "TEMPDIR="+dir)
}

func supervise(ctl *bufio.Reader, events *os.File, report func(spec.Result)) spec.Result {
	line, err := ctl.ReadBytes('\n')
	if err != nil {
		return fail("spec", err, "")
	}
	var s Spec
	if err := json.Unmarshal(line, &s); err != nil {
		return fail("spec", err, "")
	}
	debugf := func(format string, a ...any) {
		if s.Debug {
			fmt.Fprintf(os.Stderr, "moat: debug: "+format+"\n", a...)
		}
	}
	if err := reaper.Become(); err != nil {
		return fail("reaper", err, "")
	}

	abi, err := landlockABI()
	if err != nil {
		return fail("landlock", err, "Landlock must be enabled in the kernel (lsm=...,landlock); run 'moat doctor'")
	}
	if abi < 6 && !s.AllowUnscopedSignals {
		return fail("landlock", fmt.Errorf("Landlock ABI %d can't confine signals to the sandbox (ABI 6, Linux 6.12, can): without a pid namespace the command could signal every process of yours, moat's own included", abi),
			"use Linux 6.12 or newer, or accept that risk with \"moat\": {\"allowUnscopedSignals\": true} in the user config")
	}
	plan, err := NewPlan(&s, abi)
	if err != nil {
		return fail("landlock", err, "")
	}
	for _, g := range plan.Guarded {
		debugf("guarded: %s lacks %#x (because of %s)", g.Path, g.Lost, g.Why)
	}
	rs, err := buildRuleset(plan, abi)
	if err != nil {
		return fail("landlock", err, "")
	}
	debugf("landlock ABI %d: %d rules, %d guarded directories", abi, len(plan.Rules), len(plan.Guarded))

	broker, err := connbroker.New(s.Net)
	if err != nil {
		rs.Close()
		return fail("network", err, "")
	}
	defer broker.Close()
	var evMu sync.Mutex
	enc := json.NewEncoder(events)
	broker.OnEvent = func(e connbroker.Event) {
		evMu.Lock()
		defer evMu.Unlock()
		_ = enc.Encode(e)
	}
	entries, err := newEntryBroker(plan)
	if err != nil {
		rs.Close()
		return fail("filesystem", err, "")
	}
	defer entries.Close()

	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		rs.Close()
		return fail("start", os.NewSyscallError("socketpair", err), "")
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "exec-ctl"), os.NewFile(uintptr(fds[1]), "exec-ctl")
	defer ours.Close()
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{"moat-direct-exec", ExecArg},
		Env:        []string{},
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		ExtraFiles: []*os.File{theirs, rs},
	}
	tty := ctty.Open()
	cmd.SysProcAttr = ctty.JobAttr(tty)
	err = cmd.Start()
	theirs.Close()
	rs.Close()
	if err != nil {
		return fail("start", err, "")
	}
	proc := cmd.Process // signalled through its pidfd: never a reused pid
	// What this stage does for the command (open, rename, connect) must be no more than
	// the command's own credentials allow: run as root, it keeps uid 0 but no capability.
	// (The exec stage, started with them, drops its bounding set itself.)
	if err := dropAllThreadsCapabilities(); err != nil {
		proc.Kill()
		reaper.Wait(proc.Pid)
		return fail("capabilities", err, "")
	}
	es := execSpec{Argv: s.Argv, Env: withTemp(s.Env, s.TempDir), Dir: s.Dir, FS: entries.active(), Read: entries.readGuard()}
	b, _ := json.Marshal(es)
	if _, err := ours.Write(append(b, '\n')); err != nil {
		proc.Kill()
		reaper.Wait(proc.Pid)
		return fail("start", err, "")
	}

	// The exec stage sends the filter's listener, or reports why it couldn't get there.
	l, failure, err := receive(ours)
	if err == nil && failure == nil && l == nil {
		err = errors.New("the exec stage ended without handing over its seccomp listener")
	}
	if err != nil || failure != nil {
		reaper.Wait(proc.Pid)
		reaper.KillAll()
		if failure != nil {
			return spec.Result{Stage: failure.Stage, Error: failure.Error, Errno: failure.Errno, ExitCode: -1}
		}
		return fail("start", err, "")
	}
	served := make(chan error, 1)
	go func() {
		served <- l.Serve(func(n *connbroker.Notif) {
			if broker.Handle(n) || entries.Handle(n) {
				return
			}
			n.Deny(unix.ENOSYS) // a call the filter sends but nobody handles: a bug
		})
	}()
	// Then it execs (the socket closes: end of file) or says why not.
	_, failure, err = receive(ours)
	if failure != nil {
		reaper.Wait(proc.Pid)
		reaper.KillAll()
		l.Close()
		return spec.Result{Stage: failure.Stage, Error: failure.Error, Errno: failure.Errno, ExitCode: -1}
	}
	debugf("command started as process %d", proc.Pid)

	var gone atomic.Bool
	defer func() {
		// Runs after every process of the sandbox is dead. Without the supervisor
		// (SIGKILLed), nobody else would remove the temp dir it made.
		if gone.Load() && s.TempDirMade && s.TempDir != "" {
			removeTempDir(s.TempDir)
		}
	}()
	go func() {
		for {
			b, err := ctl.ReadByte()
			if err != nil { // the supervisor is gone: end the sandbox
				gone.Store(true)
				proc.Signal(unix.SIGKILL)
				return
			}
			proc.Signal(syscall.Signal(b))
		}
	}()
	var stopped func(unix.Signal)
	if tty >= 0 {
		// Ctrl-Z: the supervisor stops too, so the caller's shell gets the
		// terminal back.
		stopped = func(sig unix.Signal) { report(spec.Result{Stopped: int(sig)}) }
	}
	ws, err := reaper.WaitJob(proc.Pid, stopped)
	killed, kerr := reaper.KillAll()
	if killed > 0 {
		debugf("killed %d processes left behind", killed)
	}
	l.Stop()
	<-served
	l.Close()
	switch {
	case err != nil:
		return fail("wait", err, "")
	case kerr != nil:
		return fail("reaper", kerr, "")
	case ws.Signaled():
		return spec.Result{ExitCode: 128 + int(ws.Signal()), Signal: int(ws.Signal())}
	}
	return spec.Result{ExitCode: ws.ExitStatus()}
}

// receive reads the exec stage's next message: the listener (with a descriptor), a JSON
// failure line, or end of file (nil, nil, nil).
func receive(conn *os.File) (*connbroker.Listener, *execFailure, error) {
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	var data []byte
	for {
		n, oobn, _, _, err := unix.Recvmsg(int(conn.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, nil, os.NewSyscallError("recvmsg", err)
		}
		if oobn > 0 {
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err == nil && len(msgs) == 1 {
				if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) == 1 {
					l, err := connbroker.NewListener(os.NewFile(uintptr(fds[0]), "seccomp-listener"))
					return l, nil, err
				}
			}
			return nil, nil, errors.New("exec stage sent a malformed descriptor message (bug)")
		}
		if n == 0 {
			if len(data) > 0 {
				break
			}
			return nil, nil, nil
		}
		data = append(data, buf[:n]...)
		if i := strings.IndexByte(string(data), '\n'); i >= 0 {
			data = data[:i]
			break
		}
	}
	var f execFailure
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, nil, fmt.Errorf("exec stage: %q: %w", data, err)
	}
	return nil, &f, nil
}

// ExecMain runs the exec stage (ExecArg) and never returns: it drops every capability,
// enforces the Landlock ruleset, installs moat's deny filter and the broker filter
// (handing its listener to the supervisor stage), and execs the command, with only
// descriptors 0, 1 and 2.
func ExecMain() {
	refuseByHand(ExecArg, execCtlFD, unix.S_IFSOCK)
	runtime.LockOSThread() // capabilities and the exec belong to this thread
	ctl := os.NewFile(execCtlFD, "ctl")
	_ = unix.CloseRange(rulesetFD+1, ^uint(0), 0)
	for _, fd := range []int{execCtlFD, rulesetFD} {
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
	}
	report := func(stage string, err error) {
		f := execFailure{Stage: stage, Error: err.Error()}
		var errno unix.Errno
		if errors.As(err, &errno) {
			f.Errno = int(errno)
		}
		b, _ := json.Marshal(f)
		ctl.Write(append(b, '\n'))
		os.Exit(1)
	}
	line, err := bufio.NewReader(ctl).ReadBytes('\n')
	if err != nil {
		report("start", err)
	}
	var es execSpec
	if err := json.Unmarshal(line, &es); err != nil {
		report("start", err)
	}
	if err := unix.Chdir(es.Dir); err != nil {
		report("chdir", fmt.Errorf("working directory %s: %w", es.Dir, err))
	}
	path, err := privs.LookPath(es.Argv[0], es.Env)
	if err != nil {
		report("exec", err)
	}
	if err := privs.DropCapabilities(); err != nil {
		report("capabilities", err)
	}
	if err := restrict(os.NewFile(rulesetFD, "ruleset")); err != nil {
		report("landlock", err)
	}
	unix.Close(rulesetFD)
	prog, err := seccomp.Program(runtime.GOARCH)
	if err == nil {
		err = seccomp.Install(prog)
	}
	if err != nil {
		report("seccomp", err)
	}
	prog, err = seccomp.BrokerProgram(runtime.GOARCH, es.FS, es.Read)
	if err != nil {
		report("seccomp", err)
	}
	l, err := seccomp.InstallListener(prog)
	if err != nil {
		report("seccomp", err)
	}
	if err := connbroker.SendListener(ctl, l); err != nil {
		report("seccomp", err)
	}
	l.Close()
	err = syscall.Exec(path, es.Argv, es.Env)
	report("exec", &os.PathError{Op: "exec", Path: path, Err: err})
}
