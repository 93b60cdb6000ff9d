package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/policy"
	"github.com/moat-sandbox/moat/sandbox"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runCmd(args []string, std stdio) error {
	fset := flag.NewFlagSet("moat run", flag.ContinueOnError)
	fset.SetOutput(io.Discard) // errors are reported once, by Run
	var (
		pf     policyFlags
		debug  bool
		events string
		direct bool
	)
	pf.register(fset)
	fset.BoolVar(&debug, "debug", false, "describe the sandbox on stderr as it is built")
	fset.StringVar(&events, "events", "", "append the run's events (each connection and lookup allowed or refused, each read of a hidden path) to `FILE` as JSON lines")
	fset.BoolVar(&direct, "direct", false, "run in the direct mode (Landlock, seccomp and supervision, no namespaces) even where user namespaces work: weaker, for trying that mode out; its note says what it doesn't enforce")
	fset.BoolVar(&pf.flags.RequireNamespaces, "no-fallback", false, "where user namespaces are unavailable, fail instead of running in the direct mode (as \"moat\": {\"requireNamespaces\": true})")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(std.out, "usage: moat run [flags] -- CMD [ARGS...]")
			fmt.Fprintln(std.out, "\nRuns CMD and all it starts in a sandbox. Without --config, moat reads")
			fmt.Fprintln(std.out, "$XDG_CONFIG_HOME/moat/config.jsonc, and without that uses the default: the")
			fmt.Fprintln(std.out, "current directory writable, the rest readable except credential stores,")
			fmt.Fprintln(std.out, "nothing else writable, secret-looking variables removed, and no host reachable")
			fmt.Fprintln(std.out, "through moat's proxy until --allow-net or the config allows it.")
			fmt.Fprintln(std.out, "\nflags:")
			fset.SetOutput(std.out)
			fset.PrintDefaults()
			return nil
		}
		return runError{fmt.Errorf("run: %w", err), "usage: moat run [flags] -- CMD [ARGS...]; 'moat run -h' lists the flags"}
	}
	argv := fset.Args()
	if len(argv) == 0 {
		return runError{errors.New("no command given"), "usage: moat run [flags] -- CMD [ARGS...]"}
	}

	// Registering the signals takes a round trip to the runtime's signal thread per
	// signal (about 0.2 ms): do it while the policy loads, and wait for it before
	// the sandbox starts, from when on moat relays them instead of dying of them.
	sigs := make(chan os.Signal, 8)
	notified := make(chan struct{})
	go func() {
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
		close(notified)
	}()
	unnotify := func() { <-notified; signal.Stop(sigs) } // when nothing ran
	lp, err := pf.load()
	if err != nil {
		unnotify()
		return err
	}
	pol := lp.Policy
	var logFile io.Writer
	if events != "" {
		f, err := os.OpenFile(events, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			unnotify()
			return runError{fmt.Errorf("open event log: %w", err), "pass a file in a directory you can write"}
		}
		defer f.Close()
		logFile = f
	}
	log := newEventLog(logFile)
	log.pol = pol

	cmd := sandbox.Command(pol, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = std.in, std.out, std.err
	cmd.Events = log.add
	cmd.FileEvents = log.addFile
	cmd.Notice = std.err
	cmd.Direct = direct
	if exe, err := os.Executable(); err == nil {
		cmd.ProxyConnector = exe
	}
	if debug {
		cmd.Debug = std.err
	}
	tty := foregroundTerminal()
	if tty != nil {
		defer tty.Close()
		// The command runs as the terminal's foreground job.
		cmd.TTY = tty
		if in, ok := std.in.(*os.File); ok && foregroundOfTerminal(in) {
			// Connections no rule decides are asked about at the terminal when the
			// person types there; otherwise they are refused.
			a := &approver{cmd: cmd, pol: pol, config: pol.UserConfig}
			cmd.Approve = a.ask
		}
	}
	<-notified
	// No signal.Stop on the way out: it waits for the signal thread to go idle
	// (about 0.2 ms), and moat exits when runCmd returns.
	if err := cmd.Start(); err != nil {
		unnotify()
		return err
	}
	go func() {
		for sig := range sigs {
			_ = cmd.Signal(sig)
		}
	}()
	err = cmd.Wait()
	log.summary(std.err)
	var ee *sandbox.ExitError
	if errors.As(err, &ee) {
		if ee.Signal == 0 {
			suggestProfile(std.err, pol, argv[0], ee.Code)
		}
		return exitCode(ee.Code)
	}
	return err
}

// suggestProfile names the built-in profile made for a command that failed without
// it: a toolchain that couldn't write its caches (go build, npm install) or an agent
// that couldn't write its state fails with an error of its own, which moat can't
// see, so it says what would make those writable.
func suggestProfile(w io.Writer, pol *policy.Policy, argv0 string, code int) {
	name := filepath.Base(argv0)
	info, ok := policy.ProfileFor(name)
	if !ok {
		return
	}
	for _, p := range pol.Profiles {
		if p.Name == info.Name {
			return
		}
	}
	fmt.Fprintf(w, "moat: %s exited with status %d; if it failed to write outside the workspace, the %s profile may be what it needs (%s): moat run --profile %s -- %s ...\n",
		name, code, info.Name, info.Description, info.Name, name)
}

// runError is a mistake on run's command line: exit 125, as container CLIs do.
type runError struct {
	err  error
	hint string
}

func (e runError) Error() string { return e.err.Error() }
func (e runError) Hint() string  { return e.hint }

// loadPolicy reads the settings file (--config, else the user's config if it
// exists, else the built-in default) and applies the flags.
// foregroundOfTerminal reports whether f is moat's controlling terminal and moat's
// process group its foreground.
// foregroundTerminal opens this process's controlling terminal when this
// process is in its foreground; nil when there is none or this process runs in
// the background.
func foregroundTerminal() *os.File {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	if !foregroundOfTerminal(tty) {
		tty.Close()
		return nil
	}
	return tty
}

func foregroundOfTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}
