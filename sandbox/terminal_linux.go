//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// jobControl runs the sandbox as its terminal's foreground job, the way a shell
// runs one: init (and so the command) gets a process group of its own, which the
// terminal makes its foreground. The terminal's Ctrl-C, Ctrl-\ and Ctrl-Z then reach
// the command without moat, and moat, in the caller's process group, stays out of
// the way until it needs the terminal: when the command stops (it stops too, so
// the caller's shell gets the terminal back) and to ask the person a question.
type jobControl struct {
	tty     *os.File
	pgid    int                 // the sandbox's process group
	frozen  freezer             // the sandbox, stopped while this process asks a question
	mu      sync.Mutex          // held while this process owns the terminal
	signals chan syscall.Signal // signals relayed to the command (relayed)
	mode    *unix.Termios       // the terminal's mode when the sandbox got it, restored at the end
	killed  atomic.Bool         // holdInBackground ended the sandbox
}

// freezer stops and continues every process of a sandbox (launch.Process).
type freezer interface {
	Freeze() (running int, err error)
	Thaw() error
	Kill() error
	Ended() <-chan struct{}
}

// newJobControl returns job control of tty, or nil when this process is not in
// the terminal's foreground (run in the background, or tty isn't its controlling
// terminal): taking the terminal then would steal it from the caller's shell.
func newJobControl(tty *os.File) *jobControl {
	if tty == nil {
		return nil
	}
	fg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	if err != nil || fg != unix.Getpgrp() {
		return nil
	}
	mode, _ := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	return &jobControl{tty: tty, signals: make(chan syscall.Signal, 1), mode: mode}
}

// relayed tells a sandbox that stays stopped in the background (stopped) that
// sig was sent to the command.
func (j *jobControl) relayed(sig syscall.Signal) {
	select {
	case j.signals <- sig:
	default:
	}
}

// foreground says who has the terminal: this process's group (the shell gave it
// the terminal, as after bg and fg), the sandbox (its own group, or one a shell in
// the sandbox made: a group in another pid namespace), or neither (the caller's
// shell: this job runs in the background).
func (j *jobControl) foreground() (self, sandbox bool) {
	fg, err := unix.IoctlGetInt(int(j.tty.Fd()), unix.TIOCGPGRP)
	switch {
	case err != nil:
		return false, false
	case fg == unix.Getpgrp():
		return true, false
	case fg == j.pgid:
		return false, true
	}
	mine, err1 := os.Readlink("/proc/self/ns/pid")
	theirs, err2 := os.Readlink("/proc/" + strconv.Itoa(fg) + "/ns/pid")
	return false, err1 == nil && err2 == nil && mine != theirs
}

// take makes this process's group the terminal's foreground, saving the group
// (prev) and terminal mode it takes them from; give hands both back. The caller
// holds j.mu and has checked that the sandbox has the terminal.
func (j *jobControl) take() (give func(), prev int, err error) {
	fd := int(j.tty.Fd())
	prev, err = unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil {
		return nil, 0, os.NewSyscallError("TIOCGPGRP", err)
	}
	mode, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, 0, os.NewSyscallError("TCGETS", err)
	}
	if err := setForeground(fd, unix.Getpgrp()); err != nil {
		return nil, 0, err
	}
	return func() {
		_ = unix.IoctlSetTermios(fd, unix.TCSETSW, mode)
		_ = setForeground(fd, prev)
	}, prev, nil
}

// stopped follows the command when it stops: this process stops the same way, so
// the caller's shell sees its job stop and takes the terminal; when the shell
// continues it in the foreground, the command gets the terminal back and
// continues too. Continued in the background (bg), the sandbox stays stopped
// until this process is in the foreground again: a process of it that held the
// terminal's descriptor could otherwise read what the person types to the shell
// (setsid, or tcsetpgrp with SIGTTOU ignored). A signal relayed to it meanwhile
// that would end it (kill %1, a hangup) ends it with SIGKILL, since it could only
// be delivered by continuing the sandbox in the background. While this process
// owns the terminal (a question to the person), the command stopped because it
// read the terminal; it continues when the question is answered.
func (j *jobControl) stopped(sig syscall.Signal) {
	if !j.mu.TryLock() {
		return
	}
	defer j.mu.Unlock()
	fd := int(j.tty.Fd())
	self, sandbox := j.foreground()
	if self {
		// The shell gave this process the terminal (fg after bg): pass it on.
		_ = setForeground(fd, j.pgid)
		_ = unix.Kill(-j.pgid, unix.SIGCONT)
		return
	}
	var give func()
	var prev int
	if sandbox {
		var err error
		if give, prev, err = j.take(); err != nil {
			return
		}
	}
	if sig == unix.SIGSTOP {
		sig = unix.SIGTSTP // a stop this process's own shell can undo
	}
	// The rest of the sandbox stops too: a process of it that ignores SIGTTOU
	// could otherwise make its own group the terminal's foreground once the shell
	// has the terminal, and read what the person types to the shell. (One that has
	// the kernel send it SIGCONT, with a POSIX timer, runs again: an open gap,
	// README "Limitations"; relaying the terminal through a pty would close it.)
	thaw := func() {}
	held := false // every process of the sandbox is stopped
	if j.frozen != nil {
		if _, err := j.frozen.Freeze(); err != nil {
			fmt.Fprintf(j.tty, "moat: warning: the sandbox's other processes could not be stopped (%v): while it is stopped, one of them could take the terminal\n", err)
		} else {
			held = true
		}
		thaw = func() { _ = j.frozen.Thaw() }
	}
	conts := make(chan os.Signal, 1)
	signal.Notify(conts, unix.SIGCONT)
	defer signal.Stop(conts)
	select {
	case <-j.signals: // relayed before the stop; one relayed from now on counts
	default:
	}
	// Without a shell to continue it (an orphaned process group), the kernel
	// discards the signal and the command continues at once.
	stopSelf(sig)
	if held && !j.holdInBackground(conts) {
		return // the sandbox ended
	}
	// Continued: after the command has the terminal again, or it would stop at
	// once reading it.
	defer thaw()
	switch self, _ = j.foreground(); {
	case self && give != nil:
		give()
		// As a shell's fg continues its job: the group that had the terminal (a
		// shell in the sandbox may have given it to one of its own jobs), and the
		// sandbox's; the thaw continues only what the freeze stopped.
		_ = unix.Kill(-prev, unix.SIGCONT)
		_ = unix.Kill(-j.pgid, unix.SIGCONT)
	case self:
		_ = setForeground(fd, j.pgid)
		_ = unix.Kill(-j.pgid, unix.SIGCONT)
	default: // continued in the background (bg)
		_ = unix.Kill(-j.pgid, unix.SIGCONT)
	}
}

// endedSandbox says whether holdInBackground ended the sandbox with SIGKILL.
func (j *jobControl) endedSandbox() bool { return j.killed.Load() }

// holdInBackground keeps the frozen sandbox stopped while this process runs in
// the background, until the shell gives it the terminal. fg sends no SIGCONT to
// a job that runs (bash's doesn't), so the terminal is looked at 20 times a
// second as well. It returns false when the sandbox ended meanwhile, killed when
// a signal that ends it was relayed (see stopped) or the terminal is gone (hung
// up: nobody could continue it).
func (j *jobControl) holdInBackground(conts <-chan os.Signal) bool {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	told := false
	end := func(why string) bool {
		fmt.Fprintf(j.tty, "moat: %s: ending the sandbox, stopped in the background, with SIGKILL\n", why)
		j.killed.Store(true)
		_ = j.frozen.Kill()
		<-j.frozen.Ended()
		return false
	}
	for {
		if _, err := unix.IoctlGetInt(int(j.tty.Fd()), unix.TIOCGPGRP); err != nil {
			return end("the terminal is gone (" + err.Error() + ")")
		}
		if self, _ := j.foreground(); self {
			return true
		}
		if !told {
			fmt.Fprintf(j.tty, "moat: the sandbox stays stopped while moat runs in the background (a process of it could read the terminal); fg continues it\n")
			told = true
		}
		select {
		case <-conts:
		case <-tick.C:
		case <-j.frozen.Ended():
			return false
		case sig := <-j.signals:
			switch sig {
			case unix.SIGTERM, unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGKILL:
				return end(unix.SignalName(sig) + " for the command")
			}
		}
	}
}

// withTerminal runs fn while this process owns the terminal; it fails when the
// job runs in the background, where taking the terminal would steal it from the
// caller's shell.
//
// Every process of the sandbox is stopped while fn runs: a process could otherwise
// write to the terminal (a background job may, unless TOSTOP is set, and it can
// block SIGTTOU) and draw a question of its own under moat's, naming another host.
// When that can't be made sure of (a thread in an uninterruptible wait for half a
// second), fn doesn't run and the question isn't asked.
func (j *jobControl) withTerminal(fn func(tty *os.File) error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	self, sandbox := j.foreground()
	if !self && !sandbox {
		return errNoTerminal
	}
	if j.frozen == nil {
		return errors.New("the sandbox can't be stopped while moat asks")
	}
	// Frozen before the terminal changes hands, none of its processes reads the
	// terminal while it isn't theirs (and stops with SIGTTIN): the thaw, after the
	// terminal is given back, continues what the freeze stopped and leaves what
	// was stopped before.
	running, err := j.frozen.Freeze()
	defer j.frozen.Thaw()
	if err != nil {
		return err
	}
	switch {
	case running < 0:
		return errors.New("moat could not check that the sandbox stopped")
	case running > 0:
		return fmt.Errorf("%d threads of the sandbox did not stop", running)
	}
	if !self {
		give, _, err := j.take()
		if err != nil {
			return err
		}
		defer give()
	}
	return fn(j.tty)
}

// done takes the terminal back for good when the sandbox has ended, so this
// process can write its summary and its caller finds the terminal as it left it:
// in the mode it had when the sandbox got it (a command killed in raw mode, or
// one that turned echo off, leaves it otherwise), not exclusive (TIOCEXCL
// would keep the person from opening it again), and with its output flowing.
func (j *jobControl) done() {
	j.mu.Lock()
	defer j.mu.Unlock()
	fd := int(j.tty.Fd())
	self, sandbox := j.foreground()
	if fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); !self && !sandbox && err == nil && fg > 0 &&
		unix.Kill(-fg, 0) == unix.ESRCH {
		// A group with no process left: one of the sandbox's (a process that made
		// its own group the foreground and ended), as nobody else's job changes
		// the foreground while this one runs in it.
		sandbox = true
	}
	if sandbox {
		_ = setForeground(fd, unix.Getpgrp())
		self = true
	}
	if self {
		if j.mode != nil {
			_ = unix.IoctlSetTermios(fd, unix.TCSETS, j.mode)
		}
		_ = unix.IoctlSetInt(fd, unix.TIOCNXCL, 0)
		_ = unix.IoctlSetInt(fd, unix.TCXONC, unix.TCOON) // output suspended (tcflow TCOOFF) flows again
	}
}

// stopSelf stops this process with sig and returns when it is continued. The
// signal goes to the calling thread: sent to the process, another thread may
// take it, and this one would run on, for milliseconds, before the stop.
func stopSelf(sig syscall.Signal) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), sig)
}

// setForeground makes pgrp the terminal's foreground process group. The kernel
// stops a background process that does this with SIGTTOU unless the signal is
// blocked, so it is, on this thread, for the call.
func setForeground(fd, pgrp int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var block, old unix.Sigset_t
	block.Val[0] = 1 << (uint(unix.SIGTTOU) - 1)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &block, &old); err != nil {
		return err
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, pgrp); err != nil {
		return os.NewSyscallError("TIOCSPGRP", err)
	}
	return nil
}

// detachedStdio is the stdio of a sandbox that is not its terminal's foreground
// job, which runs in a session of its own, without a controlling terminal. A
// terminal among the streams is not handed to it: whoever holds a terminal's
// descriptor can read what is typed there, and outside the terminal's session
// its job control (SIGTTIN for a background reader) doesn't apply. Standard
// input that is a terminal becomes /dev/null, as a shell without job control
// does for a background command; output to a terminal goes through a pipe this
// process copies from.
func detachedStdio(in io.Reader, out, errw io.Writer) (io.Reader, io.Writer, io.Writer) {
	if isTerminal(in) {
		in = nil
	}
	if isTerminal(out) {
		out = relayed{out}
	}
	if isTerminal(errw) {
		errw = relayed{errw}
	}
	return in, out, errw
}

// relayed hides the file it writes to from os/exec, which then gives the child
// a pipe and copies from it.
type relayed struct{ io.Writer }

// isTerminal says whether stream is a file on a terminal.
func isTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	if !ok || f == nil {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
