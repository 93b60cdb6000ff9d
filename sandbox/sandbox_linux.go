//go:build linux

package sandbox

import (
	"errors"
	"os"

	"github.com/moat-sandbox/moat/internal/linux/direct"
	"github.com/moat-sandbox/moat/internal/linux/launch"
	"github.com/moat-sandbox/moat/internal/linux/nsinit"
	"github.com/moat-sandbox/moat/internal/spec"
	"github.com/moat-sandbox/moat/proxy"
)

// Init runs the sandbox's init stage when this process is one, and never returns
// then; otherwise it returns at once. A program that uses this package must call it
// first thing in main: the sandbox re-executes the program's own binary.
func Init() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case launch.InitArg:
		nsinit.Main()
	case direct.MainArg:
		direct.Main()
	case direct.ExecArg:
		direct.ExecMain()
	}
}

// start builds the sandbox in new namespaces; where the kernel refuses them, it runs
// the command in the direct mode instead (direct_linux.go). env is the command's
// environment before proxyEnv.
func (c *Cmd) start(s *spec.Spec, env []string, srv *proxy.Server) (process, error) {
	var o launch.Options
	if c.jobs = newJobControl(c.TTY); c.jobs != nil {
		o.Foreground, o.Stopped = c.TTY, c.jobs.stopped
	}
	p, err := launch.StartWith(s, c.Stdin, c.Stdout, c.Stderr, o)
	if err != nil {
		c.jobs = nil
		if errno, ok := namespacesRefused(err); ok {
			return c.startDirect(s, env, srv, errno)
		}
		return nil, &SetupError{Stage: "namespaces", Err: err,
			HintText: "moat needs unprivileged user namespaces; run 'moat doctor' to see why they are unavailable"}
	}
	if c.jobs != nil {
		c.jobs.pgid = p.Pgid()
	}
	if s.Net == nil {
		return p, nil
	}
	files, err := p.NetSockets()
	if err != nil {
		// Init failed before opening them; its report says why.
		p.Kill()
		if res, werr := p.Wait(); werr == nil && res.Stage != "" {
			return nil, &SetupError{Stage: res.Stage, Err: errors.New(res.Error), HintText: res.Hint}
		}
		return nil, &SetupError{Stage: "network", Err: err}
	}
	ns, err := serveNet(files, s.Net, srv)
	if err != nil {
		p.Kill()
		p.Wait()
		return nil, err
	}
	return &netProcess{Process: p, ns: ns}, nil
}

// netProcess is a sandbox whose network the supervisor serves until it ends.
type netProcess struct {
	*launch.Process
	ns *netServer
}

func (p *netProcess) Wait() (spec.Result, error) {
	res, err := p.Process.Wait()
	p.ns.close()
	return res, err
}
