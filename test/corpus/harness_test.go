// Package corpus_test runs what a coding agent runs all day under a real "moat run"
// and judges each command by its effect on the host: the file in the workspace, the
// commit in the repository, the state file where the profile puts it. Three suites:
//
//   - TestCorpus: everyday commands (git, builds and tests, search, edits, archives,
//     package managers, shell features) with the default policy, in a scratch git
//     project. Each must succeed inside and leave its result on the host.
//   - TestSecretFiles and TestSecretEnv: every entry of the built-in secret table
//     (policy.SecretTable) and of the environment scrub table, probed with a decoy
//     holding a unique canary; the canary must appear in nothing the sandbox printed
//     or wrote. New table entries are probed without changing the tests.
//   - TestProfiles and TestAgents: every built-in profile's writable paths, denied
//     writes, passed variables and re-opened logins in a real run; and the agent CLIs
//     that install from the npm registry (claude, codex, gemini, opencode) started
//     under their profile, their state landing where the profile says.
//   - TestToolchainProfiles: go mod tidy and npm install through the registry with
//     the go and node profiles, their caches at the default places in the home.
//
// The tests build moat once (or use $MOAT_BIN) and run as root or as any other user:
//
//	go test ./test/corpus/ -v
//	go test -c -o /tmp/corpus.test ./test/corpus && MOAT_BIN=/tmp/moat su moattest -c '/tmp/corpus.test -test.v'
//
// Host directories are made under $MOAT_CORPUS_DIR, else under os.TempDir() unless
// the sandbox replaces it with a private tmpfs (/tmp), else under the home directory:
// a fake home the sandbox can't see would make the secret probes pass for the wrong
// reason. MOAT_CORPUS_KEEP=1 keeps them. The agent CLIs are installed once into
// $MOAT_TEST_AGENTS, else into the user's cache directory; go test -short skips them.
package corpus_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testmoat"
)

var (
	moatBin string // the moat binary under test
	baseDir string // every test's host directories live under it
)

// runTimeout bounds one moat run; it is a hang guard, never a verdict.
const runTimeout = 3 * time.Minute

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	var cleanup func()
	var err error
	baseDir, moatBin, cleanup, err = testmoat.Setup("corpus", "MOAT_CORPUS_DIR", "MOAT_CORPUS_KEEP")
	defer cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// box is one test's host directories: the workspace moat runs in, the fake home
// the sandbox gets as HOME, and a private runtime dir (moat keeps its placeholder
// record there, so runs of other tests and other users don't share it).
type box struct {
	t    *testing.T
	root string // readable in the sandbox, not writable
	ws   string // the workspace: moat runs here, writable by the default policy
	home string // HOME inside the sandbox; read-only by the default policy
	xdg  string // XDG_RUNTIME_DIR
}

func newBox(t *testing.T) *box {
	t.Helper()
	d := testmoat.NewDirs(t, baseDir, 20)
	return &box{t: t, root: d.Root, ws: d.WS, home: d.Home, xdg: d.XDG}
}

// opts describe one moat run.
type opts struct {
	script string   // run as: bash -c script (sh when bash is missing)
	argv   []string // or this command
	flags  []string // moat run flags before "--" (--profile, --allow-net)
	env    []string // KEY=VALUE, added to (and overriding) the base environment
	stdin  string
	dir    string // working directory; the workspace when empty
}

type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s\n--- stderr:\n%s", r.code, clip(r.stdout), clip(r.stderr))
}

// clip keeps failure messages readable when a command printed a lot.
func clip(s string) string {
	const max = 4000
	if len(s) <= max {
		return s
	}
	return s[:max/2] + fmt.Sprintf("\n[... %d bytes ...]\n", len(s)-max) + s[len(s)-max/2:]
}

// env is the base environment of every run and host command: nothing of the
// test's own, so the host's tokens and config never leak in by accident.
func (b *box) env(extra ...string) []string {
	return append([]string{
		"PATH=" + filepath.Dir(goBin()) + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + b.home,
		"XDG_RUNTIME_DIR=" + b.xdg,
		"LC_ALL=C",
		"TZ=UTC",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CEILING_DIRECTORIES=" + b.root,
		"GIT_AUTHOR_NAME=moat corpus", "GIT_AUTHOR_EMAIL=corpus@example.invalid",
		"GIT_COMMITTER_NAME=moat corpus", "GIT_COMMITTER_EMAIL=corpus@example.invalid",
	}, extra...)
}

// run runs "moat run" and returns its output and exit status (128+N for a signal).
func (b *box) run(o opts) result {
	b.t.Helper()
	args := append([]string{"run"}, o.flags...)
	args = append(args, "--")
	if o.argv != nil {
		args = append(args, o.argv...)
	} else {
		args = append(args, shell(), "-c", o.script)
	}
	dir := o.dir
	if dir == "" {
		dir = b.ws
	}
	return b.exec(dir, o.env, o.stdin, moatBin, args...)
}

// host runs a command outside the sandbox, with the same base environment: the
// evidence of what the sandboxed command did, or a test's setup.
func (b *box) host(dir string, name string, args ...string) result {
	b.t.Helper()
	return b.exec(dir, nil, "", name, args...)
}

func (b *box) exec(dir string, env []string, stdin, name string, args ...string) result {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = b.env(env...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), code: testmoat.ExitStatus(cmd, err)}
	if ctx.Err() != nil {
		b.t.Fatalf("%s %q did not end within %v:\n%s", name, args, runTimeout, r)
	}
	if r.code == -1 {
		b.t.Fatalf("%s %q: %v\n%s", name, args, err, r)
	}
	return r
}

// git runs git on the host in the workspace and fails the test if it fails.
func (b *box) git(args ...string) string {
	b.t.Helper()
	r := b.host(b.ws, "git", args...)
	if r.code != 0 {
		b.t.Fatalf("host git %q:\n%s", args, r)
	}
	return r.stdout
}

func shell() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "/bin/sh"
}

func goBin() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	testmoat.Mkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// filesContaining walks dir on the host (never following symlinks) and returns the
// regular files whose content or name contains tok, except those in skip.
func filesContaining(t *testing.T, dir, tok string, skip map[string]bool) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || skip[p] {
			return nil
		}
		if strings.Contains(d.Name(), tok) {
			hits = append(hits, p)
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		if data, err := io.ReadAll(f); err == nil && bytes.Contains(data, []byte(tok)) {
			hits = append(hits, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// have reports whether the host has a program on the tests' PATH.
func have(b *box, name string) bool {
	for _, d := range strings.Split(strings.TrimPrefix(b.env()[0], "PATH="), ":") {
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}

// shq quotes s for sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
