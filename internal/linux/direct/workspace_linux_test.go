package direct_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/linux/connbroker"
)

// TestWorkspaceRoot: the guarded workspace root (it holds .git/hooks, .vscode, .env) still
// takes new files and directories, renames and removals, through the entry broker; new
// files are readable again (the root is read-guarded too, because of .env).
func TestWorkspaceRoot(t *testing.T) {
	f := newFixture(t)
	o := f.run(t, connbroker.Policy{}, `
cd "$W"
echo new > newtop && cat newtop
echo more >> newtop
mkdir -p build/deep && echo out > build/deep/out && cat build/deep/out
mv newtop renamed && cat renamed
cp renamed copy && rm copy
ln renamed hardlink && cat hardlink
ln -s renamed symlink && cat symlink
truncate -s 2 renamed
mkdir gone && rmdir gone
mv build/deep build/deeper && ls build
mv build src/ 2>/dev/null || echo exdev-fallback-ok
mkdir -p "$TMPDIR/x" && echo tmp > "$TMPDIR/x/f" && mv "$TMPDIR/x/f" "$W/from-tmp" && cat from-tmp
: > .git/new-in-git && echo ok-in-git
exit 0
`)
	if o.res.ExitCode != 0 {
		t.Errorf("exit %d; stderr: %s", o.res.ExitCode, o.stderr)
	}
	for p, want := range map[string]string{
		"renamed":              "ne",
		"hardlink":             "ne",
		"build/deeper/out":     "out\n",
		"from-tmp":             "tmp\n",
		".git/new-in-git":      "",
		"src/build/deeper/out": "<missing>",
	} {
		got := read(t, filepath.Join(f.work, p))
		if strings.HasPrefix(got, "<") {
			got = "<missing>"
		}
		if want == "<missing>" && got != "<missing>" {
			// mv across the zone boundary is done by copying: either place is fine
			continue
		}
		if got != want && !(p == "build/deeper/out" && read(t, filepath.Join(f.work, "src/build/deeper/out")) == "out\n") {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
	for _, gone := range []string{"newtop", "copy", "gone"} {
		if exists(filepath.Join(f.work, gone)) {
			t.Errorf("%s still exists", gone)
		}
	}
	if fi, err := os.Lstat(filepath.Join(f.work, "symlink")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("symlink: %v", err)
	}
	if !strings.Contains(o.stdout, "new\nout\nnew\nmore\n") {
		t.Errorf("stdout: %q; stderr: %s", o.stdout, o.stderr)
	}
}

// TestGit: everyday git works in the sandbox while hooks and config stay untouched.
func TestGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	f := newFixture(t)
	os.RemoveAll(filepath.Join(f.work, ".git"))
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = f.work
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1", "HOME="+f.home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q", "-b", "main")
	git("add", "README", "src")
	git("commit", "-q", "-m", "initial")
	hooks := filepath.Join(f.work, ".git", "hooks")
	cfgBefore := read(t, filepath.Join(f.work, ".git", "config"))
	hooksBefore, _ := os.ReadDir(hooks)
	o := f.run(t, connbroker.Policy{}, `
export GIT_AUTHOR_NAME=s GIT_AUTHOR_EMAIL=s@s GIT_COMMITTER_NAME=s GIT_COMMITTER_EMAIL=s@s GIT_CONFIG_NOSYSTEM=1
cd "$W"
echo change >> README && git add README && git commit -q -m sandboxed && echo committed
git checkout -q -b feature && echo branched
echo feature > feature.txt && git add feature.txt && git commit -q -m feature && echo committed2
git config core.hooksPath /tmp/evil 2>/dev/null && echo config-written
git config alias.x '!evil' 2>/dev/null && echo alias-written
printf '#!/bin/sh\necho pwned\n' > .git/hooks/pre-commit 2>/dev/null && echo hook-written
git gc -q 2>/dev/null; echo gc-done
git status --short
exit 0
`)
	t.Logf("stdout: %s\nstderr: %s", o.stdout, o.stderr)
	for _, want := range []string{"committed\n", "branched\n", "committed2\n"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("git in the sandbox: no %q", want)
		}
	}
	for _, bad := range []string{"config-written", "alias-written", "hook-written"} {
		if strings.Contains(o.stdout, bad) {
			t.Errorf("sandbox reports %s", bad)
		}
	}
	if log := git("log", "--format=%s", "feature"); log != "feature\nsandboxed\ninitial\n" {
		t.Errorf("host git log: %q", log)
	}
	if got := read(t, filepath.Join(f.work, ".git", "config")); got != cfgBefore {
		t.Errorf(".git/config changed:\n%s", got)
	}
	hooksAfter, _ := os.ReadDir(hooks)
	if len(hooksAfter) != len(hooksBefore) {
		t.Errorf("hooks dir changed: %d entries, was %d", len(hooksAfter), len(hooksBefore))
	}
}

// TestRaces rewrites the path of open(O_CREAT), rename and mkdir from another thread while
// the call is in flight, between a name the broker makes in the zone and a protected one.
// The broker reads the path once and acts on what it read; a call it leaves to the kernel
// meets Landlock, which refuses the protected name however the path reads by then.
func TestRaces(t *testing.T) {
	f := newFixture(t)
	exe, _ := os.Executable()
	hooks := filepath.Join(f.work, ".git", "hooks")
	s := *f
	o := s.runArgv(t, connbroker.Policy{}, []string{exe}, []string{attackEnv + "=races"})
	t.Logf("attacker: %s %s", o.stdout, o.stderr)
	if o.res.ExitCode != 0 {
		t.Errorf("attacker exit %d", o.res.ExitCode)
	}
	for _, p := range []string{filepath.Join(hooks, "pre-commit"), filepath.Join(hooks, "post-checkout"), filepath.Join(f.work, "moved-hooks"), filepath.Join(f.work, ".git", "config.moved")} {
		if exists(p) {
			t.Errorf("%s exists after the race", p)
		}
	}
	if !exists(filepath.Join(hooks, "pre-commit.sample")) || read(t, filepath.Join(f.work, ".git", "config")) != "[core]\n" {
		t.Error("hooks or config changed in the race")
	}
	if !strings.Contains(o.stdout, "created=") || strings.Contains(o.stdout, "created=0 ") {
		t.Errorf("the race never created the allowed file: the test shows nothing: %s", o.stdout)
	}
}
