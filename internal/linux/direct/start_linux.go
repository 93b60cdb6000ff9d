package direct

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linux/connbroker"
	"github.com/moat-sandbox/moat/internal/spec"
)

// Arguments that select the direct mode's stages when moat re-executes itself; the CLI
// dispatches them (as it does launch.InitArg) to Main and ExecMain.
const (
	MainArg = "__moat_direct"
	ExecArg = "__moat_direct_exec"
)

// Process is a running direct-mode sandbox.
type Process struct {
	cmd     *exec.Cmd
	ctl     *os.File
	result  *os.File
	events  chan struct{}
	tempDir string // removed by Wait, if Start made it
	stopped func(syscall.Signal)
}

// Start re-executes this binary as the direct mode's supervisor stage with spec s. If
// s.TempDir is empty it makes the private temp dir (and Wait removes it); terminals among
// stdin, stdout and stderr are added to s.Devices. onEvent, if not nil, gets every network
// call the broker decided, from one goroutine, until Wait returns.
func Start(s *Spec, stdin io.Reader, stdout, stderr io.Writer, onEvent func(connbroker.Event)) (*Process, error) {
	p := &Process{events: make(chan struct{})}
	sc := *s
	if sc.TempDir == "" {
		dir, err := os.MkdirTemp("", "moat-tmp-")
		if err != nil {
			return nil, fmt.Errorf("private temp dir: %w", err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			os.Remove(dir)
			return nil, fmt.Errorf("private temp dir: %w", err)
		}
		sc.TempDir, sc.TempDirMade, p.tempDir = dir, true, dir
	}
	sc.Devices = append(append([]string(nil), s.Devices...), terminals(stdin, stdout, stderr)...)
	data, err := json.Marshal(&sc)
	if err != nil {
		p.cleanup()
		return nil, err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		p.cleanup()
		return nil, err
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		p.cleanup()
		return nil, err
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		resR.Close()
		resW.Close()
		p.cleanup()
		return nil, err
	}
	p.cmd = &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{"moat-direct", MainArg},
		Env:        []string{},
		Stdin:      stdin,
		Stdout:     stdout,
		Stderr:     stderr,
		ExtraFiles: []*os.File{ctlR, resW, evW},
		// Stdio that isn't a file (a terminal the sandbox mustn't hold, relayed)
		// goes through pipes, which reach EOF once the stage has killed what the
		// command left; this bounds the wait if one lingers.
		WaitDelay: 2 * time.Second,
	}
	if s.Session || s.Terminal != nil {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if s.Terminal != nil {
		p.cmd.SysProcAttr.Setctty = true
		switch s.Terminal {
		case stdin:
			p.cmd.SysProcAttr.Ctty = 0
		case stdout:
			p.cmd.SysProcAttr.Ctty = 1
		case stderr:
			p.cmd.SysProcAttr.Ctty = 2
		default:
			p.cmd.SysProcAttr.Ctty = 3 + len(p.cmd.ExtraFiles)
			p.cmd.ExtraFiles = append(p.cmd.ExtraFiles, s.Terminal)
		}
	}
	p.stopped = s.Stopped
	err = p.cmd.Start()
	ctlR.Close()
	resW.Close()
	evW.Close()
	if err != nil {
		ctlW.Close()
		resR.Close()
		evR.Close()
		p.cleanup()
		return nil, fmt.Errorf("start the direct mode's supervisor stage: %w", err)
	}
	p.ctl, p.result = ctlW, resR
	go func() {
		defer close(p.events)
		defer evR.Close()
		sc := bufio.NewScanner(evR)
		for sc.Scan() {
			var e connbroker.Event
			if json.Unmarshal(sc.Bytes(), &e) == nil && onEvent != nil {
				onEvent(e)
			}
		}
	}()
	if _, err := ctlW.Write(append(data, '\n')); err != nil {
		p.Kill()
		p.Wait()
		return nil, fmt.Errorf("send sandbox spec: %w", err)
	}
	return p, nil
}

// terminals lists the device files of the standard streams that are terminals.
func terminals(files ...any) []string {
	var out []string
	for _, f := range files {
		file, ok := f.(*os.File)
		if !ok || file == nil {
			continue
		}
		if _, err := unix.IoctlGetTermios(int(file.Fd()), unix.TCGETS); err != nil {
			continue
		}
		path, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(file.Fd())))
		if err == nil && len(path) > 5 && path[:5] == "/dev/" {
			out = append(out, path)
		}
	}
	return out
}

// cleanup removes the private temp dir Start made. Everything that ran in the sandbox is
// dead by now.
func (p *Process) cleanup() {
	if p.tempDir != "" {
		removeTempDir(p.tempDir)
	}
}

// removeTempDir removes a private temp dir, opening up the directories the sandbox made
// unreadable or unwritable first (the walk never follows a symlink: entries that are
// links aren't directories to it).
func removeTempDir(dir string) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}

// Signal asks the supervisor stage to send sig to the command.
func (p *Process) Signal(sig syscall.Signal) error {
	if sig <= 0 || sig > 255 {
		return fmt.Errorf("signal %d out of range", sig)
	}
	_, err := p.ctl.Write([]byte{byte(sig)})
	return err
}

// Kill ends the sandbox: the supervisor stage, seeing its control pipe close, kills the
// command and everything it started.
func (p *Process) Kill() error { return p.ctl.Close() }

// Wait waits for the sandbox to end and returns what the supervisor stage reported.
func (p *Process) Wait() (spec.Result, error) {
	res, decErr := spec.ReadResult(p.result, p.stopped)
	p.result.Close()
	waitErr := p.cmd.Wait()
	p.ctl.Close()
	<-p.events
	p.cleanup()
	if decErr != nil {
		if errors.Is(decErr, io.EOF) {
			return res, fmt.Errorf("direct-mode supervisor stage ended without a report (%v)", waitErr)
		}
		return res, fmt.Errorf("read the direct-mode report: %w", decErr)
	}
	return res, nil
}
