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
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/spec"
	"github.com/moat-sandbox/moat/internal/starttrace"
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
	ctl    *os.File // spec, then control bytes
	result *os.File
	net    *os.File // the supervisor's end of the socket pair that carries Net's sockets and the FUSE device
	ended  chan struct{}

	stopped func(syscall.Signal)
}

// Ended is closed when no process of the sandbox is left to act: at init's final
// report, while Wait still waits for init to exit (init writes that report only once
// it has killed and reaped every other process of the sandbox, nsinit's endSandbox;
// its mount namespace is still there), or, when init ends without one, once init has
// exited and the kernel has ended the rest. Only init can write the report: the
// command never holds the pipe, and init is not dumpable, so /proc/1/fd is shut.
func (p *Process) Ended() <-chan struct{} { return p.ended }

// stdioDelay is how long Wait waits, after init has exited, for the copying of
// stdio that isn't a file (exec's pipes) to end.
const stdioDelay = 2 * time.Second

// Options are Start's optional settings.
type Options struct {
	// Terminal, when set, is the controlling terminal of the session init
	// starts (a pty's slave, one of the stdio files or not): its Ctrl-C, Ctrl-\
	// and Ctrl-Z reach the command, which starts in init's process group, the
	// session's foreground. Without it, the session has no controlling terminal.
	Terminal *os.File
	// Stopped is called, from Wait, each time init reports that the command was
	// stopped by a signal.
	Stopped func(sig syscall.Signal)
}

// Spawn re-executes this binary as the sandbox's init, in new namespaces, before
// its spec exists: init starts (the Go runtime, its signal handling, the work that
// needs no spec) while the caller plans the sandbox, then waits for Send. A caller
// that doesn't Send kills it with Kill and reaps it with Wait.
func Spawn(stdin io.Reader, stdout, stderr io.Writer, o Options) (*Process, error) {
	starttrace.Mark("supervisor", "spawning init")
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
	// The socket pair for spec.Net's sockets and the FUSE device: the spec that
	// says whether they are wanted comes later, and an unused pair costs nothing.
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		specR.Close()
		specW.Close()
		resR.Close()
		resW.Close()
		return nil, os.NewSyscallError("socketpair", err)
	}
	netParent, netChild := os.NewFile(uintptr(pair[0]), "net"), os.NewFile(uintptr(pair[1]), "net-init")
	extra := []*os.File{specR, resW, netChild}
	uid, gid := os.Getuid(), os.Getgid()
	cmd := &exec.Cmd{
		Path: "/proc/self/exe",
		Args: []string{"moat-init", InitArg},
		// Init's own environment (the command gets the spec's): one P, which also
		// spares the runtime reading cgroup limits as it starts.
		Env:        []string{"GOMAXPROCS=1"},
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
	if starttrace.On() {
		cmd.Env = append(cmd.Env, starttrace.EnvValue())
	}
	// A session of its own: in the caller's, a process of the sandbox that ignores
	// SIGTTOU could make its group the foreground of the caller's terminal
	// (tcsetpgrp) and read what the person types to the shell.
	cmd.SysProcAttr.Setsid = true
	if o.Terminal != nil {
		cmd.SysProcAttr.Setctty = true
		switch o.Terminal {
		case stdin:
			cmd.SysProcAttr.Ctty = 0
		case stdout:
			cmd.SysProcAttr.Ctty = 1
		case stderr:
			cmd.SysProcAttr.Ctty = 2
		default:
			cmd.SysProcAttr.Ctty = 3 + len(cmd.ExtraFiles)
			cmd.ExtraFiles = append(cmd.ExtraFiles, o.Terminal)
		}
	}
	// Pipes exec made for stdio (the caller's terminal, relayed) reach EOF once
	// every process of the sandbox is gone; this bounds the wait if one lingers.
	cmd.WaitDelay = stdioDelay
	err = cmd.Start()
	starttrace.Mark("supervisor", "init execed")
	specR.Close()
	resW.Close()
	netChild.Close()
	if err != nil {
		specW.Close()
		resR.Close()
		netParent.Close()
		return nil, fmt.Errorf("create namespaces: %w", err)
	}
	return &Process{cmd: cmd, ctl: specW, result: resR, net: netParent, ended: make(chan struct{}), stopped: o.Stopped}, nil
}

// Send gives a spawned init its spec. When it fails, the sandbox is killed and
// reaped, and Wait is not to be called.
func (p *Process) Send(s *spec.Spec) error {
	data, err := json.Marshal(s)
	if err == nil {
		_, err = p.ctl.Write(append(data, '\n'))
	}
	if err != nil {
		p.Kill()
		if res, werr := p.Wait(); werr == nil && res.Stage != "" {
			// Init ended before it read its spec; its report says why.
			return fmt.Errorf("send sandbox spec: %w (init: %s: %s)", err, res.Stage, res.Error)
		}
		return fmt.Errorf("send sandbox spec: %w", err)
	}
	starttrace.Mark("supervisor", "spec sent")
	return nil
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
	starttrace.Mark("supervisor", "network sockets received")
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
	if sig <= 0 || sig > 64 {
		return fmt.Errorf("signal %d out of range", sig)
	}
	_, err := p.ctl.Write([]byte{byte(sig)})
	return err
}

// Kill ends the sandbox and everything in it.
func (p *Process) Kill() error { return p.cmd.Process.Kill() }

// Wait waits for the sandbox to end and returns what init reported.
func (p *Process) Wait() (spec.Result, error) {
	res, decErr := spec.ReadResult(p.result, p.stopped)
	starttrace.Mark("supervisor", "result read")
	if decErr == nil {
		close(p.ended) // a final report: interim ones (Stopped) don't leave the loop
	}
	p.result.Close()
	waitErr := p.cmd.Wait()
	if decErr != nil {
		close(p.ended)
	}
	if p.net != nil {
		p.net.Close() // unused when the spec asked for neither network nor FUSE
	}
	starttrace.Mark("supervisor", "init reaped")
	p.ctl.Close()
	if decErr != nil {
		if errors.Is(decErr, io.EOF) {
			return res, fmt.Errorf("sandbox init ended without a report (%v)", waitErr)
		}
		return res, fmt.Errorf("read sandbox report: %w", decErr)
	}
	return res, nil
}
