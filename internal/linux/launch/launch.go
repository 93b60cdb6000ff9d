//go:build linux

// Package launch starts the sandbox's init stage in new namespaces and talks to it.
package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/spec"
)

// InitArg is argv[1] of the re-executed init stage.
const InitArg = "__moat_init"

// Namespaces are the namespaces every sandbox gets.
const Namespaces = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
	syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

// initCaps are the capabilities, in the sandbox's own user namespace, that init
// needs: mounts and pivot_root, dropping the bounding set, bringing up lo.
// Binding the DNS stub's port 53 needs CAP_NET_BIND_SERVICE.
var initCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP, unix.CAP_NET_ADMIN, unix.CAP_NET_BIND_SERVICE}

// Process is a running sandbox.
type Process struct {
	cmd    *exec.Cmd
	ctl    *os.File // spec, then signals
	result *os.File
	net    *os.File // the supervisor's end of the socket pair that carries Net's sockets

	stopped func(syscall.Signal)
}

// Pgid is the sandbox's process group when it runs as the terminal's foreground
// job (Options.Foreground), else 0.
func (p *Process) Pgid() int {
	if p.cmd.SysProcAttr.Foreground {
		return p.cmd.Process.Pid
	}
	return 0
}

// Options are Start's optional settings.
type Options struct {
	// Foreground is the controlling terminal, when the sandbox is to run as the
	// terminal's foreground job: init gets a process group of its own, which the
	// command inherits and the terminal's Ctrl-C, Ctrl-\ and Ctrl-Z reach without
	// the supervisor.
	Foreground *os.File
	// Stopped is called, from Wait, each time init reports that the command was
	// stopped by a signal.
	Stopped func(sig syscall.Signal)
}

// Start re-executes this binary as the sandbox's init with spec s.
func Start(s *spec.Spec, stdin io.Reader, stdout, stderr io.Writer) (*Process, error) {
	return StartWith(s, stdin, stdout, stderr, Options{})
}

// StartWith is Start with options.
func StartWith(s *spec.Spec, stdin io.Reader, stdout, stderr io.Writer, o Options) (*Process, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return nil, err
	}
	extra := []*os.File{specR, resW}
	var netParent, netChild *os.File
	if s.Net != nil {
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			specR.Close()
			specW.Close()
			resR.Close()
			resW.Close()
			return nil, os.NewSyscallError("socketpair", err)
		}
		netParent, netChild = os.NewFile(uintptr(pair[0]), "net"), os.NewFile(uintptr(pair[1]), "net-init")
		extra = append(extra, netChild)
	}
	uid, gid := os.Getuid(), os.Getgid()
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{"moat-init", InitArg},
		Env:        []string{},
		Stdin:      stdin,
		Stdout:     stdout,
		Stderr:     stderr,
		ExtraFiles: extra,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 Namespaces,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			// The command keeps the user's own uid, which isn't 0 inside, so execve
			// would leave init without capabilities in its namespaces. Ambient
			// capabilities carry over what init needs to build the sandbox; init
			// drops them all before the command starts.
			AmbientCaps: initCaps,
			Pdeathsig:   syscall.SIGKILL,
		},
	}
	if o.Foreground != nil {
		cmd.SysProcAttr.Setpgid = true
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = int(o.Foreground.Fd())
	}
	err = cmd.Start()
	specR.Close()
	resW.Close()
	if netChild != nil {
		netChild.Close()
	}
	if err != nil {
		specW.Close()
		resR.Close()
		if netParent != nil {
			netParent.Close()
		}
		return nil, fmt.Errorf("create namespaces: %w", err)
	}
	p := &Process{cmd: cmd, ctl: specW, result: resR, net: netParent, stopped: o.Stopped}
	if _, err := specW.Write(append(data, '\n')); err != nil {
		p.Kill()
		p.cmd.Wait()
		return nil, fmt.Errorf("send sandbox spec: %w", err)
	}
	return p, nil
}

// NetSockets waits for the sockets init opens for spec.Net, in the order spec.Net
// documents. It returns an error (and the sandbox should be killed) when init fails
// before sending them; Wait then reports why.
func (p *Process) NetSockets() ([]*os.File, error) {
	if p.net == nil {
		return nil, errors.New("no network requested")
	}
	defer p.net.Close()
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(64*4))
	n, oobn, _, _, err := unix.Recvmsg(int(p.net.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("recvmsg", err)
	}
	if n == 0 {
		return nil, errors.New("sandbox init ended before opening its network sockets")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, err
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "sandbox-socket"))
		}
	}
	if string(buf[:n]) != spec.NetMessage {
		for _, f := range files {
			f.Close()
		}
		return nil, fmt.Errorf("unexpected network message %q from sandbox init", buf[:n])
	}
	return files, nil
}

// Signal asks init to send sig to the command.
func (p *Process) Signal(sig syscall.Signal) error {
	if sig <= 0 || sig > 255 {
		return fmt.Errorf("signal %d out of range", sig)
	}
	_, err := p.ctl.Write([]byte{byte(sig)})
	return err
}

// Kill ends the sandbox and everything in it.
func (p *Process) Kill() error { return p.cmd.Process.Kill() }

// Wait waits for the sandbox to end and returns what init reported.
func (p *Process) Wait() (spec.Result, error) {
	var res spec.Result
	dec := json.NewDecoder(p.result)
	var decErr error
	for {
		res = spec.Result{}
		if decErr = dec.Decode(&res); decErr != nil || res.Stopped == 0 {
			break
		}
		if p.stopped != nil {
			p.stopped(syscall.Signal(res.Stopped))
		}
	}
	p.result.Close()
	waitErr := p.cmd.Wait()
	p.ctl.Close()
	if decErr != nil {
		if errors.Is(decErr, io.EOF) {
			return res, fmt.Errorf("sandbox init ended without a report (%v)", waitErr)
		}
		return res, fmt.Errorf("read sandbox report: %w", decErr)
	}
	return res, nil
}
