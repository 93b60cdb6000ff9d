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

// jobControl runs the sandbox as its terminal's foreground job through a
// pseudo-terminal of its own, the way ssh and tmux do: the sandbox gets the
// pty's slave as its controlling terminal and as each of its standard streams
// that was the person's terminal, in a session of its own, and never a
// descriptor of the person's terminal. This process copies what is typed there
// to the pty (the terminal in raw mode: Ctrl-C, Ctrl-\ and Ctrl-Z reach the
// command as the pty's line discipline makes them signals) and what the sandbox
// writes back, and only while it is the terminal's foreground job: stopped, or
// continued in the background, it reads nothing the person types to the shell,
// whatever the sandbox does meanwhile (a process that continues itself with a
// SIGCONT timer holds only the pty). While this process asks the person a
// question, neither is copied: nothing of the sandbox's can show under it.
type jobControl struct {
	tty    *os.File // the person's terminal, this process's own descriptor of it (non-blocking)
	master *os.File // the pty's master
	ttyFD  int      // their descriptors, for ioctls (File.Fd would make them blocking)
	mFD    int
	slave  *os.File                   // this process's copy of the slave, until the sandbox has started
	mode   *unix.Termios              // tty's mode when the run began, put back whenever this process gives it up
	signal func(syscall.Signal) error // sends a signal to the command

	in    gate           // the input copy
	out   sync.Mutex     // held while output is written to tty, and while a question is asked
	raw   bool           // tty is in raw mode; read and written with the input copy out of its Read
	end   atomic.Bool    // the sandbox has ended: a read of the master that fails is its last
	dry   chan struct{}  // closed when the output copy has ended
	winch chan os.Signal // the terminal's window changed, or this process was continued
	cont  atomic.Bool    // continued: the terminal's mode may have been changed meanwhile
	quit  chan struct{}  // closed by done
	once  sync.Once
}

// newJobControl returns job control of tty through a new pty, or nil when this
// process is not in the terminal's foreground (run in the background, or tty
// isn't its controlling terminal): copying the terminal's input then would take
// it from the caller's shell. Nil too when stdin or stdout is not the
// terminal: another program of the pipeline may read the terminal itself (a
// pager after moat, git log | less; a password prompt before it, curl -u | ),
// and moat's copying would race it for each key and change the terminal's mode
// under it; the command then gets no terminal (detachedStdio). err says why no
// pty could be had.
func newJobControl(tty *os.File, stdin io.Reader, stdout io.Writer) (*jobControl, error) {
	if !isForeground(tty) || !isControlling(stdin) || !isControlling(stdout) {
		return nil, nil
	}
	mode, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		return nil, os.NewSyscallError("TCGETS", err)
	}
	// A descriptor of its own, so that it can be non-blocking (a read that waits
	// in the kernel would go on waiting after this process left the foreground:
	// job control is checked as a read begins) without changing the caller's.
	own, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(tty.Fd())), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	if err := own.SetReadDeadline(time.Time{}); err != nil {
		own.Close()
		return nil, fmt.Errorf("the terminal can't be waited on: %w", err)
	}
	master, slave, err := openPty()
	if err != nil {
		own.Close()
		return nil, err
	}
	// The sandbox's terminal starts as the person's is: its mode (stty -a shows
	// the same) and its window size.
	_ = unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, mode)
	j := &jobControl{tty: own, master: master, slave: slave, mode: mode, ttyFD: rawFD(own), mFD: rawFD(master),
		dry: make(chan struct{}), winch: make(chan os.Signal, 1), quit: make(chan struct{})}
	j.in.cond = sync.NewCond(&j.in.mu)
	j.syncSize()
	return j, nil
}

// rawFD is f's descriptor, left in the mode it is in.
func rawFD(f *os.File) int {
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(u uintptr) { fd = int(u) })
	}
	return fd
}

// openPty opens a new pty: its master, non-blocking, and its slave, blocking,
// neither of them this process's controlling terminal.
func openPty() (master, slave *os.File, err error) {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: "/dev/ptmx", Err: err}
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(m)
		return nil, nil, os.NewSyscallError("TIOCSPTLCK", err)
	}
	// TIOCGPTPEER: the slave of this very master, not whatever a path names.
	s, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		unix.Close(m)
		return nil, nil, os.NewSyscallError("TIOCGPTPEER", errno)
	}
	return os.NewFile(uintptr(m), "ptmx"), os.NewFile(s, "pty"), nil
}

// stdio gives the sandbox the pty's slave in place of each stream that is the
// person's terminal; a stream on another terminal is relayed as detachedStdio
// relays it.
func (j *jobControl) stdio(in io.Reader, out, errw io.Writer) (io.Reader, io.Writer, io.Writer) {
	same := isControlling
	din, dout, derr := detachedStdio(in, out, errw)
	if same(in) {
		din = j.slave
	}
	if same(out) {
		dout = j.slave
	}
	if same(errw) {
		derr = j.slave
	}
	return din, dout, derr
}

// started is called once the sandbox's first process has the slave (ok), or
// could not be started; this process's copy of the slave goes either way, so
// that the master's reads end when the sandbox's last copy does.
func (j *jobControl) started(ok bool) {
	j.slave.Close()
	if !ok {
		j.abandon()
	}
}

// abandon closes the pty of a sandbox that began no relay (Start failed).
func (j *jobControl) abandon() {
	j.master.Close()
	j.tty.Close()
}

// terminalStdio is the command's stdio and, in its terminal's foreground, the
// job control of the pty it gets (newJobControl); elsewhere, or where no pty
// can be had, the command gets no terminal (detachedStdio).
func (c *Cmd) terminalStdio() (*jobControl, io.Reader, io.Writer, io.Writer) {
	j, err := newJobControl(c.TTY, c.Stdin, c.Stdout)
	if err != nil {
		fmt.Fprintf(c.notice(), "moat: no pseudo-terminal for the command (%v): it runs without a terminal; a pty needs /dev/ptmx and a devpts mount at /dev/pts\n", err)
	}
	if j == nil {
		in, out, errw := detachedStdio(c.Stdin, c.Stdout, c.Stderr)
		return nil, in, out, errw
	}
	in, out, errw := j.stdio(c.Stdin, c.Stdout, c.Stderr)
	return j, in, out, errw
}

// begin starts the copies, with the sandbox running; send sends a signal
// to its command.
func (j *jobControl) begin(send func(syscall.Signal) error) {
	j.signal = send
	signal.Notify(j.winch, unix.SIGWINCH, unix.SIGCONT)
	// Raw before the first output is copied: the terminal's own output
	// processing would add a carriage return to each the pty's made.
	if fg, _ := j.foreground(); fg {
		j.makeRaw()
	}
	go j.input()
	go j.output()
	go func() {
		for {
			select {
			case sig := <-j.winch:
				if sig == unix.SIGCONT {
					// After a stop this process didn't make (kill -STOP, or
					// SIGTTOU for output with tostop set), the shell may have
					// changed the terminal's mode and size.
					j.cont.Store(true)
					_ = j.tty.SetReadDeadline(time.Unix(1, 0)) // the input copy's next turn sees it
					continue
				}
				j.syncSize()
			case <-j.quit:
				return
			}
		}
	}()
}

// gate lets the input copy read the terminal only while nothing holds it shut.
// Who shuts it waits until the copy is out of its Read, which a deadline in the
// past ends.
type gate struct {
	mu    sync.Mutex
	cond  *sync.Cond
	holds int  // reasons it is shut: this process stopping, a question
	busy  bool // the input copy is between enter and leave
	done  bool // the run is over
}

// enter waits until the gate is open and marks the input copy busy; false when
// the run is over. The deadline is cleared here, under the lock, so a shut that
// follows (it sets one in the past) always ends the Read that follows.
func (j *jobControl) enter() bool {
	j.in.mu.Lock()
	defer j.in.mu.Unlock()
	for j.in.holds > 0 && !j.in.done {
		j.in.cond.Wait()
	}
	if j.in.done {
		return false
	}
	_ = j.tty.SetReadDeadline(time.Time{})
	j.in.busy = true
	return true
}

func (j *jobControl) leave() {
	j.in.mu.Lock()
	j.in.busy = false
	j.in.cond.Broadcast()
	j.in.mu.Unlock()
}

// shut closes the gate and returns once the input copy reads no more; finish
// closes it for good.
func (j *jobControl) shut(finish bool) {
	j.in.mu.Lock()
	defer j.in.mu.Unlock()
	j.in.holds++
	j.in.done = j.in.done || finish
	for j.in.busy {
		_ = j.tty.SetReadDeadline(time.Unix(1, 0))
		j.in.cond.Wait()
	}
	j.in.cond.Broadcast()
}

func (j *jobControl) open() {
	j.in.mu.Lock()
	j.in.holds--
	j.in.cond.Broadcast()
	j.in.mu.Unlock()
}

// input copies what is typed at the terminal to the pty while this process is
// the terminal's foreground job, with the terminal in raw mode.
func (j *jobControl) input() {
	buf := make([]byte, 4096)
	for j.enter() {
		fg, gone := j.foreground()
		if gone {
			j.leave()
			j.hangup()
			return
		}
		if !fg {
			// In the background (bg): the shell has the terminal, and its mode.
			j.raw = false
			j.leave()
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if !j.raw || j.cont.Swap(false) {
			j.makeRaw()
			j.syncSize()
		}
		n, err := j.tty.Read(buf)
		j.leave()
		if n > 0 {
			if _, werr := j.master.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			time.Sleep(50 * time.Millisecond) // EIO: the next turn looks at the terminal
		}
	}
}

// output copies what the sandbox writes to its pty to the terminal, until the
// sandbox has ended and every descriptor of the slave is closed.
func (j *jobControl) output() {
	defer close(j.dry)
	buf := make([]byte, 32<<10)
	for {
		n, err := j.master.Read(buf)
		if n > 0 {
			j.out.Lock()
			_, _ = j.tty.Write(buf[:n]) // a terminal that is gone drops it
			j.out.Unlock()
		}
		if err != nil {
			if j.end.Load() {
				return
			}
			// EIO: no process has the slave open now; one may open /dev/tty again.
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// foreground says whether this process's group is the terminal's foreground,
// and whether the terminal is gone (hung up, or no longer this session's).
func (j *jobControl) foreground() (fg, gone bool) {
	pgrp, err := unix.IoctlGetInt(j.ttyFD, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp(), err != nil
}

// makeRaw puts the terminal in raw mode (cfmakeraw(3)): every byte typed goes
// to the pty as it is, and what the pty's line discipline wrote back shows as
// it is.
func (j *jobControl) makeRaw() {
	raw := *j.mode
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if unix.IoctlSetTermios(j.ttyFD, unix.TCSETS, &raw) == nil {
		j.raw = true
	}
}

// restore puts back the terminal's mode of the start, when this process set
// another. The input copy is shut out.
func (j *jobControl) restore() {
	if j.raw {
		_ = unix.IoctlSetTermios(j.ttyFD, unix.TCSETSW, j.mode)
		j.raw = false
	}
}

// syncSize gives the pty the terminal's window size; the kernel tells the pty's
// foreground job (SIGWINCH) when it changed.
func (j *jobControl) syncSize() {
	if ws, err := unix.IoctlGetWinsize(j.ttyFD, unix.TIOCGWINSZ); err == nil {
		_ = unix.IoctlSetWinsize(j.mFD, unix.TIOCSWINSZ, ws)
	}
}

// signalJob sends sig to the command and to the pty's foreground group (the
// command's, or a job a shell in the sandbox gave the pty to).
func (j *jobControl) signalJob(sig syscall.Signal) {
	_ = j.signal(sig)
	if fg, err := unix.IoctlGetInt(j.mFD, unix.TIOCGPGRP); err == nil && fg > 0 {
		_ = unix.Kill(-fg, sig)
	}
}

// hangup tells the sandbox its terminal is gone, as the kernel tells a job
// whose terminal hangs up: SIGHUP, then SIGCONT for a stopped one.
func (j *jobControl) hangup() {
	j.signalJob(unix.SIGHUP)
	j.signalJob(unix.SIGCONT)
}

// stopped follows the command when it stops (Ctrl-Z, or a stop signal): this
// process stops the same way, with the terminal in the mode it had, so the
// caller's shell sees its job stop and takes the terminal. Continued (fg or
// bg), it continues the command; the input copy resumes once this process is
// the terminal's foreground again.
func (j *jobControl) stopped(sig syscall.Signal) {
	j.shut(false)
	defer j.open()
	// Not while moat asks a question: the stop waits for the answer.
	j.out.Lock()
	defer j.out.Unlock()
	if fg, _ := j.foreground(); fg {
		j.restore()
	} else {
		j.raw = false
	}
	if sig == unix.SIGSTOP {
		sig = unix.SIGTSTP // a stop this process's own shell can undo
	}
	// Without a shell to continue it (an orphaned process group), the kernel
	// discards the signal and the command continues at once.
	stopSelf(sig)
	j.signalJob(unix.SIGCONT)
}

// withTerminal runs fn while this process has the terminal to itself: neither
// input nor output of the sandbox is copied meanwhile (the sandbox runs on; what
// it writes waits in the pty). It fails when this process is not the terminal's
// foreground job (stopped, or continued in the background), where using the
// terminal would take it from the caller's shell.
func (j *jobControl) withTerminal(fn func(tty *os.File) error) error {
	j.shut(false)
	defer j.open()
	if fg, _ := j.foreground(); !fg {
		return errNoTerminal
	}
	j.out.Lock()
	defer j.out.Unlock()
	// A descriptor of its own for fn, which may make it blocking (File.Fd).
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(j.ttyFD), unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: "the terminal", Err: err}
	}
	tty := os.NewFile(uintptr(fd), "tty")
	defer tty.Close()
	return fn(tty)
}

// done ends the copies when the sandbox has ended, once what it wrote has been
// shown (bounded by stdioDelay), and puts the terminal's mode back.
func (j *jobControl) done() {
	j.once.Do(func() {
		j.end.Store(true)
		select {
		case <-j.dry:
		case <-time.After(stdioDelay):
		}
		j.shut(true)
		signal.Stop(j.winch)
		close(j.quit)
		if fg, _ := j.foreground(); fg {
			j.restore()
		}
		j.master.Close()
		j.tty.Close()
	})
}

// stdioDelay bounds the wait, once the sandbox has ended, for what it wrote to
// reach the terminal.
const stdioDelay = 2 * time.Second

// isControlling reports whether stream is a file on this process's
// controlling terminal, the only terminal whose foreground it can ask for.
func isControlling(stream any) bool {
	f, ok := stream.(*os.File)
	if !ok || f == nil {
		return false
	}
	_, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil
}

// isForeground reports whether tty is a terminal whose foreground is this
// process's group.
func isForeground(tty *os.File) bool {
	if tty == nil {
		return false
	}
	fg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && fg == unix.Getpgrp()
}

// stopSelf stops this process with sig and returns when it is continued. The
// signal goes to the calling thread: sent to the process, another thread may
// take it, and this one would run on, for milliseconds, before the stop.
func stopSelf(sig syscall.Signal) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), sig)
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
