package escape_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/moat-sandbox/moat/internal/testmoat"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pty is a pseudo-terminal pair opened by the test; the slave becomes the
// controlling terminal of what runs on it, as the user's terminal would be.
type pty struct {
	master, slave *os.File
	name          string

	mu  sync.Mutex
	out bytes.Buffer // everything written to the terminal
}

func openPTY(t *testing.T) *pty {
	t.Helper()
	m, slave, name := testmoat.OpenPTY(t)
	p := &pty{master: m, slave: slave, name: name}
	// Raw mode: no echo, no line editing, so every pushed byte counts as input.
	err := testmoat.Control(p.slave, func(fd int) error {
		tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if err != nil {
			return err
		}
		tio.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
		tio.Oflag &^= unix.OPOST
		tio.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
		tio.Cflag = tio.Cflag&^(unix.CSIZE|unix.PARENB) | unix.CS8
		tio.Cc[unix.VMIN], tio.Cc[unix.VTIME] = 1, 0
		return unix.IoctlSetTermios(fd, unix.TCSETS, tio)
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { p.slave.Close(); m.Close() })
	return p
}

func (p *pty) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// pending returns the bytes waiting in the terminal's input queue: what the user's
// shell would read next. It reads through a fresh descriptor with a deadline.
func (p *pty) pending(t *testing.T) (queued int, data string) {
	t.Helper()
	if err := testmoat.Control(p.slave, func(fd int) (err error) {
		queued, err = unix.IoctlGetInt(fd, unix.TIOCINQ)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p.name, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []byte
	buf := make([]byte, 256)
	for {
		if err := f.SetReadDeadline(time.Now().Add(300 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		n, err := f.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Logf("read pending input: %v", err)
			}
			return queued, string(got)
		}
	}
}

// onTerminal makes cmd a session leader whose controlling terminal is the pty.
func (p *pty) onTerminal(cmd *exec.Cmd) {
	cmd.Stdin, cmd.Stdout = p.slave, p.slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
}

// testTerminalInjection: TIOCSTI and TIOCLINUX from the sandbox push nothing into
// the user's terminal, which stays usable for output.
func testTerminalInjection(t *testing.T) {
	b := newBox(t)
	tool := b.tool("tiocsti.py")
	const inject = "echo PWNED\n"

	// Control: outside the sandbox the same program does inject, so the check below
	// can see an injection.
	ctl := openPTY(t)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	ccmd := exec.CommandContext(ctx, "python3", tool, inject, filepath.Join(b.root, "control-result"))
	ccmd.Env = b.env()
	ctl.onTerminal(ccmd)
	var cerr bytes.Buffer
	ccmd.Stderr = &cerr
	if err := ccmd.Run(); err != nil {
		t.Fatalf("control: %v\n%s", err, cerr.String())
	}
	if n, data := ctl.pending(t); n == 0 || data != inject {
		t.Skipf("this host refuses TIOCSTI outside the sandbox too (dev.tty.legacy_tiocsti=0 and no CAP_SYS_ADMIN; result %q, pending %d %q): nothing to test",
			testmoat.ReadFile(t, filepath.Join(b.root, "control-result")), n, data)
	}

	p := openPTY(t)
	marker := testmoat.Token("tty-out")
	ctx2, cancel2 := context.WithTimeout(context.Background(), runTimeout)
	defer cancel2()
	cmd := b.command(ctx2, opts{argv: []string{"python3", tool, inject, "result", marker}})
	p.onTerminal(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx2.Err() != nil {
		t.Fatalf("moat did not end: %v\n%s", err, stderr.String())
	}
	// Control: the sandboxed program can still write to the terminal.
	if !testmoat.WaitFor(10*time.Second, func() bool { return strings.Contains(p.output(), marker) }) {
		t.Errorf("control: the sandboxed program's output never reached the terminal (got %q; %v)\n%s", p.output(), err, stderr.String())
	}
	if n, data := p.pending(t); n != 0 || data != "" {
		t.Errorf("the sandbox pushed input into the user's terminal: %d bytes queued, read %q", n, data)
	}
	res := testmoat.KeyValues(testmoat.ReadFile(t, filepath.Join(b.ws, "result")))
	for _, ioctl := range []string{"TIOCSTI", "TIOCLINUX"} {
		if res[ioctl] != "EPERM" {
			t.Errorf("%s inside the sandbox: %q, want EPERM (seccomp)", ioctl, res[ioctl])
		}
	}
}
