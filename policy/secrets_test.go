package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestSecretTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range secretTable {
		if s.Reason == "" || s.Name == "" {
			t.Errorf("entry %+v needs a name and a reason", s)
		}
		if s.Kind != kindCredentials && s.Kind != kindPrivate && s.Kind != kindWorkspace {
			t.Errorf("entry %s has kind %q", s.Name, s.Kind)
		}
		if seen[s.Name] {
			t.Errorf("entry %s twice", s.Name)
		}
		seen[s.Name] = true
		if pr := checkSecretName(s.Name); pr != nil {
			t.Errorf("checkSecretName(%q): %v", s.Name, pr.err)
		}
		if name, ok := SecretName(secretOrigin(s)); !ok || name != s.Name {
			t.Errorf("SecretName(origin of %s) = %q, %v", s.Name, name, ok)
		}
		for _, raw := range secretPaths(s) {
			if pr := checkPath(raw, listDenyRead); pr != nil {
				t.Errorf("entry %s: path %q: %v", s.Name, raw, pr.err)
			}
		}
	}
	for _, want := range []string{"~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube",
		"~/.docker/config.json", "~/.netrc", "~/.git-credentials", "~/.config/gh", "~/.npmrc", "~/.pypirc",
		"~/.password-store", "~/.local/share/keyrings", "~/.mozilla", "~/.config/google-chrome",
		"~/.config/chromium", "~/.config/BraveSoftware", "~/.bash_history", "~/.zsh_history",
		"~/.local/share/fish/fish_history", "~/.python_history", "~/.node_repl_history", ".env", ".env.*"} {
		if !seen[want] {
			t.Errorf("the secret table lacks %s", want)
		}
	}
	if _, ok := SecretName("default"); ok {
		t.Error(`SecretName("default") claims a table entry`)
	}
}

// TestSecretsAreTheBaseLayer: the table applies with and without a settings
// file, while the writable current directory is the default's alone.
func TestSecretsAreTheBaseLayer(t *testing.T) {
	for name, s := range map[string]*Settings{
		"no settings":    nil,
		"empty settings": mustParse(t, `{}`),
		"srt file":       mustParse(t, `{"filesystem": {"denyRead": ["/home"], "allowRead": ["."], "allowWrite": ["."]}}`),
	} {
		t.Run(name, func(t *testing.T) {
			p := mustCompile(t, s, Flags{})
			v := p.ExplainPath("/home/u/.ssh/id_rsa")
			if v.Read || v.ReadRule.Origin != secretOrigin(secretTable[0]) {
				t.Errorf("~/.ssh/id_rsa: read %v by %+v", v.Read, v.ReadRule)
			}
			if v := p.ExplainPath("/work/proj/.env"); v.Read {
				t.Errorf("./.env readable: %+v", v.ReadRule)
			}
		})
	}
	if p := mustCompile(t, mustParse(t, `{}`), Flags{}); p.ExplainPath("/work/proj/x").Write {
		t.Error("a settings file without allowWrite left the current directory writable")
	}
}

func TestSecretVerdicts(t *testing.T) {
	p := mustCompile(t, nil, Flags{})
	tests := []struct {
		name, path string
		readable   bool
	}{
		{"ssh key", "/home/u/.ssh/id_ed25519", false},
		{"aws credentials", "/home/u/.aws/credentials", false},
		{"docker config", "/home/u/.docker/config.json", false},
		{"gh token", "/home/u/.config/gh/hosts.yml", false},
		{"gcloud", "/home/u/.config/gcloud/application_default_credentials.json", false},
		{"kube", "/home/u/.kube/config", false},
		{"netrc", "/home/u/.netrc", false},
		{"git credentials", "/home/u/.git-credentials", false},
		{"npmrc", "/home/u/.npmrc", false},
		{"password store", "/home/u/.password-store/bank.gpg", false},
		{"keyring", "/home/u/.local/share/keyrings/login.keyring", false},
		{"firefox", "/home/u/.mozilla/firefox/abc.default/logins.json", false},
		{"chrome", "/home/u/.config/google-chrome/Default/Login Data", false},
		{"bash history", "/home/u/.bash_history", false},
		{"fish history", "/home/u/.local/share/fish/fish_history", false},
		{"workspace .env", "/work/proj/.env", false},
		{".env one level down", "/work/proj/api/.env", false},
		{".env three levels down", "/work/proj/a/b/c/.env", false},
		{".env.local", "/work/proj/.env.local", false},
		{".env.production below", "/work/proj/web/.env.production", false},
		{".env.example is hidden too", "/work/proj/.env.example", false},

		{"other docker files", "/home/u/.docker/buildx/instances", true},
		{"other config", "/home/u/.config/nvim/init.lua", true},
		{"notes in home", "/home/u/notes.txt", true},
		{".env four levels down (past the depth)", "/work/proj/a/b/c/d/.env", true},
		{".env outside the workspace", "/work/other/.env", true},
		{".envrc is not an env file", "/work/proj/.envrc", true},
		{".environment", "/work/proj/.environment", true},
		{"env without a dot", "/work/proj/env", true},
		{"source code", "/work/proj/main.go", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v := p.ExplainPath(tt.path); v.Read != tt.readable {
				t.Errorf("%s: readable = %v (by %+v), want %v", tt.path, v.Read, v.ReadRule, tt.readable)
			}
		})
	}
}

func TestAllowSecrets(t *testing.T) {
	s := mustParse(t, `{"filesystem": {"allowWrite": ["."]}, "moat": {"allowSecrets": ["~/.npmrc", ".env"]}}`)
	p := mustCompile(t, s, Flags{})
	for path, readable := range map[string]bool{
		"/home/u/.npmrc":      true,
		"/work/proj/.env":     true,
		"/work/proj/a/.env":   true,
		"/work/proj/.env.x":   false, // ".env.*" is its own entry
		"/home/u/.ssh/id_rsa": false,
	} {
		if v := p.ExplainPath(path); v.Read != readable {
			t.Errorf("%s: readable = %v by %+v, want %v", path, v.Read, v.ReadRule, readable)
		}
	}
	if len(p.AllowedSecrets) != 2 || p.AllowedSecrets[0] != (OptOut{"~/.npmrc", "s.json:1 moat.allowSecrets[0]"}) {
		t.Errorf("AllowedSecrets = %+v", p.AllowedSecrets)
	}
}

// TestAllowReadInsideSecret: an allowRead deeper than a table entry re-opens that
// path; on the entry's own path the deny wins, and the hint says to name it.
func TestAllowReadInsideSecret(t *testing.T) {
	p := mustCompile(t, nil, Flags{AllowRead: []string{"~/.ssh/known_hosts", "~/.aws"}})
	if v := p.ExplainPath("/home/u/.ssh/known_hosts"); !v.Read || v.ReadRule.Kind != KindAllowRead {
		t.Errorf("known_hosts: %+v", v)
	}
	if v := p.ExplainPath("/home/u/.ssh/id_rsa"); v.Read {
		t.Errorf("id_rsa readable: %+v", v.ReadRule)
	}
	v := p.ExplainPath("/home/u/.aws")
	if v.Read || !strings.Contains(v.ReadHint, `add "~/.aws" to "moat": {"allowSecrets"`) {
		t.Errorf("~/.aws: read %v, hint %q", v.Read, v.ReadHint)
	}
}

func TestAllowSecretsErrors(t *testing.T) {
	tests := []struct{ name, doc, hint string }{
		{"typo", `{"moat": {"allowSecrets": [/*@*/"~/.npmr"]}}`, `did you mean "~/.npmrc"?`},
		{"missing tilde", `{"moat": {"allowSecrets": [/*@*/".ssh"]}}`, `did you mean "~/.ssh"?`},
		{"not in the table", `{"moat": {"allowSecrets": [/*@*/"/etc/hosts"]}}`, "write a name from the table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s.json", []byte(tt.doc))
			checkErr(t, tt.doc, err, ErrValue, "moat.allowSecrets[0]", "not an entry of the built-in credential deny table")
			var e *Error
			if errors.As(err, &e) && !strings.Contains(e.Hint(), tt.hint) {
				t.Errorf("hint %q lacks %q", e.Hint(), tt.hint)
			}
		})
	}
}
