package corpus_test

import (
	"fmt"
	"github.com/moat-sandbox/moat/internal/testmoat"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/policy"
)

// TestSecretFiles puts a decoy with its own canary at every path the built-in
// secret table denies (the home entries in a fake home, the workspace's .env files
// at every depth the table covers), lets the sandbox read, list, search, copy and
// archive the home directory and the workspace with the default policy, and fails
// if a canary shows up in anything it printed or wrote. The decoys come from the
// compiled default policy, one per rule the table produces, so an entry added to
// the table is probed without touching this test. Each entry is probed as a file
// and as a directory holding a file: the table doesn't say which a path is.
func TestSecretFiles(t *testing.T) {
	for _, shape := range []string{"file", "dir"} {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			probeSecretFiles(t, shape == "dir")
		})
	}
}

// decoy is one planted secret.
type decoy struct {
	entry  string // the secret table entry it stands for
	path   string // the path the rule denies
	file   string // the file holding the canary: path itself, or a file inside it
	canary string
}

func probeSecretFiles(t *testing.T, asDir bool) {
	b := newBox(t)
	b.git("init", "-q")
	pol, err := policy.Default(policy.Env{Cwd: b.ws, Home: b.home})
	if err != nil {
		t.Fatal(err)
	}
	perEntry := map[string]int{}
	var decoys []decoy
	for _, r := range pol.DenyRead {
		name, ok := policy.SecretName(r.Origin)
		if !ok {
			continue
		}
		perEntry[name]++
		if strings.HasPrefix(r.Path, "/etc/") {
			continue // the host's own files, not planted here: test/escape's secret_reads/system_secrets reads them
		}
		d := decoy{entry: name, path: decoyPath(r), canary: testmoat.Token("secret")}
		d.file = d.path
		if asDir {
			d.file = filepath.Join(d.path, "secret")
		}
		if !strings.HasPrefix(d.path, b.home+"/") && !strings.HasPrefix(d.path, b.ws+"/") {
			t.Fatalf("rule %s (%s) is neither in the home directory nor in the workspace", r.Path, r.Origin)
		}
		if err := os.MkdirAll(filepath.Dir(d.file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(d.file, []byte(d.canary+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		decoys = append(decoys, d)
	}
	for _, s := range policy.SecretTable() {
		if perEntry[s.Name] == 0 {
			t.Errorf("secret table entry %s produced no deny rule in the default policy, so nothing probes it", s.Name)
		}
	}
	if len(decoys) == 0 {
		t.Fatal("no decoys: the default policy has no rule from the secret table")
	}

	// Controls: readable files next to the secrets. If they don't show up, the
	// sandbox never read the home directory and the probe proves nothing.
	controls := map[string]string{
		filepath.Join(b.home, "notes", "control.txt"):   testmoat.Token("control"),
		filepath.Join(b.home, ".config", "control.txt"): testmoat.Token("control"),
		filepath.Join(b.ws, "control.txt"):              testmoat.Token("control"),
		filepath.Join(b.ws, "config.env"):               testmoat.Token("control"), // not .env, not .env.*
	}
	for p, tok := range controls {
		writeFile(t, p, tok+"\n")
	}

	var list []string
	for _, d := range decoys {
		list = append(list, shq(d.path))
	}
	paths := strings.Join(list, " ")
	script := `
for p in ` + paths + `; do
	cat "$p"; cat "$p"/* "$p"/.[!.]*; head -c 4096 "$p"; dd if="$p" bs=4096 count=1
	cp -r "$p" loot/ ; done
ls -laR ~ .
find ~ . -type f -exec cat {} +
grep -r . ~ .
cp -r ~ loot/home
tar cf loot/home.tar -C ~ .
ln -s ~ loot/home-link && cat loot/home-link/.netrc loot/home-link/.ssh/*
exit 0
`
	if have(b, "python3") {
		script = `python3 -c '
import os
for root in (os.environ["HOME"], "."):
    for d, _, fs in os.walk(root):
        for f in fs:
            try: print(open(os.path.join(d, f), errors="replace").read())
            except OSError as e: print(e)
'
` + script
	}
	testmoat.Mkdir(t, filepath.Join(b.ws, "loot"))
	r := b.run(opts{script: script})

	for p, tok := range controls {
		if !strings.Contains(r.stdout, tok) {
			t.Fatalf("control: %s, readable in the sandbox, did not show up; the probe proves nothing:\n%s", p, r)
		}
	}
	skip := map[string]bool{}
	for _, d := range decoys {
		skip[d.file] = true
	}
	var leaks []string
	for _, d := range decoys {
		var where []string
		if strings.Contains(r.stdout, d.canary) {
			where = append(where, "stdout")
		}
		if strings.Contains(r.stderr, d.canary) {
			where = append(where, "stderr")
		}
		where = append(where, filesContaining(t, b.root, d.canary, skip)...)
		if len(where) > 0 {
			leaks = append(leaks, fmt.Sprintf("%s (%s): %s", d.entry, d.path, strings.Join(where, ", ")))
		}
	}
	sort.Strings(leaks)
	for _, l := range leaks {
		t.Errorf("secret read in the sandbox: %s", l)
	}
	t.Logf("%d decoys for %d table entries: none read", len(decoys), len(perEntry))
}

// decoyPath turns a deny rule into a path it denies: the rule's own path, or for
// a glob ("<ws>/*/*/.env.*") the path with each * replaced by a name.
func decoyPath(r policy.Rule) string {
	if !r.Glob {
		return r.Path
	}
	var b strings.Builder
	for i := 0; i < len(r.Path); i++ {
		switch c := r.Path[i]; c {
		case '\\': // an escaped metacharacter of the literal prefix
			if i+1 < len(r.Path) {
				i++
				b.WriteByte(r.Path[i])
			}
		case '*':
			b.WriteString("probe")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// TestSecretEnv sets a variable with its own canary for every pattern of the
// environment scrub table (policy.EnvScrubTable), in upper and lower case, and for
// the usual token names, and fails if the default policy lets a canary reach the
// command's environment (env, /proc/self/environ, the shell's variables).
func TestSecretEnv(t *testing.T) {
	b := newBox(t)
	pol, err := policy.Default(policy.Env{Cwd: b.ws, Home: b.home})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"FAKE_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN", "GITHUB_TOKEN",
		"GH_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "NPM_TOKEN", "npm_config__authToken",
		"DATABASE_URL", "PGPASSWORD", "SSH_AUTH_SOCK"}
	for _, s := range policy.EnvScrubTable() {
		name := strings.ReplaceAll(s.Pattern, "*", "MOATPROBE")
		names = append(names, name, strings.ToLower(name))
	}
	canary := map[string]string{}
	var env []string
	for _, n := range names {
		if _, dup := canary[n]; dup {
			continue
		}
		if v := pol.ExplainEnv(n); v.Kept {
			t.Errorf("%s: the default policy keeps it (%s); the probe names must be ones the table scrubs", n, v.Reason)
			continue
		}
		canary[n] = testmoat.Token("env")
		env = append(env, n+"="+canary[n])
	}
	plain := testmoat.Token("plain")
	env = append(env, "MOAT_PLAIN_VAR="+plain)
	r := b.run(opts{env: env, script: "env; tr '\\0' '\\n' < /proc/self/environ; tr '\\0' '\\n' < /proc/1/environ; set; env > envdump"})
	if !strings.Contains(r.stdout, "MOAT_PLAIN_VAR="+plain) || !strings.Contains(testmoat.ReadFile(t, filepath.Join(b.ws, "envdump")), plain) {
		t.Fatalf("control: an ordinary variable did not reach the command:\n%s", r)
	}
	var leaked []string
	for n, tok := range canary {
		if strings.Contains(r.stdout, tok) || strings.Contains(r.stderr, tok) || len(filesContaining(t, b.root, tok, nil)) > 0 {
			leaked = append(leaked, n)
		}
	}
	sort.Strings(leaked)
	if len(leaked) > 0 {
		t.Errorf("with the default policy these variables reached the command: %v", leaked)
	}
	t.Logf("%d variables probed: none reached the command", len(canary))
}
