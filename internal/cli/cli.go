// Package cli implements moat's command line: one file per subcommand, each returning
// an error that Run prints as "moat: error: ..." and "moat: hint: ..." lines.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/moat-sandbox/moat/sandbox"
)

// Exit codes, as container CLIs use them.
const (
	exitOK        = 0
	exitMoat      = 125 // moat itself failed: bad config, a layer that can't be applied
	exitNoExec    = 126 // the command exists but can't be executed
	exitNotFound  = 127 // the command was not found
	exitUsage     = 2   // bad command line for a non-run subcommand
	exitSignalOff = 128 // 128+N when the command died of signal N
)

type command struct {
	name   string
	usage  string
	run    func(args []string, io stdio) error
	hidden bool
}

// stdio is what a subcommand may use instead of the process's globals, for tests.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

func commands() []command {
	return []command{
		{name: "run", usage: "run [flags] -- CMD [ARGS...]   run CMD in the sandbox", run: runCmd},
		{name: "policy", usage: "policy [flags]                  print the effective policy and where each rule comes from", run: policyCmd},
		{name: "explain", usage: "explain [flags] PATH|HOST[:PORT]|env:NAME   say what the sandbox allows, by which rule, and how to change it", run: explainCmd},
		{name: "doctor", usage: "doctor                          report what this host can enforce", run: doctorCmd},
		{name: "version", usage: "version                         print moat's version", run: versionCmd},
		{name: "connect", usage: "connect HOST PORT               relay stdin/stdout to HOST:PORT through the sandbox's proxy", run: connectCmd},
	}
}

// Version is set at build time with -ldflags "-X .../internal/cli.Version=...".
var Version = "dev"

// Run runs the moat command line and returns the process exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The re-executed sandbox stages never return from here.
	sandbox.Init()

	std := stdio{in: stdin, out: stdout, err: stderr}
	if len(args) < 2 || args[1] == "-h" || args[1] == "--help" || args[1] == "help" {
		usage(stdout)
		if len(args) < 2 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[1] {
			return report(stderr, c.run(args[2:], std))
		}
	}
	return report(stderr, usageError{fmt.Errorf("unknown command %q", args[1]), "run 'moat help' for the list of commands"})
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "moat: a sandbox for coding agents and the tools they run")
	fmt.Fprintln(w, "\nusage:")
	for _, c := range commands() {
		if !c.hidden {
			fmt.Fprintln(w, "  moat "+c.usage)
		}
	}
	fmt.Fprintln(w, "\nRun 'moat run -h' for run's flags.")
}

// exitCode is an error that carries the exit status moat should end with, and prints
// nothing: the command's own status, passed through.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// usageError is a command-line mistake.
type usageError struct {
	err  error
	hint string
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Hint() string  { return e.hint }
func (e usageError) Unwrap() error { return e.err }

// report prints err, if any, and returns the exit code it stands for.
func report(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	fmt.Fprintf(stderr, "moat: error: %v\n", err)
	for _, h := range hints(err) {
		fmt.Fprintf(stderr, "moat: hint: %s\n", h)
	}
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var ee *sandbox.ExecError
	if errors.As(err, &ee) {
		if ee.NotFound() {
			return exitNotFound
		}
		return exitNoExec
	}
	return exitMoat
}

// hints collects the Hint() of every error in err's chain, outermost first.
func hints(err error) []string {
	var out []string
	seen := map[string]bool{}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if h, ok := e.(interface{ Hint() string }); ok {
			for _, line := range strings.Split(h.Hint(), "\n") {
				if line != "" && !seen[line] {
					seen[line] = true
					out = append(out, line)
				}
			}
		}
	}
	return out
}

func versionCmd(args []string, std stdio) error {
	fmt.Fprintln(std.out, "moat", Version)
	return nil
}
