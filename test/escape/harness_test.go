// Package escape_test attacks a real "moat run" the way a hostile agent would, and
// judges every attempt by evidence outside the sandbox: a file on the host, a host
// listener's log, a host process still alive. Each attack has a positive control, the
// same action where it must succeed, so a broken harness can't pass silently.
//
// The tests build moat once (or use $MOAT_BIN) and run as root or as any other user:
//
//	go test ./test/escape/ -v
//	go test -c -o /tmp/escape.test ./test/escape && MOAT_BIN=/tmp/moat su moattest -c '/tmp/escape.test -test.v'
//
// MOAT_ESCAPE_KEEP=1 keeps the host directories (workspaces, loot) for inspection.
//
// Host directories are made under $MOAT_ESCAPE_DIR, else under os.TempDir() unless
// that is one of the directories the sandbox replaces with a private tmpfs (/tmp,
// /var/tmp, /run, /dev/shm), else under the home directory: a host directory the
// sandbox can't see would make every secret-read test pass for the wrong reason.
package escape_test

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testmoat"
)

//go:embed testdata
var testdata embed.FS

var (
	moatBin string // the moat binary under test
	baseDir string // every test's host directories live under it
)

// runTimeout bounds one moat run; it is a hang guard, never a verdict.
const runTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	var cleanup func()
	var err error
	baseDir, moatBin, cleanup, err = testmoat.Setup("escape", "MOAT_ESCAPE_DIR", "MOAT_ESCAPE_KEEP")
	defer cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// box is one test's host directories: a workspace, a fake home, a private runtime
// dir, and room for tools and evidence outside the workspace.
type box struct {
	t    *testing.T
	root string // readable in the sandbox, not writable
	ws   string // the workspace: moat runs here
	home string // HOME inside the sandbox
	xdg  string // XDG_RUNTIME_DIR: moat's state dir for placeholders lives here
}

func newBox(t *testing.T) *box {
	t.Helper()
	d := testmoat.NewDirs(t, baseDir, 16)
	return &box{t: t, root: d.Root, ws: d.WS, home: d.Home, xdg: d.XDG}
}

// tool writes an embedded testdata file next to the workspace and returns its path.
func (b *box) tool(name string) string {
	b.t.Helper()
	data, err := testdata.ReadFile("testdata/" + name)
	if err != nil {
		b.t.Fatal(err)
	}
	dir := filepath.Join(b.root, "tools")
	testmoat.Mkdir(b.t, dir)
	p := filepath.Join(dir, name)
	writeFile(b.t, p, string(data), 0o644)
	return p
}

// opts describe one moat run.
type opts struct {
	script string   // run as: sh -c script
	argv   []string // or this command
	config string   // settings JSON, written outside the workspace and passed with --config
	flags  []string // more moat run flags
	env    []string // KEY=VALUE, added to (and overriding) the base environment
	stdin  io.Reader
	extra  []*os.File // passed as fds 3, 4, ...
	dir    string     // working directory; the workspace when empty
}

type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s\n--- stderr:\n%s", r.code, r.stdout, r.stderr)
}

// env is the base environment of every run: nothing of the test's own.
func (b *box) env(extra ...string) []string {
	return append([]string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + b.home,
		"XDG_RUNTIME_DIR=" + b.xdg,
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CEILING_DIRECTORIES=" + b.root,
		"GIT_AUTHOR_NAME=moat test", "GIT_AUTHOR_EMAIL=moat@example.invalid",
		"GIT_COMMITTER_NAME=moat test", "GIT_COMMITTER_EMAIL=moat@example.invalid",
	}, extra...)
}

// command returns the exec.Cmd of "moat run" for o, not started.
func (b *box) command(ctx context.Context, o opts) *exec.Cmd {
	b.t.Helper()
	args := append([]string{"run"}, testmoat.SettingsFlags(b.t, b.root, o.config)...)
	args = append(args, o.flags...)
	args = append(args, "--")
	if o.argv != nil {
		args = append(args, o.argv...)
	} else {
		args = append(args, "sh", "-c", o.script)
	}
	cmd := exec.CommandContext(ctx, moatBin, args...)
	cmd.Dir = o.dir
	if cmd.Dir == "" {
		cmd.Dir = b.ws
	}
	cmd.Env = b.env(o.env...)
	cmd.Stdin = o.stdin
	cmd.ExtraFiles = o.extra
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs moat and returns its output and exit status (128+N for a signal).
func (b *box) run(o opts) result {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := b.command(ctx, o)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), code: testmoat.ExitStatus(cmd, err)}
	if ctx.Err() != nil {
		b.t.Fatalf("moat run did not end within %v:\n%s", runTimeout, r)
	}
	if r.code == -1 {
		b.t.Fatalf("moat run: %v\n%s", err, r)
	}
	return r
}

// host runs a command outside the sandbox (a positive control, or the user's next
// step), in dir, with the same base environment.
func (b *box) host(dir string, extra []*os.File, name string, args ...string) result {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = b.env()
	cmd.ExtraFiles = extra
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), code: testmoat.ExitStatus(cmd, err)}
	if ctx.Err() != nil || r.code == -1 {
		b.t.Fatalf("host %s %q: %v\n%s", name, args, err, r)
	}
	return r
}

// git runs git on the host in dir and fails the test if it fails.
func (b *box) git(dir string, args ...string) string {
	b.t.Helper()
	r := b.host(dir, nil, "git", args...)
	if r.code != 0 {
		b.t.Fatalf("host git %q in %s:\n%s", args, dir, r)
	}
	return r.stdout
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	testmoat.Mkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// filesContaining walks dir on the host (never following symlinks) and returns the
// regular files whose content contains tok, except those named in skip.
func filesContaining(t *testing.T, dir, tok string, skip ...string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		for _, s := range skip {
			if p == s {
				return nil
			}
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(tok)) {
			hits = append(hits, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// shq quotes s for sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func isRoot() bool { return os.Getuid() == 0 }

// TestEscape runs every attack as a named subtest.
func TestEscape(t *testing.T) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"writes_outside_workspace", testWritesOutside},
		{"secret_reads", testSecretReads},
		{"protected_paths", testProtectedPaths},
		{"git_redirects", testGitRedirects},
		{"git_dir_links", testGitDirLinks},
		{"dangling_protected_links", testDanglingProtectedLinks},
		{"writable_home_autorun", testWritableHomeAutorun},
		{"rule_paths", testRulePaths},
		{"inherited_descriptors", testInheritedFDs},
		{"socket_stdio", testSocketStdio},
		{"state_dir", testStateDir},
		{"host_processes", testHostProcesses},
		{"escaping_supervision", testSupervision},
		{"terminal_injection", testTerminalInjection},
		{"host_sockets", testHostSockets},
		{"privileges_and_network", testPrivilegesAndNetwork},
		{"kernel_surface", testKernelSurface},
		{"exit_status_and_signals", testExitStatus},
		{"everyday_controls", testEveryday},
		{"environment_secrets", testEnvironmentSecrets},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t)
		})
	}
}

// knownGap skips a test of a weakness moat has today, naming it, so the suite
// stays green while the gap is tracked; MOAT_ESCAPE_STRICT=1 runs it anyway.
func knownGap(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("MOAT_ESCAPE_STRICT") != "1" {
		t.Skip("KNOWN GAP, not enforced yet: " + reason)
	}
}
