package cli

import (
	"errors"
	"flag"
	"fmt"

	"io/fs"
	"os"
	"os/signal"
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
	fset.SetOutput(std.err)
	var (
		config string
		flags  policy.Flags
		debug  bool
	)
	fset.StringVar(&config, "config", "", "settings `FILE` (JSON with comments; srt's settings file works as is)")
	fset.Var((*listFlag)(&flags.AllowRead), "allow-read", "make `PATH` readable inside a denied area (repeatable)")
	fset.Var((*listFlag)(&flags.DenyRead), "deny-read", "hide `PATH` (repeatable; globs allowed)")
	fset.Var((*listFlag)(&flags.AllowWrite), "allow-write", "make `PATH` writable (repeatable)")
	fset.Var((*listFlag)(&flags.DenyWrite), "deny-write", "make `PATH` read-only, even inside a writable one (repeatable; globs allowed)")
	fset.BoolVar(&debug, "debug", false, "describe the sandbox on stderr as it is built")
	fset.Usage = func() {
		fmt.Fprintln(std.err, "usage: moat run [flags] -- CMD [ARGS...]")
		fmt.Fprintln(std.err, "\nRuns CMD and all it starts in a sandbox. Without --config, moat reads")
		fmt.Fprintln(std.err, "$XDG_CONFIG_HOME/moat/config.jsonc, and without that uses the default: the")
		fmt.Fprintln(std.err, "current directory writable, the rest readable, nothing else writable, no network.")
		fmt.Fprintln(std.err, "\nflags:")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return exitCode(exitMoat)
	}
	argv := fset.Args()
	if len(argv) == 0 {
		return runError{errors.New("no command given"), "usage: moat run [flags] -- CMD [ARGS...]"}
	}

	pol, err := loadPolicy(config, flags)
	if err != nil {
		return err
	}
	if n := len(pol.Network.AllowedDomains); n > 0 {
		fmt.Fprintf(std.err, "moat: note: %d allowed domain(s) in the settings are checked but not yet enforced: this version gives the sandbox no network at all\n", n)
	}

	cmd := sandbox.Command(pol, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = std.in, std.out, std.err
	if debug {
		cmd.Debug = std.err
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return err
	}
	fromTTY := foregroundOfTerminal()
	go func() {
		for sig := range sigs {
			// A terminal sends Ctrl-C and Ctrl-\ to the whole foreground process group,
			// the command included; relaying them again would deliver them twice.
			if fromTTY && (sig == syscall.SIGINT || sig == syscall.SIGQUIT) {
				continue
			}
			_ = cmd.Signal(sig)
		}
	}()
	err = cmd.Wait()
	var ee *sandbox.ExitError
	if errors.As(err, &ee) {
		return exitCode(ee.Code)
	}
	return err
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
func loadPolicy(config string, flags policy.Flags) (*policy.Policy, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("current directory: %w", err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, runError{fmt.Errorf("home directory: %w", err), "set HOME"}
	}
	var settings *policy.Settings
	if config == "" {
		user := policy.DefaultUserConfigPath(os.Getenv, home)
		if _, err := os.Stat(user); err == nil {
			config = user
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("user config %s: %w", user, err)
		}
	}
	if config != "" {
		if settings, err = policy.LoadFile(config); err != nil {
			return nil, err
		}
	}
	return policy.Compile(settings, flags, policy.Env{Cwd: cwd, Home: home})
}

// foregroundOfTerminal reports whether stdin is a terminal whose foreground process
// group is moat's own, which the command shares.
func foregroundOfTerminal() bool {
	pgrp, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}
