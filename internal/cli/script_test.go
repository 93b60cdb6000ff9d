package cli_test

// The scripts in testdata/script run the real moat command line: this test binary
// stands in for the moat binary (testscript.Main puts a copy of it on the scripts'
// PATH as "moat") and for moat's re-executed init stage (sandbox.Init in TestMain).
//
//	go test ./internal/cli -run TestScript/run_exit_status -v
//
// Each script's $WORK is the workspace moat runs in, and $HOME a fake home next to
// it, outside the workspace. Both live under $MOAT_SCRIPT_DIR, else os.TempDir()
// unless the sandbox replaces that with a private tmpfs, else the home directory:
// a host directory the sandbox can't see would make every "not written" check pass
// for the wrong reason. MOAT_SCRIPT_KEEP=1 keeps them for inspection.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/moat-sandbox/moat/internal/cli"
	"github.com/moat-sandbox/moat/internal/linux/fusemask"
	"github.com/moat-sandbox/moat/internal/linux/probe"
	"github.com/moat-sandbox/moat/internal/testmoat"
	"github.com/moat-sandbox/moat/sandbox"
)

// baseDir holds every script's work and home directories.
var baseDir string

func TestMain(m *testing.M) {
	// The sandbox re-executes this binary as "moat-init __moat_init"; that stage
	// never returns from here.
	sandbox.Init()
	testscript.Main(scriptMain{m}, map[string]func(){
		"moat": func() { os.Exit(cli.Run(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// scriptMain makes and removes baseDir around the tests, in the top-level test
// process only (testscript.Main exits without returning).
type scriptMain struct{ m *testing.M }

func (s scriptMain) Run() int {
	root, err := testmoat.PickRoot("MOAT_SCRIPT_DIR")
	if err == nil {
		baseDir, err = os.MkdirTemp(root, "moat-script-")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "script tests:", err)
		return 1
	}
	if os.Getenv("MOAT_SCRIPT_KEEP") != "" {
		fmt.Fprintln(os.Stderr, "script tests: keeping", baseDir)
	} else {
		defer os.RemoveAll(baseDir)
	}
	return s.m.Run()
}

func TestScript(t *testing.T) {
	// A fresh root per run: testscript names work directories after the scripts.
	root, err := os.MkdirTemp(baseDir, "run-")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		WorkdirRoot:         root,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup:               setupScript,
		Condition:           condition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":       cmdExits,
			"needsandbox": cmdNeedSandbox,
		},
	})
}

// setupScript gives each script a fake home outside $WORK (moat refuses its default
// policy in the home directory or above it), its own runtime dir, git identity,
// and $RUNID, a random name for host paths outside $WORK such as /tmp/$RUNID.
func setupScript(env *testscript.Env) error {
	home := env.WorkDir + "-home"
	xdg := env.WorkDir + "-xdg"
	if err := os.Mkdir(home, 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(xdg, 0o700); err != nil {
		return err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	tok := "moat-script-" + hex.EncodeToString(b[:])
	env.Defer(func() {
		// Whatever a failed check left in the host's shared directories.
		for _, dir := range append([]string{"/", "/etc"}, testmoat.PrivateInSandbox...) {
			os.Remove(filepath.Join(dir, tok))
		}
	})
	env.Values[tKey{}] = env.T()
	env.Vars = append(env.Vars,
		"HOME="+home,
		"XDG_RUNTIME_DIR="+xdg,
		"RUNID="+tok,
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(env.WorkDir),
		"GIT_AUTHOR_NAME=moat test", "GIT_AUTHOR_EMAIL=moat@example.invalid",
		"GIT_COMMITTER_NAME=moat test", "GIT_COMMITTER_EMAIL=moat@example.invalid",
	)
	return nil
}

// tKey is the key of the script's testscript.T in its Values, for skipping.
type tKey struct{}

func skip(ts *testscript.TestScript, reason string) {
	ts.Value(tKey{}).(testscript.T).Skip(reason)
}

// condition adds [root]: the test runs as uid 0; and [fuse]: this user can open
// the FUSE device.
func condition(cond string) (bool, error) {
	switch cond {
	case "root":
		return os.Geteuid() == 0, nil
	case "fuse":
		// moat run's FUSE masks, which report reads of hidden paths, work for this user.
		return fusemask.Check() == nil, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// cmdExits runs a program and checks its exit status, which testscript's exec
// does not: exits STATUS PROG [ARGS...]. The program must exit: being killed by a
// signal is a failure (moat reports its command's death by signal N as status
// 128+N, and never dies of it itself).
// stdout and stderr are kept for the next stdout/stderr checks, as after exec.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits STATUS PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad status %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			ts.Fatalf("%s was killed by signal %d (%v), want exit status %d", args[1], ws.Signal(), ws.Signal(), want)
		}
		got = ee.ExitCode()
	default:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

var (
	probeOnce sync.Once
	report    probe.Report
)

func hostReport() probe.Report {
	probeOnce.Do(func() { report = probe.Detect() })
	return report
}

// cmdNeedSandbox skips the script, naming what is missing and why, unless this
// host has the kernel features moat run can't start without (it refuses to, so the
// script could only check that refusal). A partial Landlock (ABI < 6) is not one:
// moat runs with the best ABI the kernel has.
func cmdNeedSandbox(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 0 {
		ts.Fatalf("usage: needsandbox")
	}
	var lacking []string
	for _, f := range hostReport().Lacking() {
		if f.Required && (f.Status == probe.Missing || f.Name == probe.UserNS) {
			lacking = append(lacking, fmt.Sprintf("%s (%s: %s)", f.Name, f.Status, f.Detail))
		}
	}
	if len(lacking) > 0 {
		skip(ts, "moat run can't start on this host, which lacks "+strings.Join(lacking, ", "))
	}
}
