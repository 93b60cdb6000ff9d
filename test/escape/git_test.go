package escape_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testmoat"
)

// testGitRedirects: files that tell git where a repository's git dir is, or that
// make a directory a repository at all, are as dangerous as .git/config: rewritten
// or created by the sandbox, they send the user's next git command to a config the
// sandbox wrote, whose core.fsmonitor runs on git status.
func testGitRedirects(t *testing.T) {
	// The workspace is a linked worktree (git worktree add): its .git is a file
	// naming the admin dir in the main repository.
	t.Run("worktree_gitfile", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		main := filepath.Join(b.root, "main")
		gitInitCommit(b, main)
		wt := filepath.Join(b.root, "wt")
		b.git(main, "worktree", "add", "-q", "-b", "feature", wt)
		before := testmoat.ReadFile(t, filepath.Join(wt, ".git"))
		pwn, env := payloadEnv(b)
		r := b.run(opts{dir: wt, flags: []string{"--allow-write", wt}, env: env, script: evilGitDir("evil") + `
echo "gitdir: evil" > .git
echo ok > normal
`})
		if testmoat.ReadFile(t, filepath.Join(wt, "normal")) != "ok\n" || !testmoat.Exists(filepath.Join(wt, "evil", "config")) {
			t.Fatalf("control: writes in the worktree did not land on the host:\n%s", r)
		}
		if got := testmoat.ReadFile(t, filepath.Join(wt, ".git")); got != before {
			t.Errorf("the sandbox rewrote the worktree's .git file: %q", got)
		}
		usersNextStep(b, wt)
		checkNotPwned(t, pwn)
	})

	// The user's global config sets a relative core.hooksPath (a team's
	// .githooks): git looks for hooks in that directory of every work tree.
	t.Run("global_relative_hookspath", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		writeFile(t, filepath.Join(b.home, ".gitconfig"), "[core]\n\thooksPath = .githooks\n", 0o644)
		gitInitCommit(b, b.ws)
		pwn, env := payloadEnv(b)
		r := b.run(opts{env: env, script: `mkdir -p .githooks
for h in pre-commit post-checkout; do printf '%s' "$HOOK" > .githooks/$h; chmod +x .githooks/$h; done
echo ok > normal
`})
		if testmoat.ReadFile(t, filepath.Join(b.ws, "normal")) != "ok\n" {
			t.Fatalf("control: a write in the work tree did not land on the host:\n%s", r)
		}
		usersNextStep(b, b.ws)
		checkNotPwned(t, pwn)
	})

	// core.hooksPath names a directory whose parent doesn't exist yet (the
	// global .github/hooks in a repository without .github; the repository's own
	// tools/hooks): the sandbox could create both.
	t.Run("hookspath_missing_parent", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		writeFile(t, filepath.Join(b.home, ".gitconfig"), "[core]\n\thooksPath = .github/hooks\n", 0o644)
		gitInitCommit(b, b.ws)
		sub := filepath.Join(b.ws, "sub")
		gitInitCommit(b, sub)
		b.git(sub, "config", "core.hooksPath", "tools/hooks")
		pwn, env := payloadEnv(b)
		r := b.run(opts{env: env, script: `for d in .github/hooks sub/tools/hooks; do
	mkdir -p $d
	for h in pre-commit post-checkout; do printf '%s' "$HOOK" > $d/$h; chmod +x $d/$h; done
done
mkdir -p .github/workflows && echo ok > .github/workflows/ci.yml
echo ok > normal
`})
		if testmoat.ReadFile(t, filepath.Join(b.ws, "normal")) != "ok\n" {
			t.Fatalf("control: a write in the work tree did not land on the host:\n%s", r)
		}
		if !testmoat.Exists(filepath.Join(b.ws, ".github", "workflows", "ci.yml")) {
			t.Errorf("control: the command could not create .github/workflows next to the protected hooks dir:\n%s", r)
		}
		usersNextStep(b, b.ws)
		usersNextStep(b, sub)
		checkNotPwned(t, pwn)
	})

	// A bare repository inside the workspace (a local remote made before the
	// run): git runs its hooks on a push to it, and reads its config.
	t.Run("bare_repo_in_workspace", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		gitInitCommit(b, b.ws)
		b.git(b.ws, "clone", "-q", "--bare", ".", "remote.git")
		pwn, env := payloadEnv(b)
		r := b.run(opts{env: env, script: `for h in pre-receive update post-receive post-update; do
	printf '%s' "$HOOK" > remote.git/hooks/$h; chmod +x remote.git/hooks/$h
done
git -C remote.git config core.fsmonitor "$FSMON"
echo ok > normal
`})
		if testmoat.ReadFile(t, filepath.Join(b.ws, "normal")) != "ok\n" {
			t.Fatalf("control: a write in the work tree did not land on the host:\n%s", r)
		}
		b.host(b.ws, nil, "git", "push", "-q", "remote.git", "HEAD:refs/heads/users-push")
		checkNotPwned(t, pwn)
	})

	// A submodule's work tree has a .git file naming .git/modules/<name>; git
	// status in the superproject looks into the submodule with its own config.
	t.Run("submodule_gitfile", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		repoWithSubmodule(b)
		before := testmoat.ReadFile(t, filepath.Join(b.ws, "lib", ".git"))
		pwn, env := payloadEnv(b)
		r := b.run(opts{env: env, script: evilGitDir("evil") + `
cp -r .git/modules/lib/objects .git/modules/lib/refs evil/ 2>/dev/null
echo "gitdir: ../evil" > lib/.git
echo ok > lib/normal
`})
		if testmoat.ReadFile(t, filepath.Join(b.ws, "lib", "normal")) != "ok\n" {
			t.Fatalf("control: a write in the submodule's work tree did not land on the host:\n%s", r)
		}
		if got := testmoat.ReadFile(t, filepath.Join(b.ws, "lib", ".git")); got != before {
			t.Errorf("the sandbox rewrote the submodule's .git file: %q", got)
		}
		usersNextStep(b, b.ws)
		checkNotPwned(t, pwn)
	})

	// The workspace is the main worktree of a repository with a linked worktree
	// elsewhere and extensions.worktreeConfig set: git reads
	// .git/worktrees/<id>/config.worktree as config in that worktree.
	t.Run("linked_worktree_config", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		gitInitCommit(b, b.ws)
		wt := filepath.Join(b.root, "wt")
		b.git(b.ws, "worktree", "add", "-q", "-b", "feature", wt)
		b.git(b.ws, "config", "extensions.worktreeConfig", "true")
		pwn, env := payloadEnv(b)
		r := b.run(opts{env: env, script: `
printf '[core]\n\tfsmonitor = "%s"\n' "$FSMON" > .git/worktrees/wt/config.worktree
echo ok > normal
`})
		if testmoat.ReadFile(t, filepath.Join(b.ws, "normal")) != "ok\n" {
			t.Fatalf("control: a workspace write did not land on the host:\n%s", r)
		}
		if p := filepath.Join(b.ws, ".git", "worktrees", "wt", "config.worktree"); testmoat.Exists(p) {
			t.Errorf("the sandbox wrote the linked worktree's config.worktree: %q", testmoat.ReadFile(t, p))
		}
		usersNextStep(b, wt)
		checkNotPwned(t, pwn)
	})

	// A workspace that is not a repository: with .git covered, the sandbox lays
	// out the workspace root itself as a git dir (HEAD, objects/, refs/, config
	// with core.worktree = .), which git accepts as a bare repository. moat moves
	// HEAD aside once the sandbox is gone.
	t.Run("bare_layout_in_non_repo", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		pwn, env := payloadEnv(b)
		r := b.run(opts{env: env, script: `
mkdir -p objects refs/heads && echo "ref: refs/heads/main" > HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = "%s"\n' "$FSMON" > config
echo ok > normal
`})
		if testmoat.ReadFile(t, filepath.Join(b.ws, "normal")) != "ok\n" || !testmoat.Exists(filepath.Join(b.ws, "config")) {
			t.Fatalf("control: workspace writes did not land on the host:\n%s", r)
		}
		checkBareDisarmed(t, b, r)
		b.host(b.ws, nil, "git", "status")
		checkNotPwned(t, pwn)
	})

	// A repository: the sandbox breaks its .git (the refs are writable: commits
	// need them), so that git no longer takes .git for a git dir and looks at the
	// workspace root itself, which the sandbox lays out as a bare repository.
	t.Run("bare_layout_in_repo", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		gitInitCommit(b, b.ws)
		pwn, env := payloadEnv(b)
		r := b.run(opts{env: env, script: `
mv .git/refs .git/refs.moved
mkdir -p objects refs/heads && echo "ref: refs/heads/main" > HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = "%s"\n' "$FSMON" > config
echo ok > normal
`})
		if testmoat.ReadFile(t, filepath.Join(b.ws, "normal")) != "ok\n" || !testmoat.Exists(filepath.Join(b.ws, ".git", "refs.moved")) {
			t.Fatalf("control: workspace writes did not land on the host:\n%s", r)
		}
		checkBareDisarmed(t, b, r)
		b.host(b.ws, nil, "git", "status")
		checkNotPwned(t, pwn)
	})

	// .git as a symlink to the git dir: the sandbox could repoint the link at a
	// git dir of its own. moat refuses to run and says how to replace the link
	// with a gitfile, which it protects; the control runs after that change.
	t.Run("dotgit_symlink", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		gitInitCommit(b, b.ws)
		if err := os.Rename(filepath.Join(b.ws, ".git"), filepath.Join(b.ws, ".realgit")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(".realgit", filepath.Join(b.ws, ".git")); err != nil {
			t.Fatal(err)
		}
		pwn, env := payloadEnv(b)
		attack := evilGitDir("evil") + `rm .git && ln -s evil .git; echo ran`
		r := b.run(opts{env: env, script: attack})
		if r.code != 125 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, "gitdir:") {
			t.Errorf("moat ran with a .git symlink in the workspace (want exit 125 and the gitfile hint):\n%s", r)
		}
		usersNextStep(b, b.ws)
		checkNotPwned(t, pwn)
		// Control: with a gitfile instead, the run works and git inside too.
		if err := os.Remove(filepath.Join(b.ws, ".git")); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(b.ws, ".git"), "gitdir: .realgit\n", 0o644)
		r = b.run(opts{env: env, script: `git commit -q --allow-empty -m inside && echo committed`})
		if r.code != 0 || !strings.Contains(r.stdout, "committed") {
			t.Errorf("control: with a gitfile, git inside failed:\n%s", r)
		}
	})
}

// testGitDirLinks: links planted in the git dir where git writes by opening a
// file (the reflog, COMMIT_EDITMSG, a whole logs/ directory) would make the
// user's next checkout and commit write outside the workspace: a reflog line
// that names a branch like "$(payload)" appended to ~/.bashrc. moat moves the
// new links aside once the sandbox is gone; the victims must stay as they were.
// The links sit inside logs/, at the git dir's top (one dangling), in place of
// logs/ itself, and in a linked work tree's own git dir (.git/worktrees/ID),
// where git writes that work tree's reflog and messages.
func testGitDirLinks(t *testing.T) {
	b := newBox(t)
	gitInitCommit(b, b.ws)
	b.git(b.ws, "branch", "side")
	b.git(b.ws, "branch", "side2")
	wt := filepath.Join(b.root, "linked")
	b.git(b.ws, "worktree", "add", "-q", wt, "side2")
	rc, victim, logs := filepath.Join(b.root, "victim-rc"), filepath.Join(b.root, "victim-file"), filepath.Join(b.root, "victim-logs")
	rc2, merge := filepath.Join(b.root, "victim-rc2"), filepath.Join(b.root, "victim-merge")
	writeFile(t, rc, "# the user's rc file\n", 0o644)
	writeFile(t, rc2, "# the user's other rc file\n", 0o644)
	testmoat.Mkdir(t, logs)
	r := b.run(opts{script: `set -e
rm -f .git/logs/HEAD && ln -s ` + shq(rc) + ` .git/logs/HEAD
rm -f .git/COMMIT_EDITMSG && ln -s ` + shq(victim) + ` .git/COMMIT_EDITMSG
ln -s ` + shq(merge) + ` .git/MERGE_MSG
rm -rf .git/logs/refs && ln -s ` + shq(logs) + ` .git/logs/refs
rm -f .git/worktrees/linked/logs/HEAD && ln -s ` + shq(rc2) + ` .git/worktrees/linked/logs/HEAD
echo ok > normal
`})
	if testmoat.ReadFile(t, filepath.Join(b.ws, "normal")) != "ok\n" {
		t.Fatalf("control: the planting script failed:\n%s", r)
	}
	b.git(b.ws, "checkout", "-q", "side")
	b.git(b.ws, "commit", "-q", "--allow-empty", "-m", "user's commit")
	b.git(wt, "commit", "-q", "--allow-empty", "-m", "user's commit in the linked work tree")
	if got := testmoat.ReadFile(t, rc); got != "# the user's rc file\n" {
		t.Errorf("the user's git wrote through the planted .git/logs/HEAD link into %s:\n%s", rc, got)
	}
	if got := testmoat.ReadFile(t, rc2); got != "# the user's other rc file\n" {
		t.Errorf("the user's git wrote through the planted .git/worktrees/linked/logs/HEAD link into %s:\n%s", rc2, got)
	}
	if testmoat.Exists(victim) {
		t.Errorf("the user's git wrote through the planted .git/COMMIT_EDITMSG link: %q", testmoat.ReadFile(t, victim))
	}
	if fi, err := os.Lstat(filepath.Join(b.ws, ".git", "MERGE_MSG")); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		t.Errorf("the dangling .git/MERGE_MSG link is still there: the user's next merge writes %s", merge)
	}
	if ents, _ := os.ReadDir(logs); len(ents) > 0 {
		t.Errorf("the user's git wrote reflogs through the planted .git/logs/refs link into %s", logs)
	}
	if !strings.Contains(r.stderr, "git would write through") {
		t.Errorf("control: moat did not say it moved the links aside:\n%s", r)
	}

	// The whole logs/ directory a link.
	b2 := newBox(t)
	gitInitCommit(b2, b2.ws)
	logs2 := filepath.Join(b2.root, "victim-logs")
	testmoat.Mkdir(t, logs2)
	r = b2.run(opts{script: `set -e
rm -rf .git/logs && ln -s ` + shq(logs2) + ` .git/logs
echo ok > normal
`})
	if testmoat.ReadFile(t, filepath.Join(b2.ws, "normal")) != "ok\n" {
		t.Fatalf("control: the planting script failed:\n%s", r)
	}
	b2.git(b2.ws, "commit", "-q", "--allow-empty", "-m", "user's commit")
	if ents, _ := os.ReadDir(logs2); len(ents) > 0 {
		t.Errorf("the user's git wrote reflogs through the planted .git/logs link into %s", logs2)
	}
}

// checkBareDisarmed: after a run that laid out the workspace root as a bare
// repository, its HEAD is moved aside on the host, and moat said so.
func checkBareDisarmed(t *testing.T, b *box, r result) {
	t.Helper()
	if fi, err := os.Lstat(filepath.Join(b.ws, "HEAD")); err == nil {
		t.Errorf("HEAD (%v) is in the workspace root after the run: with objects/ and refs/ git takes the root for a repository", fi.Mode())
	}
	if !testmoat.Exists(filepath.Join(b.ws, "HEAD.moat-quarantine")) || !strings.Contains(r.stderr, "bare git repository") {
		t.Errorf("control: no quarantined HEAD, or moat didn't say so:\n%s", r)
	}
}

// evilGitDir is a script that makes a git dir named dir in the current directory,
// whose config sets core.fsmonitor to $FSMON.
func evilGitDir(dir string) string {
	return `mkdir -p ` + dir + `/hooks ` + dir + `/refs/heads ` + dir + `/objects
echo "ref: refs/heads/main" > ` + dir + `/HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "%s"\n' "$FSMON" > ` + dir + `/config
`
}
