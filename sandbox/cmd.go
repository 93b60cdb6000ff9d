package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/moat-sandbox/moat/internal/spec"
	"github.com/moat-sandbox/moat/policy"
	"github.com/moat-sandbox/moat/proxy"
)

// Cmd is a command to run in a sandbox, in the manner of os/exec.Cmd.
type Cmd struct {
	// Policy says what the command may do. Required.
	Policy *policy.Policy
	// Args holds the command and its arguments; Args[0] is looked up in the
	// sandbox, with the PATH of Env.
	Args []string
	// Env is the command's environment; nil means this process's. The policy's
	// credentials.envVars rules are applied to it either way.
	Env []string
	// Dir is the command's working directory; empty means Policy.Cwd.
	Dir string
	// Stdin, Stdout and Stderr are passed as os/exec passes them: an *os.File
	// (a terminal, say) is given to the command as it is.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Debug, when set, receives a description of the sandbox as it is built.
	Debug io.Writer
	// Notice receives one line when the sandbox is weaker than the namespace mode:
	// on a host where user namespaces are unavailable, the command runs in the
	// direct mode, and the line names what that mode can't enforce there; and
	// one for each bare git repository layout the command left in a work tree,
	// which moat disarms. nil means os.Stderr.
	Notice io.Writer
	// Direct runs the command in the direct mode (README "Hosts without user
	// namespaces") even where user namespaces work: for trying that mode out and
	// testing it. It is weaker than the namespace mode; Notice gets the line that
	// says how. The policy's requireNamespaces refuses it.
	Direct bool
	// Events, when set, is called for every connection and DNS lookup the proxy
	// allows or refuses, from many goroutines at once.
	Events func(Event)
	// FileEvents, when set, is called once for each distinct access to a path the
	// policy hides (a hidden file opened, a name looked up in a hidden directory, a
	// hidden directory listed), from one goroutine, the last time before Wait
	// returns; up to a bound, past which events count the rest (FileEvent.Count).
	// It needs the FUSE device, /dev/fuse, through which moat serves the hidden
	// paths' covers; where that can't be opened, and in the direct mode, which has
	// no covers, the paths are hidden all the same but FileEvents is not called
	// (Debug says why).
	FileEvents func(FileEvent)
	// ProxyConnector is a program that, run as "PROG connect HOST PORT" inside the
	// sandbox, relays its stdin and stdout through moat's proxy; git's ssh uses it
	// as its ProxyCommand. The moat CLI sets its own path; empty leaves
	// GIT_SSH_COMMAND as it is.
	ProxyConnector string
	// TTY, when set, is this process's controlling terminal, whose foreground it
	// is in. When Stdin and Stdout are that terminal, the command runs as its
	// foreground job, through a pseudo-terminal of its own, the way ssh and tmux
	// run one. The command gets the pty in place of each of Stdin, Stdout and
	// Stderr that is this terminal, and as its controlling terminal, in a
	// session of its own; never this terminal. This process, with the terminal
	// in raw mode, copies what is typed there to the pty (Ctrl-C, Ctrl-\ and
	// Ctrl-Z reach the command through the pty) and what the command writes
	// back, and only while it is the terminal's foreground job. When the command
	// stops, this process stops too, so the caller's shell gets the terminal
	// back; fg, or bg, continues both.
	//
	// A command that doesn't run as the terminal's foreground job (TTY unset,
	// this process in the background, or Stdin or Stdout not the terminal:
	// another program of the pipeline may read it) runs in a session of its own
	// and gets no terminal: standard input that is one becomes /dev/null, and
	// output to one is copied through a pipe.
	TTY *os.File
	// Approve, when set, is asked about each connection no rule decides (the
	// policy neither allows nor denies its host), one at a time, and its answer
	// applies: once, for the rest of the run, or denied for the rest of the run.
	// An allowed host is still resolved and its addresses guarded. It may block:
	// the connection waits. WithTerminal lets it ask on the terminal.
	Approve func(Request) (Approval, error)

	// fuseDevice replaces the FUSE device's path, for tests of the plain masks.
	fuseDevice string
	// explain is the policy plus the ignore files' rules, which file events'
	// hints come from; nil when no ignore file hides anything.
	explain *policy.Policy

	proc         process
	jobs         *jobControl
	placeholders *placeholders
	bareWatch    []watchedDir   // work trees to check for a bare layout when the sandbox is gone
	gitLinks     []gitLinkWatch // git dirs to check for planted links when the sandbox is gone
	spawned      *spawned       // the init Start spawned before planning, until start takes it
}

// process is the running sandbox, per platform.
type process interface {
	Signal(syscall.Signal) error
	Kill() error
	Wait() (spec.Result, error)
}

// Command returns a Cmd that runs name with args under pol.
func Command(pol *policy.Policy, name string, args ...string) *Cmd {
	return &Cmd{Policy: pol, Args: append([]string{name}, args...)}
}

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Start builds the sandbox and starts the command in it.
func (c *Cmd) Start() error {
	if c.proc != nil {
		return errors.New("sandbox: already started")
	}
	if c.Policy == nil {
		return errors.New("sandbox: Cmd.Policy is nil")
	}
	if len(c.Args) == 0 || c.Args[0] == "" {
		return errors.New("sandbox: no command")
	}
	if err := checkStdio(c.Stdin, c.Stdout, c.Stderr); err != nil {
		return err
	}
	c.spawn()             // init starts while the plan is made
	defer c.dropSpawned() // unless Start fails before it is given its spec
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	env, removed := c.Policy.FilterEnv(env)
	dir := c.Dir
	if dir == "" {
		dir = c.Policy.Cwd
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	ph, err := lockPlaceholders()
	if err != nil {
		return err
	}
	o := planOptions{extraDeny: hostSockets(c.Policy, os.Environ()), createPlaceholders: true, record: ph.record, dirs: newDirCache(), stateDir: ph.dir}
	if c.FileEvents != nil && c.Events != nil {
		o.bait = baitSockets(c.Policy, os.Environ()) // only the FUSE masks report them
	}
	if o.denyRead, o.denyWrite, err = ignoreRules(c.Policy, o.dirs); err != nil {
		ph.release()
		return err
	}
	if len(o.denyRead) > 0 {
		// File events explain what the ignore files hide as moat explain does.
		q := *c.Policy
		q.DenyRead = append(append([]policy.Rule(nil), q.DenyRead...), o.denyRead...)
		c.explain = &q
	}
	if m, ok := resolvConfMount(); ok {
		o.files = append(o.files, m)
	}
	p, err := newPlan(c.Policy, o)
	if err != nil {
		ph.release() // removes what it made before it failed
		return err
	}
	ph.recorded()
	c.placeholders = ph
	c.bareWatch = p.bareWatch
	c.gitLinks = p.gitLinks
	// The network is always served: with nothing allowed, the proxy still answers
	// and says why each connection is refused.
	s := &spec.Spec{
		Argv:     c.Args,
		Env:      proxyEnv(env, nsProxyAddr, c.ProxyConnector),
		Dir:      dir,
		Mounts:   p.mounts,
		Writable: p.writable,
		Net:      &spec.Net{ProxyPort: ProxyPort, HostPorts: loopbackPorts(c.Policy)},
		FUSE:     c.fuseSpec(p.mounts),
		Debug:    c.Debug != nil,
	}
	srv := &proxy.Server{Check: checkHost(c.Policy), CheckName: checkName(c.Policy), Events: c.Events, HostAddrs: hostAddrs, IsLocal: isLocalAddr}
	if c.Approve != nil {
		a := newApprovals(c.Approve)
		srv.Ask = a.decide
		srv.Check = approvedHosts(srv.Check, a)
		srv.CheckName = approvedNames(srv.CheckName, a)
	}
	if c.Debug != nil {
		describe(c.Debug, s, p.notes)
		for _, r := range removed {
			what := "removed"
			if r.Masked {
				what = "masked"
			}
			fmt.Fprintf(c.Debug, "moat: debug: env %s %s (%s)\n", what, r.Name, r.Reason)
		}
	}
	proc, err := c.start(s, env, srv)
	if err != nil {
		c.placeholders.release()
		return err
	}
	c.proc = proc
	return nil
}

// Signal sends sig to the command (not to moat's init).
func (c *Cmd) Signal(sig os.Signal) error {
	if c.proc == nil {
		return errors.New("sandbox: not started")
	}
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("sandbox: unsupported signal %v", sig)
	}
	return c.proc.Signal(s)
}

// WithTerminal runs fn with the terminal (Cmd.TTY) to this process alone: fn
// gets a descriptor of its own, in the terminal's mode of the moment (raw), and
// nothing is copied between the terminal and the command's pty meanwhile (the
// command runs on; what it writes waits, and so does its read of the pty). It
// fails when the command doesn't run as the terminal's foreground job, or this
// job runs in the background or is stopped.
func (c *Cmd) WithTerminal(fn func(tty *os.File) error) error {
	if c.jobs == nil {
		return errNoTerminal
	}
	return c.jobs.withTerminal(fn)
}

// ForegroundJob reports whether the command runs as its terminal's foreground
// job through a pty of its own (Cmd.TTY): the terminal's Ctrl-C reaches it
// through the pty, and a signal this process gets is meant for it to relay.
func (c *Cmd) ForegroundJob() bool { return c.jobs != nil }

// Kill ends the sandbox and every process in it.
func (c *Cmd) Kill() error {
	if c.proc == nil {
		return errors.New("sandbox: not started")
	}
	return c.proc.Kill()
}

// Wait waits for the command to exit; when it does, every other process in the
// sandbox is killed. The error is nil when the command exited 0, an *ExitError
// when it exited otherwise or was killed by a signal, an *ExecError when it could not
// be started, and any other error when the sandbox could not be built.
func (c *Cmd) Wait() error {
	if c.proc == nil {
		return errors.New("sandbox: not started")
	}
	// The placeholders go as soon as no process of the sandbox is left, which the
	// namespace mode says while init is still exiting; the direct mode, after its
	// Wait. Not before: removing a placeholder on the host detaches the sandbox's
	// cover of it, and a live process of the sandbox could then create the path.
	release := sync.OnceFunc(func() {
		c.placeholders.release()
		disarmBareLayouts(c.bareWatch, c.notice())
		disarmGitLinks(c.gitLinks, c.notice())
	})
	// The terminal first: what release says is written in its own mode.
	done := func() {
		if c.jobs != nil {
			c.jobs.done()
		}
	}
	if e, ok := c.proc.(ender); ok {
		go func() { <-e.Ended(); done(); release() }()
	}
	res, err := c.proc.Wait()
	done()
	release() // waits for the goroutine's, if that one started first
	if err != nil {
		return err
	}
	switch {
	case res.Stage == "exec":
		return &ExecError{Name: c.Args[0], Err: errors.New(res.Error), Errno: syscall.Errno(res.Errno)}
	case res.Stage != "":
		return &SetupError{Stage: res.Stage, Err: errors.New(res.Error), HintText: res.Hint}
	case res.ExitCode != 0:
		return &ExitError{Code: res.ExitCode, Signal: syscall.Signal(res.Signal)}
	}
	return nil
}

// ender is a sandbox that says, possibly before its Wait returns, when none of its
// processes is left (launch.Process.Ended).
type ender interface {
	Ended() <-chan struct{}
}

// notice is where lines about the run itself go: Notice, or os.Stderr.
func (c *Cmd) notice() io.Writer {
	if c.Notice == nil {
		return os.Stderr
	}
	return c.Notice
}

func describe(w io.Writer, s *spec.Spec, notes []string) {
	fmt.Fprintf(w, "moat: debug: command %q in %s\n", s.Argv, s.Dir)
	for _, m := range s.Mounts {
		fmt.Fprintf(w, "moat: debug: %-11s %s  (%s)\n", m.Op, m.Path, m.Reason)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "moat: debug: note: %s\n", n)
	}
}
