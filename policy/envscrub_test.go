package policy

import (
	"reflect"
	"strings"
	"testing"
)

func TestEnvScrubTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range envScrubTable {
		if s.Reason == "" {
			t.Errorf("%s has no reason", s.Pattern)
		}
		if seen[s.Pattern] {
			t.Errorf("%s twice", s.Pattern)
		}
		seen[s.Pattern] = true
		if pr := checkPassEnv(s.Pattern); pr != nil {
			t.Errorf("pattern %q is not a valid name pattern: %v", s.Pattern, pr.err)
		}
	}
}

func TestScrubbedNames(t *testing.T) {
	removed := []string{
		"GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_ACCESS_KEY_ID", "AWS_PROFILE", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "NPM_TOKEN",
		"npm_config__authToken", "NODE_AUTH_TOKEN", "HF_TOKEN", "CI_JOB_TOKEN", "TOKEN", "NGROK_AUTHTOKEN",
		"AZURE_CLIENT_SECRET", "JWT_SECRET", "stripe_secret_key", "GOOGLE_APPLICATION_CREDENTIALS",
		"GOOGLE_API_KEY_PROD", "PGPASSWORD", "TWINE_PASSWORD", "SMTP_PASS", "MYSQL_PWD", "DB_PASSWD",
		"DATABASE_URL", "REPLICA_DATABASE_URL", "SENTRY_DSN", "SLACK_WEBHOOK_URL", "SESSION_COOKIE",
		"VAULT_TOKEN", "VAULT_ADDR", "KUBECONFIG", "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", "SIGNING_PRIVATE_KEY_PEM",
		"SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST",
		"CONTAINER_HOST", "KRB5CCNAME", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "GIT_ASKPASS",
		"VSCODE_IPC_HOOK_CLI", "TMUX", "STY",
	}
	kept := []string{
		"PATH", "HOME", "USER", "SHELL", "PWD", "OLDPWD", "TERM", "COLORTERM", "LANG", "LC_ALL", "TZ",
		"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "TOKENIZERS_PARALLELISM", "SSH_CONNECTION", "SSH_TTY",
		"GOPATH", "GOFLAGS", "GOPROXY", "NODE_OPTIONS", "KEYTIMEOUT", "LESSKEY", "GPG_TTY", "EDITOR",
		"TMUX_PANE", "GIT_AUTHOR_NAME", "MONKEY", "AUTHOR", "KEYBOARD", "HOSTNAME", "CI", "GITHUB_ACTIONS",
		"GHOSTTY_RESOURCES_DIR", "PASSAGE", "SSL_CERT_FILE",
	}
	for _, n := range removed {
		if _, ok := scrubbed(n); !ok {
			t.Errorf("%s is not scrubbed", n)
		}
	}
	for _, n := range kept {
		if s, ok := scrubbed(n); ok {
			t.Errorf("%s is scrubbed by %s", n, s.Pattern)
		}
	}
}

func TestWildMatch(t *testing.T) {
	tests := []struct {
		pat, name string
		fold      bool
		want      bool
	}{
		{"A", "A", false, true},
		{"A", "a", false, false},
		{"A", "a", true, true},
		{"*_TOKEN", "GH_TOKEN", false, true},
		{"*_TOKEN", "_TOKEN", false, true},
		{"*_TOKEN", "GH_TOKENS", false, false},
		{"AWS_*", "AWS_", false, true},
		{"AWS_*", "XAWS_A", false, false},
		{"*SECRET*", "SECRET", false, true},
		{"*SECRET*", "MY_SECRETS_DIR", false, true},
		{"*_TOKEN_*", "A_TOKEN_B", false, true},
		{"*_TOKEN_*", "A_TOKEN", false, false},
		{"A*B*C", "ABC", false, true},
		{"A*B*C", "AXBXC", false, true},
		{"A*B*C", "AC", false, false},
		{"AB*BA", "ABA", false, false}, // the prefix and suffix must not overlap
		{"*", "", false, true},
	}
	for _, tt := range tests {
		if got := wildMatch(tt.pat, tt.name, tt.fold); got != tt.want {
			t.Errorf("wildMatch(%q, %q, %v) = %v, want %v", tt.pat, tt.name, tt.fold, got, tt.want)
		}
	}
}

func TestFilterEnv(t *testing.T) {
	// The credentials.envVars semantics of sandbox.filterEnv, unchanged: deny
	// removes, mask replaces the value with moat-masked-NAME, order is kept.
	p := &Policy{EnvVars: []EnvRule{{Name: "TOKEN", Mode: ModeDeny, Origin: "o1"}, {Name: "KEY", Mode: ModeMask, Origin: "o2"}}}
	kept, removed := p.FilterEnv([]string{"A=1", "TOKEN=s3cret", "KEY=k", "B=2"})
	if want := []string{"A=1", "KEY=moat-masked-KEY", "B=2"}; !reflect.DeepEqual(kept, want) {
		t.Errorf("kept = %v, want %v", kept, want)
	}
	want := []EnvRemoval{
		{Name: "TOKEN", Rule: "TOKEN", Reason: "credentials.envVars deny", Origin: "o1"},
		{Name: "KEY", Masked: true, Rule: "KEY", Reason: "credentials.envVars mask: the value is a placeholder", Origin: "o2"},
	}
	if !reflect.DeepEqual(removed, want) {
		t.Errorf("removed = %+v, want %+v", removed, want)
	}

	p = mustCompile(t, mustParse(t, `{
		"credentials": {"envVars": [{"name": "GH_TOKEN", "mode": "deny"}, {"name": "OPENAI_API_KEY", "mode": "mask"}]},
		"moat": {"passEnv": ["GH_TOKEN", "OPENAI_API_KEY", "MYAPP_*"]}
	}`), Flags{PassEnv: []string{"HF_TOKEN"}})
	env := []string{"PATH=/bin", "GH_TOKEN=t1", "OPENAI_API_KEY=t2", "MYAPP_SECRET=t3", "HF_TOKEN=t4",
		"NPM_TOKEN=t5", "myapp_secret=t6", "NOEQUALS", "SSH_AUTH_SOCK=/run/s", "A=B=C"}
	kept, removed = p.FilterEnv(env)
	if want := []string{"PATH=/bin", "OPENAI_API_KEY=moat-masked-OPENAI_API_KEY", "MYAPP_SECRET=t3", "HF_TOKEN=t4",
		"NOEQUALS", "A=B=C"}; !reflect.DeepEqual(kept, want) {
		t.Errorf("kept = %v, want %v", kept, want)
	}
	var names []string
	for _, r := range removed {
		names = append(names, r.Name)
		for _, f := range []string{r.Name, r.Rule, r.Reason, r.Origin} {
			if strings.Contains(f, "t1") || strings.Contains(f, "t5") || strings.Contains(f, "/run/s") {
				t.Errorf("removal %+v carries a value", r)
			}
		}
	}
	// An explicit deny beats passEnv; passEnv is case-sensitive; the mask is reported.
	if want := "GH_TOKEN OPENAI_API_KEY NPM_TOKEN myapp_secret SSH_AUTH_SOCK"; strings.Join(names, " ") != want {
		t.Errorf("removed %s, want %s", strings.Join(names, " "), want)
	}
	if removed[2].Origin != originEnvScrub || removed[2].Rule != "*_TOKEN" {
		t.Errorf("NPM_TOKEN removal = %+v", removed[2])
	}
}

func TestPassEnvPatterns(t *testing.T) {
	for _, ok := range []string{"GH_TOKEN", "MYAPP_*", "*_PUBLIC_KEY", "a", "_X"} {
		if pr := checkPassEnv(ok); pr != nil {
			t.Errorf("%q rejected: %v", ok, pr.err)
		}
	}
	for _, bad := range []string{"", "*", "**", "1ABC", "A-B", "A B", "A=B"} {
		if checkPassEnv(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	_, err := Parse("s.json", []byte(`{"moat": {"passEnv": ["OK", /*@*/"*"]}}`))
	checkErr(t, `{"moat": {"passEnv": ["OK", /*@*/"*"]}}`, err, ErrValue, "moat.passEnv[1]", "passes every variable")
	if _, err := Compile(nil, Flags{PassEnv: []string{"NOT-A-NAME"}}, testEnv); err == nil || !strings.Contains(err.Error(), "--pass-env") {
		t.Errorf("--pass-env NOT-A-NAME: err = %v", err)
	}
}

func TestExplainEnv(t *testing.T) {
	p := mustCompile(t, mustParse(t, `{"credentials": {"envVars": [{"name": "K", "mode": "mask"}, {"name": "D", "mode": "deny"}]}}`),
		Flags{PassEnv: []string{"GH_TOKEN"}})
	tests := []struct {
		name         string
		kept, masked bool
		rule, hint   string
	}{
		{"PATH", true, false, "", ""},
		{"GH_TOKEN", true, false, "GH_TOKEN", ""},
		{"NPM_TOKEN", false, false, "*_TOKEN", "--pass-env NPM_TOKEN"},
		{"ANTHROPIC_API_KEY", false, false, "*_KEY", "the profile claude, opencode passes it"},
		{"K", true, true, "K", "placeholder"},
		{"D", false, false, "D", "remove the credentials.envVars entry at s.json:1"},
	}
	for _, tt := range tests {
		v := p.ExplainEnv(tt.name)
		if v.Kept != tt.kept || v.Masked != tt.masked || v.Rule != tt.rule || !strings.Contains(v.Hint, tt.hint) {
			t.Errorf("ExplainEnv(%s) = %+v", tt.name, v)
		}
	}
}
