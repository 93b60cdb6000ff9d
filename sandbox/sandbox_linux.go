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
	if c.Direct {
		return c.startDirect(s, env, srv, "")
	}
	sp := c.takeSpawned()
	p, err := sp.p, sp.err
	if err == nil {
		if err := p.Send(s); err != nil {
			c.abandonTerminal()
			return nil, &SetupError{Stage: "spec", Err: err}
		}
	}
	if err != nil {
		if errno, ok := namespacesRefused(err); ok {
			if s.FUSE != "" {
				c.debugf("filesystem denial events unavailable: the direct mode has no covers to serve; reads of hidden paths are refused, unreported")
			}
			return c.startDirect(s, env, srv, "creating one failed: "+errno.Error())
		}
		return nil, &SetupError{Stage: "namespaces", Err: err,
			HintText: "moat needs unprivileged user namespaces; run 'moat doctor' to see why they are unavailable"}
	}
	proc, err := c.serve(p, s, srv)
	if err != nil {
		c.abandonTerminal()
		return nil, err
	}
	if c.jobs != nil {
		c.jobs.begin(p.Signal)
	}
	return proc, nil
}

// abandonTerminal drops the pty of a sandbox that didn't start.
func (c *Cmd) abandonTerminal() {
	if c.jobs != nil {
		c.jobs.abandon()
		c.jobs = nil
	}
}

// serve serves the FUSE masks and the network of the started sandbox p.
func (c *Cmd) serve(p *launch.Process, s *spec.Spec, srv *proxy.Server) (process, error) {
	fs, err := c.serveFUSE(p, s)
	if err != nil {
		// Init failed before mounting them; its report says why.
		p.Kill()
		if res, werr := p.Wait(); werr == nil && res.Stage != "" {
			return nil, &SetupError{Stage: res.Stage, Err: errors.New(res.Error), HintText: res.Hint}
		}
		return nil, &SetupError{Stage: "mount", Err: err}
	}
	if s.Net == nil {
		if fs != nil {
			return &netProcess{Process: p, fuse: fs}, nil
		}
		return p, nil
	}
	files, err := p.NetSockets()
	if err != nil {
		// Init failed before opening them; its report says why.
		p.Kill()
		defer fs.close()
		if res, werr := p.Wait(); werr == nil && res.Stage != "" {
			return nil, &SetupError{Stage: res.Stage, Err: errors.New(res.Error), HintText: res.Hint}
		}
		return nil, &SetupError{Stage: "network", Err: err}
	}
	ns, err := serveNet(files, s.Net, srv)
	if err != nil {
		p.Kill()
		p.Wait()
		fs.close()
		return nil, err
	}
	return &netProcess{Process: p, ns: ns, fuse: fs}, nil
}

// netProcess is a sandbox whose network (and FUSE masks) the supervisor serves
// until it ends.
type netProcess struct {
	*launch.Process
	ns   *netServer
	fuse *fuseServer
}

func (p *netProcess) Wait() (spec.Result, error) {
	res, err := p.Process.Wait()
	p.ns.close()
	p.fuse.close()
	return res, err
}

// spawned is the namespace init Start spawns before it plans, so that the child's
// start (its Go runtime, and what init does before it needs the spec) overlaps with
// planning.
type spawned struct {
	p   *launch.Process
	err error
}

// spawn starts the namespace init now, before its spec exists. In its
// terminal's foreground the sandbox gets a pty of its own (jobControl); anywhere
// else a session of its own and no terminal (detachedStdio).
func (c *Cmd) spawn() {
	if c.Direct {
		return
	}
	// Not in a goroutine: a fork that runs while the plan is made costs the planning
	// a copy of every page it writes before the child execs, and more than it saves.
	sp := &spawned{}
	j, in, out, errw := c.terminalStdio()
	var o launch.Options
	if j != nil {
		o.Terminal, o.Stopped = j.slave, j.stopped
	}
	sp.p, sp.err = launch.Spawn(in, out, errw, o)
	if j != nil {
		j.started(sp.err == nil)
		if sp.err == nil {
			c.jobs = j
		}
	}
	c.spawned = sp
}

// takeSpawned hands over the init spawn started; nil when it didn't start one.
func (c *Cmd) takeSpawned() *spawned {
	sp := c.spawned
	c.spawned = nil
	return sp
}

// dropSpawned kills and reaps an init that Start spawned and didn't use, as when
// planning fails.
func (c *Cmd) dropSpawned() {
	if sp := c.takeSpawned(); sp != nil && sp.err == nil {
		sp.p.Kill()
		sp.p.Wait()
		c.abandonTerminal()
	}
}
