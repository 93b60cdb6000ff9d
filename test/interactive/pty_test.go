package interactive_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testmoat"
)

// deadline bounds every wait; it is a hang guard, never a verdict.
const deadline = 30 * time.Second

// term is a pseudo-terminal the test plays the user at: it writes keystrokes to
// the master and reads what the terminal shows from it. The slave becomes the
// controlling terminal of the process started on it, as a login terminal would.
type term struct {
	t             *testing.T
	master, slave *os.File

	mu   sync.Mutex
	out  bytes.Buffer // everything the terminal showed
	seen int          // how much of out expect has consumed
	eof  chan struct{}

	running *proc // the last process started on the terminal
}

func newTerm(t *testing.T) *term {
	t.Helper()
	m, s, _ := testmoat.OpenPTY(t)
	tm := &term{t: t, master: m, slave: s, eof: make(chan struct{})}
	tm.resize(24, 80)
	go func() {
		defer close(tm.eof)
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:n])
			tm.mu.Unlock()
			if err != nil {
				return // EIO once no process holds the slave open any more
			}
		}
	}()
	t.Cleanup(func() { s.Close(); m.Close(); <-tm.eof })
	return tm
}

// start runs argv on the terminal as a session leader whose controlling terminal it
// is (so it is the terminal's foreground process group), in dir with env.
func (tm *term) start(dir string, env []string, argv ...string) *proc {
	tm.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*deadline)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tm.slave, tm.slave, tm.slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		tm.t.Fatalf("start %q: %v", argv, err)
	}
	p := &proc{t: tm.t, tm: tm, cmd: cmd, done: make(chan struct{})}
	tm.running = p
	go func() {
		p.err = cmd.Wait()
		cancel()
		close(p.done)
	}()
	tm.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// moat runs "moat run -- argv..." on the terminal in the workspace.
func (tm *term) moat(ws string, env []string, argv ...string) *proc {
	tm.t.Helper()
	return tm.start(ws, env, append([]string{moatBin, "run", "--"}, argv...)...)
}

// send types s at the terminal.
func (tm *term) send(s string) {
	tm.t.Helper()
	if _, err := tm.master.Write([]byte(s)); err != nil {
		tm.t.Fatalf("type %q: %v", s, err)
	}
}

// output is everything the terminal has shown so far.
func (tm *term) output() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

// expect waits until the terminal shows a match of re after what earlier expects
// consumed, consumes through the match and returns it with its submatches. It
// gives up early once the process on the terminal has exited and its last output
// has had time to arrive.
func (tm *term) expect(re string) []string {
	tm.t.Helper()
	rx := regexp.MustCompile(re)
	end := time.Now().Add(deadline)
	exited := false
	for {
		tm.mu.Lock()
		rest := tm.out.Bytes()[tm.seen:]
		if loc := rx.FindSubmatchIndex(rest); loc != nil {
			var m []string
			for i := 0; i < len(loc); i += 2 {
				if loc[i] >= 0 {
					m = append(m, string(rest[loc[i]:loc[i+1]]))
				} else {
					m = append(m, "")
				}
			}
			tm.seen += loc[1]
			tm.mu.Unlock()
			return m
		}
		all := tm.out.String()
		tm.mu.Unlock()
		if time.Now().After(end) {
			if exited {
				tm.t.Fatalf("the terminal never showed %q; %q exited (%v) and the terminal showed:\n%q",
					re, tm.running.cmd.Args, tm.running.err, all)
			}
			tm.t.Fatalf("the terminal never showed %q within %v; it showed:\n%q", re, deadline, all)
		}
		if !exited && tm.running != nil {
			select {
			case <-tm.running.done:
				exited = true
				end = time.Now().Add(2 * time.Second) // for output still in the pty
			default:
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// termios returns the terminal's current mode, read on the slave.
func (tm *term) termios() unix.Termios {
	tm.t.Helper()
	var tio *unix.Termios
	if err := testmoat.Control(tm.slave, func(fd int) (err error) {
		tio, err = unix.IoctlGetTermios(fd, unix.TCGETS)
		return err
	}); err != nil {
		tm.t.Fatal(err)
	}
	return *tio
}

// resize sets the terminal's window size, as a terminal emulator does when its
// window is resized: the kernel then sends SIGWINCH to the foreground group.
func (tm *term) resize(rows, cols uint16) {
	tm.t.Helper()
	if err := testmoat.Control(tm.master, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	}); err != nil {
		tm.t.Fatal(err)
	}
}

// waitTermios polls the terminal's mode until cond holds or the deadline passes,
// and returns the last mode read: synchronisation with a program that sets the
// mode around the prompt it prints, not a verdict.
func (tm *term) waitTermios(cond func(unix.Termios) bool) unix.Termios {
	tm.t.Helper()
	end := time.Now().Add(deadline)
	for {
		tio := tm.termios()
		if cond(tio) || time.Now().After(end) {
			return tio
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// proc is a process started on a term.
type proc struct {
	t    *testing.T
	tm   *term
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// wait waits for the process to exit and returns its exit status, 128+N when it
// was killed by signal N.
func (p *proc) wait() int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(deadline):
		p.cmd.Process.Kill()
		<-p.done
		p.t.Fatalf("%q had not exited within %v; the terminal showed:\n%q", p.cmd.Args, deadline, p.tm.output())
	}
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	var ee *exec.ExitError
	switch {
	case ok && ws.Signaled():
		return 128 + int(ws.Signal())
	case p.err == nil || errors.As(p.err, &ee):
		return p.cmd.ProcessState.ExitCode()
	}
	p.t.Fatalf("%q: %v", p.cmd.Args, p.err)
	return -1
}

// signal sends sig to the process from outside, as another program (kill, a
// supervisor) would.
func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
}

// sameMode reports the differences between two terminal modes, "" if none.
func sameMode(a, b unix.Termios) string {
	var diff string
	for _, f := range []struct {
		name string
		a, b uint32
	}{{"iflag", a.Iflag, b.Iflag}, {"oflag", a.Oflag, b.Oflag}, {"cflag", a.Cflag, b.Cflag}, {"lflag", a.Lflag, b.Lflag}} {
		if f.a != f.b {
			diff += fmt.Sprintf(" %s %#o != %#o;", f.name, f.a, f.b)
		}
	}
	if a.Cc != b.Cc {
		diff += fmt.Sprintf(" cc %v != %v;", a.Cc, b.Cc)
	}
	if a.Ispeed != b.Ispeed || a.Ospeed != b.Ospeed {
		diff += fmt.Sprintf(" speed %d/%d != %d/%d;", a.Ispeed, a.Ospeed, b.Ispeed, b.Ospeed)
	}
	return diff
}
