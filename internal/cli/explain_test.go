package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/policy"
)

func TestExplainPaths(t *testing.T) {
	home, ws := cliEnv(t)
	writeFile(t, filepath.Join(ws, ".moatignore"), "secret.txt\n")
	writeFile(t, filepath.Join(ws, "secret.txt"), "")
	writeFile(t, filepath.Join(ws, "main.go"), "")
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(ws, "keys")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		arg  string
		want []string
	}{
		{"~/.ssh/id_rsa", []string{"read:  denied by denyRead ~/.ssh (default: credential store (~/.ssh: SSH private keys))",
			"hint: allow with --allow-read " + home + "/.ssh/id_rsa (only that path)"}},
		{"keys/id_rsa", []string{"read:  denied by denyRead ~/.ssh", "note:  symlinks resolved: the sandbox applies the rules to " + home + "/.ssh/id_rsa"}},
		{"main.go", []string{"read:  allowed by allowWrite . (default)", "write: allowed by allowWrite . (default)"}},
		{"secret.txt", []string{"read:  denied by denyRead ./secret.txt (ignore file " + ws + "/.moatignore:1 secret.txt)"}},
		{".env", []string{`hint: add ".env" to "moat": {"allowSecrets": [...]}`}},
		{".git/hooks/pre-commit", []string{"write: denied by protected ./.git/hooks", `add ".git/hooks" to "moat": {"unprotect"`}},
		{"~/.codex/sessions/x", []string{"write: denied, writes are denied outside allowWrite", "--profile codex makes it writable"}},
		{"~/.npm/_cacache/x", []string{"write: denied, writes are denied outside allowWrite", "--profile node makes it writable"}},
	}
	for _, tt := range tests {
		out, stderr, err := runCLI(t, explainCmd, tt.arg)
		if err != nil {
			t.Fatalf("explain %s: %v\n%s", tt.arg, err, stderr)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("explain %s: output lacks %q:\n%s", tt.arg, w, out)
			}
		}
	}
}

func TestExplainHostsAndEnv(t *testing.T) {
	cliEnv(t)
	out, stderr, err := runCLI(t, explainCmd, "--profile", "claude", "--deny-net", "*:22",
		"api.anthropic.com", "github.com:22", "[::1]:8080", "pypi.org", "$ANTHROPIC_API_KEY", "$GITHUB_TOKEN", "$HOME")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{
		"api.anthropic.com port 443\n  allowed: api.anthropic.com:443 is allowed by \"api.anthropic.com\" (profile claude (profiles/claude.jsonc:",
		"github.com port 22\n  denied: github.com:22 is denied by \"*:22\" (flag --deny-net)",
		"::1 port 8080\n  denied: [::1]:8080 is not in any allow list",
		"hint: allow with --allow-net [::1]:8080",
		"the profile python-registry allows it",
		"$ANTHROPIC_API_KEY\n  kept: passed by \"ANTHROPIC_API_KEY\" (profile claude",
		"$GITHUB_TOKEN\n  removed: matches *_TOKEN",
		"hint: pass it with --pass-env GITHUB_TOKEN",
		"$HOME\n  kept: no rule removes it",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, _, err = runCLI(t, explainCmd, "--json", "example.com:8080", "$X_TOKEN", "/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var host policy.HostVerdict
	var env policy.EnvVerdict
	var path policy.PathVerdict
	for _, v := range []any{&host, &env, &path} {
		if err := dec.Decode(v); err != nil {
			t.Fatalf("JSON lines: %v\n%s", err, out)
		}
	}
	if host.Host != "example.com" || host.Port != 8080 || host.Allowed || env.Kept || !path.Read || path.Write {
		t.Errorf("JSON verdicts: %+v %+v %+v", host, env, path)
	}
}

func TestClassify(t *testing.T) {
	_, ws := cliEnv(t)
	writeFile(t, filepath.Join(ws, "notes.md"), "")
	tests := []struct{ arg, kind string }{
		{"/etc/passwd", "path"}, {"./x", "path"}, {"src/main.go", "path"}, {"~", "path"}, {".", "path"},
		{"notes.md", "path"}, // exists here
		{"example.com", "host"}, {"example.com:8080", "host"}, {"[::1]:80", "host"}, {"::1", "host"}, {"localhost", "host"},
		{"10.0.0.1", "host"}, {"$GH_TOKEN", "env"}, {"env:GH_TOKEN", "env"},
		{"README", "path"}, // no dot, no file: a path that does not exist
	}
	for _, tt := range tests {
		if kind, _ := classify(tt.arg, ws, "/home/u"); kind != tt.kind {
			t.Errorf("classify(%q) = %s, want %s", tt.arg, kind, tt.kind)
		}
	}
}

func TestExplainUsage(t *testing.T) {
	cliEnv(t)
	for _, args := range [][]string{{}, {"--nope"}, {"example.com:99999"}, {"[::1"}} {
		_, stderr, err := runCLI(t, explainCmd, args...)
		if err == nil || !strings.Contains(stderr, "moat: error: explain") || !strings.Contains(stderr, "moat: hint: ") {
			t.Errorf("%q: err %v\n%s", args, err, stderr)
		}
	}
}
