package policy

import (
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

func TestBuiltinProfiles(t *testing.T) {
	m, err := builtinProfiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"claude", "codex", "gemini", "opencode", "cursor", "node", "python", "go", "rust",
		"registries", "node-registry", "python-registry", "go-registry", "rust-registry"} {
		if m[want] == nil {
			t.Errorf("no built-in profile %s", want)
		}
	}
	for name, p := range m {
		t.Run(name, func(t *testing.T) {
			if p.Description == "" {
				t.Error("no description")
			}
			pol, err := CompileLayers(Layers{Profiles: []string{name}}, testEnv)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, pol)
			for _, r := range pol.AllowWrite {
				if r.Origin != OriginDefault && !strings.HasPrefix(r.Path, "/home/u/") {
					t.Errorf("profile makes %s writable, outside the home directory", r.Path)
				}
				if r.Path == "/home/u" || strings.HasPrefix(r.Path, "/home/u/.local/bin") {
					t.Errorf("profile makes %s writable", r.Path)
				}
			}
			if len(pol.AllowRead) > 0 {
				t.Errorf("profile re-opens reads: %+v", pol.AllowRead)
			}
			// The built-in secret denies stay, except the profile's own login.
			if v := pol.ExplainPath("/home/u/.ssh/id_rsa"); v.Read {
				t.Errorf("profile %s opens ~/.ssh", name)
			}
		})
	}
}

// TestBuiltinProfileComments checks that every entry of a built-in profile has
// a comment giving its reason: on its line, or on the line before.
func TestBuiltinProfileComments(t *testing.T) {
	files, _ := fs.Glob(builtinFS, "profiles/*.jsonc")
	for _, f := range files {
		data, _ := fs.ReadFile(builtinFS, f)
		lines := strings.Split(string(data), "\n")
		for i, l := range lines {
			tl := strings.TrimSpace(l)
			if !strings.HasPrefix(tl, `"`) || strings.Contains(tl, `":`) {
				continue // not an array entry
			}
			prev := ""
			if i > 0 {
				prev = strings.TrimSpace(lines[i-1])
			}
			if !strings.Contains(tl, "//") && !strings.HasPrefix(prev, "//") {
				t.Errorf("%s:%d: entry %s has no comment giving its reason", f, i+1, tl)
			}
		}
	}
}

func TestAgentProfiles(t *testing.T) {
	tests := []struct {
		profile   string
		writable  []string // paths the agent must be able to write
		readOnly  []string // paths it must not write (they run code later)
		hosts     []string
		env       []string
		loginFile string // its own login, re-opened by name
	}{
		{"claude", []string{"~/.claude/projects/p/s.jsonl", "~/.claude.json", "~/.claude/.credentials.json"},
			[]string{"~/.claude/settings.json", "~/.claude/hooks/x.sh", "~/.claude/plugins/p", "~/.bashrc", "~/.local/bin/claude"},
			[]string{"api.anthropic.com", "statsig.anthropic.com"}, []string{"ANTHROPIC_API_KEY"}, "~/.claude/.credentials.json"},
		{"codex", []string{"~/.codex/sessions/s.jsonl", "~/.codex/auth.json", "~/.codex/history.jsonl"},
			[]string{"~/.codex/config.toml", "~/.codex/rules/default.rules"},
			[]string{"api.openai.com", "chatgpt.com"}, []string{"OPENAI_API_KEY"}, "~/.codex/auth.json"},
		{"gemini", []string{"~/.gemini/tmp/x", "~/.gemini/oauth_creds.json"},
			[]string{"~/.gemini/settings.json", "~/.gemini/extensions/e"},
			[]string{"generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com"}, []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"},
			"~/.gemini/oauth_creds.json"},
		{"opencode", []string{"~/.local/share/opencode/log/x", "~/.local/share/opencode/auth.json"},
			[]string{"~/.config/opencode/opencode.json"},
			[]string{"models.dev", "api.anthropic.com"}, []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"},
			"~/.local/share/opencode/auth.json"},
		{"cursor", []string{"~/.cursor/chats/x", "~/.cursor/cli-config.json"},
			[]string{"~/.cursor/mcp.json", "~/.local/share/cursor-agent/versions/x/cursor-agent"},
			[]string{"api2.cursor.sh"}, []string{"CURSOR_API_KEY"}, "~/.cursor/cli-config.json"},
	}
	home := func(p string) string { return "/home/u/" + strings.TrimPrefix(p, "~/") }
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			before := mustCompile(t, nil, Flags{})
			p, err := CompileLayers(Layers{Profiles: []string{tt.profile}}, testEnv)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.writable {
				if v := p.ExplainPath(home(w)); !v.Write {
					t.Errorf("%s not writable: %+v", w, v.WriteRule)
				}
			}
			for _, w := range tt.readOnly {
				if v := p.ExplainPath(home(w)); v.Write {
					t.Errorf("%s writable by %+v", w, v.WriteRule)
				}
			}
			for _, h := range tt.hosts {
				if v := p.ExplainHost(h, 443); !v.Allowed || !strings.HasPrefix(v.Rule.Origin, "profile "+tt.profile+" (profiles/") {
					t.Errorf("%s: %+v", h, v)
				}
				if before.ExplainHost(h, 443).Allowed {
					t.Errorf("%s allowed without the profile", h)
				}
			}
			for _, e := range tt.env {
				if v := p.ExplainEnv(e); !v.Kept {
					t.Errorf("%s not passed: %+v", e, v)
				}
			}
			if before.ExplainPath(home(tt.loginFile)).Read || !p.ExplainPath(home(tt.loginFile)).Read {
				t.Errorf("%s should be hidden by default and readable with the profile", tt.loginFile)
			}
			// Another agent's login stays hidden.
			if other := "/home/u/.codex/auth.json"; tt.profile != "codex" && p.ExplainPath(other).Read {
				t.Errorf("profile %s opens %s", tt.profile, other)
			}
		})
	}
}

func TestToolchainProfiles(t *testing.T) {
	p, err := CompileLayers(Layers{Profiles: []string{"node", "python", "go", "rust"}}, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"/home/u/.npm/_cacache/x", "/home/u/.cache/pip/x", "/home/u/go/pkg/mod/x", "/home/u/.cache/go-build/x",
		"/home/u/.cargo/registry/x"} {
		if !p.ExplainPath(w).Write {
			t.Errorf("%s not writable", w)
		}
	}
	for _, ro := range []string{"/home/u/go/bin/x", "/home/u/.cargo/bin/x", "/home/u/.rustup/toolchains/x", "/home/u/.nvm/x"} {
		if p.ExplainPath(ro).Write {
			t.Errorf("%s writable", ro)
		}
	}
	if p.ExplainHost("registry.npmjs.org", 443).Allowed {
		t.Error("a toolchain group reaches its registry without the registry profile")
	}
	r, err := CompileLayers(Layers{Profiles: []string{"registries", "node-registry"}}, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"registry.npmjs.org", "pypi.org", "files.pythonhosted.org", "proxy.golang.org", "index.crates.io"} {
		if !r.ExplainHost(h, 443).Allowed {
			t.Errorf("registries: %s denied", h)
		}
	}
	var names []string
	for _, a := range r.Profiles {
		names = append(names, a.Name+" <- "+a.Origin)
	}
	want := []string{"node-registry <- extended by registries", "python-registry <- extended by registries",
		"go-registry <- extended by registries", "rust-registry <- extended by registries", "registries <- flag --profile"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("applied %q, want %q (each once, extends first)", names, want)
	}
}

// TestProfileComposition: profiles add up; every deny still wins.
func TestProfileComposition(t *testing.T) {
	user := mustParse(t, `{
		"filesystem": {"allowWrite": ["."], "denyWrite": ["~/.claude/projects"]},
		"network": {"deniedDomains": ["statsig.anthropic.com"]},
		"credentials": {"envVars": [{"name": "ANTHROPIC_API_KEY", "mode": "deny"}]},
	}`)
	p, err := CompileLayers(Layers{User: user, Profiles: []string{"claude", "node"}}, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, p)
	if !p.ExplainPath("/home/u/.npm/x").Write || !p.ExplainPath("/home/u/.claude/todos/x").Write {
		t.Error("the union of the profiles' allowWrite is not writable")
	}
	if p.ExplainPath("/home/u/.claude/projects/x").Write {
		t.Error("the user's denyWrite lost to a profile's allowWrite")
	}
	if v := p.ExplainHost("statsig.anthropic.com", 443); v.Allowed || v.Rule.Origin != "s.json:3 network.deniedDomains[0]" {
		t.Errorf("the user's deny lost to a profile's allow: %+v", v)
	}
	if v := p.ExplainEnv("ANTHROPIC_API_KEY"); v.Kept {
		t.Errorf("an explicit deny lost to a profile's passEnv: %+v", v)
	}
}

func TestUserProfiles(t *testing.T) {
	s := mustParse(t, `{
		"filesystem": {"allowWrite": ["."]},
		"moat": {
			"defaultProfiles": ["mywork"],
			"profiles": {
				"mywork": {
					"description": "my usual",
					"extends": ["claude", "web"],
					"moat": {"passEnv": ["MY_*"]},
				},
				"web": {"network": {"allowedDomains": ["example.com"]}},
			},
		},
	}`)
	if len(s.Moat.Profiles) != 2 || s.Moat.Profiles[0].Name != "mywork" || s.Moat.Profiles[0].Description != "my usual" {
		t.Fatalf("profiles = %+v", s.Moat.Profiles)
	}
	p, err := CompileLayers(Layers{User: s, Profiles: []string{"node"}}, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range p.Profiles {
		got = append(got, a.Name+" <- "+a.Origin)
	}
	want := []string{"claude <- extended by mywork", "web <- extended by mywork", "mywork <- s.json:4 moat.defaultProfiles[0]",
		"node <- flag --profile"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("applied %q, want %q", got, want)
	}
	if v := p.ExplainHost("example.com", 443); !v.Allowed || v.Rule.Origin != "profile web (s.json:11 moat.profiles.web.network.allowedDomains[0])" {
		t.Errorf("example.com: %+v", v)
	}
	if !p.ExplainEnv("MY_SECRET").Kept {
		t.Error("the user profile's passEnv is not applied")
	}
}

func TestProfileErrors(t *testing.T) {
	tests := []struct {
		name, doc, key, msg string
		kind                error
	}{
		{"unknown extends", `{"moat": {"profiles": {"a": {"extends": [/*@*/"claud"]}}}}`,
			"moat.profiles.a.extends[0]", `extends "claud", which is not a profile`, ErrProfile},
		{"cycle", `{"moat": {"profiles": {"a": {"extends": ["b"]}, "b": {"extends": [/*@*/"a"]}}}}`,
			"moat.profiles.b.extends[0]", "cycle: a -> b -> a", ErrProfile},
		{"self", `{"moat": {"profiles": {"a": {"extends": [/*@*/"a"]}}}}`,
			"moat.profiles.a.extends[0]", "cycle", ErrProfile},
		{"built-in name", `{"moat": {"profiles": {/*@*/"claude": {}}}}`,
			"moat.profiles.claude", "is built in", ErrProfile},
		{"bad name", `{"moat": {"profiles": {/*@*/"My Work": {}}}}`,
			`moat.profiles["My Work"]`, "not a profile name", ErrProfile},
		{"bad defaultProfiles name", `{"moat": {"defaultProfiles": [/*@*/"X"]}}`,
			"moat.defaultProfiles[0]", "not a profile name", ErrProfile},
		{"duplicate", `{"moat": {"profiles": {"a": {}, /*@*/"a": {}}}}`,
			"moat.profiles.a", "defined twice", ErrDuplicate},
		{"user-only key in a profile", `{"moat": {"profiles": {"a": {/*@*/"ignoreViolations": {}}}}}`,
			"moat.profiles.a.ignoreViolations", "unknown key", ErrUnknownKey},
		{"nested profiles", `{"moat": {"profiles": {"a": {"moat": {/*@*/"profiles": {}}}}}}`,
			"moat.profiles.a.moat.profiles", "unknown key", ErrUnknownKey},
		{"bad rule inside", `{"moat": {"profiles": {"a": {"filesystem": {"allowWrite": [/*@*/"src/*"]}}}}}`,
			"moat.profiles.a.filesystem.allowWrite[0]", "glob", ErrPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s.json", []byte(tt.doc))
			checkErr(t, tt.doc, err, tt.kind, tt.key, tt.msg)
		})
	}

	// Names checked when compiling: --profile and defaultProfiles.
	_, err := CompileLayers(Layers{Profiles: []string{"claud"}}, testEnv)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrProfile) || e.Key != "--profile" || !strings.Contains(e.Hint(), `did you mean "claude"?`) {
		t.Errorf("--profile claud: %v (hint %q)", err, e.Hint())
	}
	doc := `{"moat": {"defaultProfiles": [/*@*/"nope"]}}`
	_, err = Compile(mustParse(t, doc), Flags{}, testEnv)
	checkErr(t, doc, err, ErrProfile, "moat.defaultProfiles[0]", `no profile named "nope"`)
}
