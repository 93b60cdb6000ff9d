package interactive_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testmoat"
)

const (
	ctrlC = "\x03"
	ctrlD = "\x04"
)

// prompt is the Python REPL's primary prompt at the start of a line (readline may
// put escape sequences, e.g. bracketed paste, before it).
const prompt = `(?:^|\n)(?:\x1b\[[0-9;?]*[a-zA-Z])*>>> `

func needPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("python3 is not installed at /usr/bin/python3")
	}
}

// TestPythonREPL is a user's session with python3's REPL under moat: the prompt,
// an expression, Ctrl-C interrupting a running statement and at the prompt (the
// REPL survives both), a window resize reaching a SIGWINCH handler and
// os.get_terminal_size, and Ctrl-D ending it with status 0. The terminal is in
// the mode it started in afterwards.
func TestPythonREPL(t *testing.T) {
	needPython(t)
	ws, env := workspace(t)
	tm := newTerm(t)
	before := tm.termios()
	p := tm.moat(ws, env, "python3", "-q")

	tm.expect(prompt)
	tm.send("6*7\r")
	tm.expect(`\n42\r\n`)
	tm.expect(prompt)

	// Ctrl-C while a statement runs: KeyboardInterrupt, and the REPL goes on.
	tm.send("import time; print('SLEEP' + 'ING'); time.sleep(600)\r")
	tm.expect(`SLEEPING\r\n`)
	tm.send(ctrlC)
	tm.expect(`KeyboardInterrupt`)
	tm.expect(prompt)
	tm.send("print('ALIVE' + '1')\r")
	tm.expect(`ALIVE1\r\n`)
	tm.expect(prompt)

	// Ctrl-C at the prompt.
	tm.send("unfinished" + ctrlC)
	tm.expect(`KeyboardInterrupt`)
	tm.expect(prompt)

	// Resizing the window: the command's SIGWINCH handler runs and sees the new size.
	tm.send("import os, signal; signal.signal(signal.SIGWINCH, lambda *a: print('WINCH', *os.get_terminal_size(0))); print('HANDLER' + 'SET')\r")
	tm.expect(`HANDLERSET\r\n`)
	tm.expect(prompt)
	tm.resize(33, 111)
	// A signal that comes after python printed its prompt and before it waits
	// for input runs its handler only at the next input (as without moat): an
	// empty line then.
	for end := time.Now().Add(2 * time.Second); !strings.Contains(tm.output(), "WINCH 111 33\r\n"); {
		if time.Now().After(end) {
			tm.send("\r")
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	tm.expect(`WINCH 111 33\r\n`)
	tm.send("print('SIZE', *os.get_terminal_size(0))\r")
	tm.expect(`SIZE 111 33\r\n`)
	tm.expect(prompt)

	// Ctrl-D at the prompt ends the REPL; moat exits with its status.
	tm.send(ctrlD)
	if code := p.wait(); code != 0 {
		t.Errorf("moat exited %d after Ctrl-D, want 0; the terminal showed:\n%q", code, tm.output())
	}
	if d := sameMode(tm.termios(), before); d != "" {
		t.Errorf("the terminal's mode after moat exited differs from before:%s", d)
	}
}

// TestPythonTerminalMode: while python3's REPL waits at its prompt, its terminal
// (under moat, the pty moat made for the sandbox) is in the mode python set, the
// same under moat as without it; the person's terminal meanwhile is in raw mode,
// so that every key reaches the pty as it was typed.
func TestPythonTerminalMode(t *testing.T) {
	needPython(t)
	ws, env := workspace(t)

	bare := newTerm(t)
	initial := bare.termios()
	bp := bare.start(ws, env, "python3", "-q")
	bare.expect(prompt)
	want := bare.waitTermios(func(tio unix.Termios) bool { return sameMode(tio, initial) != "" })
	bare.send(ctrlD)
	if code := bp.wait(); code != 0 {
		t.Fatalf("python3 without moat exited %d:\n%q", code, bare.output())
	}
	if sameMode(want, initial) == "" {
		t.Logf("python3 leaves the terminal's mode as it is at its prompt here (no readline?)")
	}

	tm := newTerm(t)
	p := tm.moat(ws, env, "python3", "-q")
	tm.expect(prompt)
	var got unix.Termios
	for end := time.Now().Add(deadline); ; time.Sleep(10 * time.Millisecond) {
		got = commandTermios(t, "python3\x00-q\x00")
		if sameMode(got, want) == "" || time.Now().After(end) {
			break
		}
	}
	if d := sameMode(got, want); d != "" {
		t.Errorf("terminal mode at python's prompt under moat differs from without moat:%s", d)
	}
	if outer := tm.termios(); outer.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 || outer.Oflag&unix.OPOST != 0 {
		t.Errorf("the person's terminal is not in raw mode while moat relays it: lflag %#o oflag %#o", outer.Lflag, outer.Oflag)
	}
	tm.send(ctrlD)
	if code := p.wait(); code != 0 {
		t.Errorf("moat exited %d after Ctrl-D:\n%q", code, tm.output())
	}
}

// commandTermios is the mode of the terminal that is standard input of the
// process whose command line is cmdline (NUL-separated), read from the host.
func commandTermios(t *testing.T, cmdline string) unix.Termios {
	t.Helper()
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if c, err := os.ReadFile("/proc/" + p.Name() + "/cmdline"); err != nil || string(c) != cmdline {
			continue
		}
		f, err := os.Open("/proc/" + p.Name() + "/fd/0")
		if err != nil {
			t.Fatalf("open the terminal of %q: %v", cmdline, err)
		}
		defer f.Close()
		var tio *unix.Termios
		if err := testmoat.Control(f, func(fd int) (err error) {
			tio, err = unix.IoctlGetTermios(fd, unix.TCGETS)
			return err
		}); err != nil {
			t.Fatalf("the standard input of %q is not a terminal: %v", cmdline, err)
		}
		return *tio
	}
	t.Fatalf("no process runs %q", cmdline)
	return unix.Termios{}
}

// TestSttyInside: stty -a inside the sandbox reports the terminal exactly as
// outside: moat neither changes the mode nor hides the terminal.
func TestSttyInside(t *testing.T) {
	ws, env := workspace(t)
	const script = "stty -a; echo END-OF-STTY"
	bare := newTerm(t)
	if code := bare.start(ws, env, "sh", "-c", script).wait(); code != 0 {
		t.Fatalf("stty -a without moat exited %d:\n%q", code, bare.output())
	}
	tm := newTerm(t)
	if code := tm.moat(ws, env, "sh", "-c", script).wait(); code != 0 {
		t.Fatalf("moat run -- stty -a exited %d:\n%q", code, tm.output())
	}
	const all = `(?s)(speed .*)END-OF-STTY`
	want, got := bare.expect(all)[1], tm.expect(all)[1]
	if got != want {
		t.Errorf("stty -a under moat:\n%s\nwithout moat:\n%s", got, want)
	}
	if !strings.Contains(got, "rows 24; columns 80;") {
		t.Errorf("stty -a under moat does not show the window size 24x80:\n%s", got)
	}
}

// TestTerminalRestored: a command that changes its terminal's mode (stty raw
// -echo) and makes it exclusive (TIOCEXCL) and then dies leaves the terminal to
// the person as it was before moat ran. Judged on the terminal itself.
func TestTerminalRestored(t *testing.T) {
	needPython(t)
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			ws, env := workspace(t)
			tm := newTerm(t)
			before := tm.termios()
			// Last, a process makes its own group the terminal's foreground and ends:
			// the foreground is then a group with no process left.
			script := `stty raw -echo -isig; echo CHANGED; python3 -c '
import fcntl, os, signal, termios
fcntl.ioctl(0, termios.TIOCEXCL)
termios.tcflow(1, termios.TCOOFF)
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
os.setpgid(0, 0)
os.tcsetpgrp(0, os.getpgrp())
'; kill -9 $$`
			if code := tm.start(ws, env, append(strings.Fields(moatBin+" run"+mode.flag+" --"), "sh", "-c", script)...).wait(); code != 128+9 {
				t.Fatalf("moat exited %d, want 137:\n%q", code, tm.output())
			}
			tm.expect(`CHANGED`)
			if d := sameMode(tm.termios(), before); d != "" {
				t.Errorf("the terminal's mode after the run differs from before it:%s", d)
			}
			var excl int
			if err := testmoat.Control(tm.slave, func(fd int) (err error) {
				excl, err = unix.IoctlGetInt(fd, unix.TIOCGEXCL)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if excl != 0 {
				t.Error("the terminal is still exclusive (TIOCEXCL) after the run")
			}
			// Output flows: what is written to the terminal shows (tcflow TCOOFF would
			// hold it, and block the writer).
			wrote := make(chan error, 1)
			go func() { _, err := tm.slave.Write([]byte("FLOWING\r\n")); wrote <- err }()
			select {
			case err := <-wrote:
				if err != nil {
					t.Fatal(err)
				}
				tm.expect(`FLOWING`)
			case <-time.After(5 * time.Second):
				t.Error("the terminal's output is still suspended (tcflow TCOOFF) after the run")
				testmoat.Control(tm.master, func(fd int) error { return unix.IoctlSetInt(fd, unix.TCXONC, unix.TCOON) })
			}
		})
	}
}

// TestTerminalName: the command's terminal has a name inside (ttyname(3), which
// tty, tmux and GPG_TTY=$(tty) use), and that name opens the same terminal:
// what is written to it shows on the user's screen.
func TestTerminalName(t *testing.T) {
	ws, env := workspace(t)
	tm := newTerm(t)
	p := tm.moat(ws, env, "sh", "-c", `n=$(tty) && echo "NAME=$n" && echo "VIA-NAME" > "$n"`)
	tm.expect(`NAME=/dev/\S+\r\n`)
	tm.expect(`VIA-NAME\r\n`)
	if code := p.wait(); code != 0 {
		t.Errorf("moat exited %d:\n%q", code, tm.output())
	}
}

// TestReadLine: a shell reads a typed line from the terminal.
func TestReadLine(t *testing.T) {
	ws, env := workspace(t)
	tm := newTerm(t)
	p := tm.moat(ws, env, "sh", "-c", "echo READY; read x; echo got $x; exit 7")
	tm.expect(`READY\r\n`)
	tm.send("hello world\r")
	tm.expect(`got hello world\r\n`)
	if code := p.wait(); code != 7 {
		t.Errorf("moat exited %d, want 7:\n%q", code, tm.output())
	}
}

// TestFullScreen: full-screen programs start, draw, take a key and quit cleanly,
// leaving the terminal in the mode it started in.
func TestFullScreen(t *testing.T) {
	t.Run("python_curses", func(t *testing.T) {
		needPython(t)
		ws, env := workspace(t)
		tm := newTerm(t)
		before := tm.termios()
		p := tm.moat(ws, env, "python3", "-c", `
import curses
def main(w):
    h, wd = w.getmaxyx()
    w.addstr(0, 0, "CURSES %dx%d" % (wd, h))
    w.refresh()
    return w.getkey()
print("KEY", curses.wrapper(main))
`)
		tm.expect(`\x1b\[\?1049h`) // the alternate screen
		tm.expect(`CURSES 80x24`)
		tm.send("q")
		tm.expect(`KEY q\r\n`)
		if code := p.wait(); code != 0 {
			t.Errorf("moat exited %d:\n%q", code, tm.output())
		}
		if d := sameMode(tm.termios(), before); d != "" {
			t.Errorf("the terminal's mode after the curses program differs from before:%s", d)
		}
	})
	t.Run("vi", func(t *testing.T) {
		vi, err := exec.LookPath("vi")
		if err != nil {
			t.Skip("vi is not installed (Debian: vim-tiny)")
		}
		ws, env := workspace(t)
		if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("FIRST LINE\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		tm := newTerm(t)
		before := tm.termios()
		p := tm.moat(ws, env, vi, "-u", "NONE", "-N", "notes.txt")
		tm.expect(`FIRST LINE`)
		tm.send("Go" + "SECOND LINE" + "\x1b" + ":wq\r")
		if code := p.wait(); code != 0 {
			t.Errorf("moat exited %d:\n%q", code, tm.output())
		}
		// Judged on the host: vi wrote the file in the workspace.
		if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "FIRST LINE\nSECOND LINE\n" {
			t.Errorf("notes.txt after vi: %q", b)
		}
		if d := sameMode(tm.termios(), before); d != "" {
			t.Errorf("the terminal's mode after vi differs from before:%s", d)
		}
	})
	t.Run("less", func(t *testing.T) {
		if _, err := exec.LookPath("less"); err != nil {
			t.Skip("less is not installed")
		}
		ws, env := workspace(t)
		var text strings.Builder
		for i := 1; i <= 200; i++ {
			text.WriteString("line ")
			text.WriteString(strings.Repeat("x", i%7))
			text.WriteString("\n")
		}
		text.WriteString("THE END\n")
		if err := os.WriteFile(filepath.Join(ws, "long.txt"), []byte(text.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		tm := newTerm(t)
		before := tm.termios()
		p := tm.moat(ws, env, "less", "long.txt")
		tm.expect(`line x`)
		tm.send("G") // to the end
		tm.expect(`THE END`)
		tm.send("q")
		if code := p.wait(); code != 0 {
			t.Errorf("moat exited %d:\n%q", code, tm.output())
		}
		if d := sameMode(tm.termios(), before); d != "" {
			t.Errorf("the terminal's mode after less differs from before:%s", d)
		}
	})
}

// TestSignalsFromOutside: SIGINT, SIGQUIT, SIGTERM and SIGHUP sent to moat by
// another process (not typed at the terminal) reach the command, which runs in the
// terminal's foreground: its handler runs, or it dies of the signal and moat exits
// 128+N.
func TestSignalsFromOutside(t *testing.T) {
	needPython(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP} {
		name := unix.SignalName(sig)
		t.Run(name+"_handled", func(t *testing.T) {
			t.Parallel()
			ws, env := workspace(t)
			tm := newTerm(t)
			p := tm.moat(ws, env, "python3", "-c", `
import os, signal, sys, time
def h(n, f):
    # os.write, not print: the handler may run while print is mid-write.
    os.write(1, b"HANDLED %d\n" % n)
    os._exit(100 + n)
for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, h)
print("READY", flush=True)
time.sleep(600)
`)
			tm.expect(`READY\r\n`)
			p.signal(sig)
			tm.expect(`HANDLED ` + strconv.Itoa(int(sig)) + `\r\n`)
			if code := p.wait(); code != 100+int(sig) {
				t.Errorf("moat exited %d, want %d (the handler's status)", code, 100+int(sig))
			}
		})
		t.Run(name+"_default", func(t *testing.T) {
			t.Parallel()
			ws, env := workspace(t)
			tm := newTerm(t)
			// exec: sleep itself is the command, with the signal's default action.
			p := tm.moat(ws, env, "sh", "-c", "echo READY; exec sleep 600")
			tm.expect(`READY\r\n`)
			p.signal(sig)
			if code := p.wait(); code != 128+int(sig) {
				t.Errorf("moat exited %d, want %d (128+%s)", code, 128+int(sig), name)
			}
		})
	}
}
