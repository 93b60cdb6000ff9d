package policy

import (
	"sort"
	"strconv"
	"strings"
	"testing"
)

// profileWant is what one built-in profile must produce: paths as "~/..." for
// the home directory of testEnv, hosts on port 443.
type profileWant struct {
	// writable: the state the tool writes while it runs (for the agents, what
	// they were seen writing: transcripts, databases, logs, locks, caches).
	writable []string
	// readOnly: what runs code or steers later sessions (hooks, settings, MCP
	// server lists, instructions) and the installed programs.
	readOnly []string
	hosts    []string
	notHosts []string // hosts deliberately left out
	env      []string // variables passed despite the scrub table
	notEnv   []string
	secrets  []string // secret table entries re-opened, exactly
	extends  []string
}

// everyProfile has an entry for each built-in profile; TestEveryBuiltinProfile
// fails when a profile is added without one.
var everyProfile = map[string]profileWant{
	"claude": {
		writable: []string{"~/.claude/projects/-work-proj/s.jsonl", "~/.claude/telemetry/x.json", "~/.claude/sessions/x",
			"~/.claude/todos/x.json", "~/.claude/shell-snapshots/x.sh", "~/.claude.json", "~/.claude/.credentials.json",
			"~/.cache/claude/x", "~/.config/claude/x", "~/.local/state/claude/lock"},
		readOnly: []string{"~/.claude/settings.json", "~/.claude/settings.local.json", "~/.claude/CLAUDE.md",
			"~/.claude/commands/c.md", "~/.claude/agents/a.md", "~/.claude/skills/s/run.sh", "~/.claude/plugins/p/x",
			"~/.claude/hooks/h.sh", "~/.claude/output-styles/o.md", "~/.local/bin/claude", "~/.local/share/claude/versions/x"},
		hosts:    []string{"api.anthropic.com", "statsig.anthropic.com", "claude.ai", "platform.claude.com", "console.anthropic.com"},
		notHosts: []string{"sentry.io", "o1.ingest.sentry.io", "github.com", "anthropic.com.evil.example", "api.openai.com"},
		env:      []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"},
		notEnv:   []string{"OPENAI_API_KEY", "GEMINI_API_KEY"},
		secrets:  []string{"~/.claude/.credentials.json"},
	},
	"codex": {
		writable: []string{"~/.codex/sessions/2026/11/22/rollout.jsonl", "~/.codex/history.jsonl", "~/.codex/state_5.sqlite",
			"~/.codex/logs_2.sqlite-wal", "~/.codex/installation_id", "~/.codex/tmp/arg0-linux/x/apply_patch",
			"~/.codex/shell_snapshots/x.sh", "~/.codex/auth.json", "~/.cache/codex/x"},
		readOnly: []string{"~/.codex/config.toml", "~/.codex/rules/default.rules", "~/.codex/hooks.json", "~/.codex/AGENTS.md",
			"~/.codex/skills/s/run.sh", "~/.codex/packages/codex/bin/codex"},
		hosts:    []string{"api.openai.com", "chatgpt.com", "auth.openai.com"},
		notHosts: []string{"github.com", "api.anthropic.com", "openai.com"},
		env:      []string{"OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_ACCESS_TOKEN"},
		notEnv:   []string{"ANTHROPIC_API_KEY"},
		secrets:  []string{"~/.codex/auth.json"},
	},
	"gemini": {
		writable: []string{"~/.gemini/projects.json", "~/.gemini/tmp/proj/chats/x.json", "~/.gemini/history/proj/.project_root",
			"~/.gemini/installation_id", "~/.gemini/oauth_creds.json", "~/.cache/gemini/x"},
		readOnly: []string{"~/.gemini/settings.json", "~/.gemini/GEMINI.md", "~/.gemini/commands/c.toml",
			"~/.gemini/extensions/e/gemini-extension.json", "~/.gemini/policies/p.toml"},
		hosts: []string{"generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com"},
		// Not every Google API the login's token opens, not telemetry.
		notHosts: []string{"storage.googleapis.com", "play.googleapis.com", "www.googleapis.com", "api.openai.com"},
		env:      []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"},
		notEnv:   []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"},
		secrets:  []string{"~/.gemini/oauth_creds.json"},
	},
	"opencode": {
		writable: []string{"~/.local/share/opencode/opencode.db", "~/.local/share/opencode/log/opencode.log",
			"~/.local/share/opencode/auth.json", "~/.local/state/opencode/locks/x.lock", "~/.cache/opencode/models.json",
			"~/.local/share/opentui/x"},
		readOnly: []string{"~/.config/opencode/opencode.json", "~/.config/opencode/plugin/p.ts", "~/.config/opencode/agent/a.md",
			"~/.opencode/bin/opencode", "~/.local/bin/opencode"},
		hosts: []string{"models.dev", "opencode.ai", "registry.npmjs.org", "api.anthropic.com", "api.openai.com", "openrouter.ai",
			"generativelanguage.googleapis.com"},
		notHosts: []string{"github.com", "storage.googleapis.com"},
		env: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY",
			"OPENCODE_API_KEY"},
		notEnv:  []string{"GITHUB_TOKEN", "CODEX_API_KEY"},
		secrets: []string{"~/.local/share/opencode/auth.json"},
	},
	"cursor": {
		writable: []string{"~/.cursor/chats/x", "~/.cursor/projects/p/x", "~/.cursor/cli-config.json", "~/.config/cursor/auth.json",
			"~/.cache/cursor-compile-cache/x"},
		readOnly: []string{"~/.cursor/mcp.json", "~/.cursor/hooks.json", "~/.cursor/rules/r.mdc",
			"~/.local/share/cursor-agent/versions/x/cursor-agent", "~/.local/bin/cursor-agent"},
		hosts:    []string{"api2.cursor.sh", "api3.cursor.sh", "repo42.cursor.sh"},
		notHosts: []string{"cursor.sh.evil.example", "api.anthropic.com"},
		env:      []string{"CURSOR_API_KEY", "CURSOR_AUTH_TOKEN"},
		notEnv:   []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"},
		secrets:  []string{"~/.cursor/cli-config.json", "~/.config/cursor/auth.json"},
	},
	"node": {
		writable: []string{"~/.npm/_cacache/index-v5/x", "~/.npm/_logs/x.log", "~/.cache/yarn/v6/x", "~/.yarn/berry/cache/x.zip",
			"~/.local/share/pnpm/store/v3/x", "~/.cache/pnpm/x", "~/.bun/install/cache/x", "~/.cache/node-gyp/20.0.0/x.h"},
		readOnly: []string{"~/.nvm/versions/node/v20/bin/node", "~/.volta/bin/node", "~/.fnm/x", "~/.npm-global/bin/x",
			"~/.bun/bin/bun", "~/.npmrc", "~/.yarnrc.yml", "~/.local/bin/x"},
		notHosts: []string{"registry.npmjs.org", "registry.yarnpkg.com"},
		notEnv:   []string{"NPM_TOKEN", "NODE_AUTH_TOKEN"},
	},
	"python": {
		writable: []string{"~/.cache/pip/http-v2/x", "~/.cache/pip/wheels/x.whl", "~/.cache/uv/x", "~/.cache/pypoetry/virtualenvs/x"},
		readOnly: []string{"~/.local/share/uv/python/x/bin/python", "~/.pyenv/versions/x", "~/.local/bin/x", "~/.pypirc",
			"~/.config/pip/pip.conf"},
		notHosts: []string{"pypi.org", "files.pythonhosted.org"},
		notEnv:   []string{"TWINE_PASSWORD", "UV_PUBLISH_TOKEN"},
	},
	"go": {
		writable: []string{"~/go/pkg/mod/cache/download/x.zip", "~/go/pkg/mod/github.com/x@v1/x.go", "~/.cache/go-build/00/x-d",
			"~/go/pkg/sumdb/sum.golang.org/latest"},
		// ~/.config/go/env sets GOFLAGS (-toolexec runs a program on every build).
		readOnly: []string{"~/go/bin/x", "~/.config/go/env", "~/.local/bin/x"},
		notHosts: []string{"proxy.golang.org", "sum.golang.org"},
		notEnv:   []string{"GITHUB_TOKEN"},
	},
	"rust": {
		writable: []string{"~/.cargo/registry/index/x", "~/.cargo/registry/cache/x.crate", "~/.cargo/registry/src/x/lib.rs",
			"~/.cargo/git/db/x"},
		readOnly: []string{"~/.cargo/bin/cargo", "~/.rustup/toolchains/x/bin/rustc", "~/.cargo/config.toml",
			"~/.cargo/credentials.toml", "~/.cargo/env"},
		notHosts: []string{"index.crates.io", "static.crates.io"},
		notEnv:   []string{"CARGO_REGISTRY_TOKEN"},
	},
	"node-registry": {
		hosts:    []string{"registry.npmjs.org", "registry.yarnpkg.com"},
		notHosts: []string{"npmjs.org", "www.npmjs.com", "pypi.org"},
		notEnv:   []string{"NPM_TOKEN"},
	},
	"python-registry": {
		hosts:    []string{"pypi.org", "files.pythonhosted.org"},
		notHosts: []string{"upload.pypi.org", "registry.npmjs.org"},
		notEnv:   []string{"TWINE_PASSWORD"},
	},
	"go-registry": {
		hosts:    []string{"proxy.golang.org", "sum.golang.org"},
		notHosts: []string{"github.com", "golang.org"},
	},
	"rust-registry": {
		hosts:    []string{"index.crates.io", "static.crates.io", "crates.io"},
		notHosts: []string{"github.com", "pypi.org"},
		notEnv:   []string{"CARGO_REGISTRY_TOKEN"},
	},
	"registries": {
		extends: []string{"node-registry", "python-registry", "go-registry", "rust-registry"},
		hosts: []string{"registry.npmjs.org", "registry.yarnpkg.com", "pypi.org", "files.pythonhosted.org", "proxy.golang.org",
			"sum.golang.org", "index.crates.io", "static.crates.io", "crates.io"},
		notHosts: []string{"github.com", "upload.pypi.org"},
		notEnv:   []string{"NPM_TOKEN", "CARGO_REGISTRY_TOKEN"},
	},
}

// TestEveryBuiltinProfile checks each built-in profile twice: against its entry in
// everyProfile (what the tool is known to need and must not get), and against its
// own file (every rule it writes has the effect it says). Both run against the
// default policy to show that the profile, not the base, grants each thing.
func TestEveryBuiltinProfile(t *testing.T) {
	m, err := builtinProfiles()
	if err != nil {
		t.Fatal(err)
	}
	for name := range m {
		if _, ok := everyProfile[name]; !ok {
			t.Errorf("built-in profile %s has no entry in everyProfile", name)
		}
	}
	for name := range everyProfile {
		if m[name] == nil {
			t.Errorf("everyProfile names %s, which is not a built-in profile", name)
		}
	}
	base := mustCompile(t, nil, Flags{})
	home := func(p string) string { return testEnv.Home + "/" + strings.TrimPrefix(p, "~/") }
	// Every agent's login, to check that a profile opens no other's.
	var logins []string
	for _, p := range m {
		for _, s := range p.Settings.Moat.AllowSecrets {
			logins = append(logins, s.Value)
		}
	}

	for name, want := range everyProfile {
		prof := m[name]
		if prof == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			p, err := CompileLayers(Layers{Profiles: []string{name}}, testEnv)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, p)

			// What the tool needs and must not get.
			for _, w := range want.writable {
				if v := p.ExplainPath(home(w)); !v.Write || !v.Read {
					t.Errorf("%s: not writable (read %v, write %v: %+v)", w, v.Read, v.Write, v.WriteRule)
				}
				if base.ExplainPath(home(w)).Write {
					t.Errorf("%s: writable without the profile", w)
				}
			}
			for _, ro := range want.readOnly {
				if v := p.ExplainPath(home(ro)); v.Write {
					t.Errorf("%s: writable by %+v", ro, v.WriteRule)
				}
			}
			for _, h := range want.hosts {
				if v := p.ExplainHost(h, 443); !v.Allowed || !strings.HasPrefix(v.Rule.Origin, "profile ") {
					t.Errorf("%s: not allowed by the profile: %+v", h, v)
				}
				if base.ExplainHost(h, 443).Allowed {
					t.Errorf("%s: allowed without the profile", h)
				}
			}
			for _, h := range want.notHosts {
				if v := p.ExplainHost(h, 443); v.Allowed {
					t.Errorf("%s: allowed by %+v", h, v.Rule)
				}
			}
			for _, e := range want.env {
				if v := p.ExplainEnv(e); !v.Kept || v.Masked {
					t.Errorf("%s: not passed: %+v", e, v)
				}
				if base.ExplainEnv(e).Kept {
					t.Errorf("%s: passed without the profile, so the profile need not list it", e)
				}
			}
			for _, e := range append([]string{"GITHUB_TOKEN", "GH_TOKEN", "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK"}, want.notEnv...) {
				if v := p.ExplainEnv(e); v.Kept {
					t.Errorf("%s: passed by %s", e, v.Origin)
				}
			}
			var opened []string
			for _, s := range p.AllowedSecrets {
				opened = append(opened, s.Name)
			}
			sort.Strings(opened)
			wantSecrets := append([]string(nil), want.secrets...)
			sort.Strings(wantSecrets)
			if strings.Join(opened, " ") != strings.Join(wantSecrets, " ") {
				t.Errorf("re-opens the secrets %q, want %q", opened, wantSecrets)
			}
			for _, l := range logins {
				mine := false
				for _, s := range want.secrets {
					mine = mine || s == l
				}
				if v := p.ExplainPath(home(l)); v.Read != mine {
					t.Errorf("%s: readable %v, want %v", l, v.Read, mine)
				}
			}
			var ext []string
			for _, e := range prof.Extends {
				ext = append(ext, e.Value)
			}
			if strings.Join(ext, " ") != strings.Join(want.extends, " ") {
				t.Errorf("extends %q, want %q", ext, want.extends)
			}
			// Never: a secret outside its own login, the home directory or the
			// shell's startup files, programs on PATH.
			for _, path := range []string{"~/.ssh/id_ed25519", "~/.aws/credentials", "~/.config/gh/hosts.yml", "~/.netrc"} {
				if p.ExplainPath(home(path)).Read {
					t.Errorf("%s: readable", path)
				}
			}
			for _, path := range []string{"~/x", "~/.bashrc", "~/.profile", "~/.zshrc", "~/.gitconfig", "~/.config/git/config",
				"~/.local/bin/x", "~/bin/x", "~/.config/moat/config.jsonc", "/usr/local/bin/x"} {
				if p.ExplainPath(home(path)).Write || p.ExplainPath(path).Write {
					t.Errorf("%s: writable", path)
				}
			}

			// Every rule of the profile's own file has its effect.
			checkProfileFile(t, p, base, prof, home)
		})
	}
}

// checkProfileFile checks a profile's rules, and those of the profiles it extends,
// against the compiled policy.
func checkProfileFile(t *testing.T, p, base *Policy, prof *Profile, home func(string) string) {
	t.Helper()
	m, _ := builtinProfiles()
	s := prof.Settings
	for _, e := range prof.Extends {
		checkProfileFile(t, p, base, m[e.Value], home)
	}
	under := func(path string, items []Item) bool {
		for _, it := range items {
			d := home(it.Value)
			if path == d || strings.HasPrefix(path, d+"/") {
				return true
			}
		}
		return false
	}
	for _, it := range s.Filesystem.AllowWrite {
		path := home(it.Value)
		if under(path, s.Filesystem.DenyWrite) {
			continue
		}
		if v := p.ExplainPath(path); !v.Write {
			t.Errorf("%s %s: allowWrite %s is not writable: %+v", prof.Name, it.Key, it.Value, v.WriteRule)
		}
		if v := p.ExplainPath(path + "/x"); !v.Write && !strings.HasSuffix(it.Value, ".json") {
			t.Errorf("%s %s: a file inside allowWrite %s is not writable: %+v", prof.Name, it.Key, it.Value, v.WriteRule)
		}
	}
	for _, it := range s.Filesystem.DenyWrite {
		for _, path := range []string{home(it.Value), home(it.Value) + "/x"} {
			if v := p.ExplainPath(path); v.Write || !v.Read {
				t.Errorf("%s %s: denyWrite %s: read %v, write %v", prof.Name, it.Key, path, v.Read, v.Write)
			}
		}
	}
	for _, d := range s.Network.AllowedDomains {
		host, port := d.Host, d.Port
		if strings.HasPrefix(host, "*.") {
			host = "api" + host[1:]
		}
		if port == 0 {
			port = 443
		}
		if v := p.ExplainHost(host, port); !v.Allowed {
			t.Errorf("%s: allowedDomains %s: %s:%s denied: %+v", prof.Name, d.Pattern, host, strconv.Itoa(port), v)
		}
	}
	for _, it := range s.Moat.PassEnv {
		name := strings.ReplaceAll(it.Value, "*", "X")
		if v := p.ExplainEnv(name); !v.Kept {
			t.Errorf("%s %s: passEnv %s: %s is removed: %+v", prof.Name, it.Key, it.Value, name, v)
		}
	}
	for _, it := range s.Moat.AllowSecrets {
		if !p.ExplainPath(home(it.Value)).Read || base.ExplainPath(home(it.Value)).Read {
			t.Errorf("%s %s: %s should be hidden by default and readable with the profile", prof.Name, it.Key, it.Value)
		}
	}
	for _, it := range s.Moat.Unprotect {
		found := false
		for _, u := range p.Unprotected {
			found = found || u.Name == it.Value
		}
		if !found {
			t.Errorf("%s %s: unprotect %s is not in the policy's Unprotected list", prof.Name, it.Key, it.Value)
		}
	}
}
