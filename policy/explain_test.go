package policy

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func rule(p string) Rule { return Rule{Path: p, Origin: "o:" + p} }

func glob(p string) Rule { return Rule{Path: p, Glob: true, Origin: "o:" + p} }

// TestExplainPath checks the verdicts against the planner's semantics
// (sandbox/plan.go stateOf): the deepest read rule decides, deny wins a tie,
// allowWrite implies read, denyWrite and protected paths win over allowWrite,
// private directories hide the host's content.
func TestExplainPath(t *testing.T) {
	gitHooks := Protected{Name: ".git/hooks", Dir: true, Where: WhereWorkspace, Reason: "hooks run"}
	gitConfig := Protected{Name: ".git/config", Where: WhereWorkspace, Reason: "config runs"}
	bashrc := Protected{Name: ".bashrc", Where: WhereHome, Reason: "sourced"}
	tests := []struct {
		name        string
		pol         Policy
		path        string
		read, write bool
		readBy      string // Kind and rule path of the deciding rule: "denyRead /h/s"
		writeBy     string
	}{
		{"no rules: read, not write", Policy{}, "/etc/passwd", true, false, "default ", "default "},
		{"deny read below", Policy{DenyRead: []Rule{rule("/h/s")}}, "/h/s/x", false, false, "denyRead /h/s", "denyRead /h/s"},
		{"deny read on the path", Policy{DenyRead: []Rule{rule("/h/s")}}, "/h/s", false, false, "denyRead /h/s", "denyRead /h/s"},
		{"deny read: sibling readable", Policy{DenyRead: []Rule{rule("/h/s")}}, "/h/sx", true, false, "default ", "default "},
		{"allowRead re-opens deeper", Policy{DenyRead: []Rule{rule("/h/s")}, AllowRead: []Rule{rule("/h/s/pub")}},
			"/h/s/pub/x", true, false, "allowRead /h/s/pub", "default "},
		{"deeper deny stays denied", Policy{DenyRead: []Rule{rule("/h/s"), rule("/h/s/pub/deep")}, AllowRead: []Rule{rule("/h/s/pub")}},
			"/h/s/pub/deep/k", false, false, "denyRead /h/s/pub/deep", "denyRead /h/s/pub/deep"},
		{"same path: deny wins", Policy{DenyRead: []Rule{rule("/h/s")}, AllowRead: []Rule{rule("/h/s")}},
			"/h/s/x", false, false, "denyRead /h/s", "denyRead /h/s"},
		{"allowWrite implies read", Policy{DenyRead: []Rule{rule("/h")}, AllowWrite: []Rule{rule("/h/ws")}},
			"/h/ws/x", true, true, "allowWrite /h/ws", "allowWrite /h/ws"},
		{"allowWrite vs denyRead on one path: deny", Policy{DenyRead: []Rule{rule("/w/x")}, AllowWrite: []Rule{rule("/w/x")}},
			"/w/x", false, false, "denyRead /w/x", "denyRead /w/x"},
		{"deny read inside writable", Policy{AllowWrite: []Rule{rule("/w")}, DenyRead: []Rule{rule("/w/.env")}},
			"/w/.env", false, false, "denyRead /w/.env", "denyRead /w/.env"},
		{"denyWrite wins", Policy{AllowWrite: []Rule{rule("/w")}, DenyWrite: []Rule{rule("/w/prod.json")}},
			"/w/prod.json", true, false, "allowWrite /w", "denyWrite /w/prod.json"},
		{"denyWrite above a deeper allowWrite", Policy{AllowWrite: []Rule{rule("/w"), rule("/w/sub")}, DenyWrite: []Rule{rule("/w/sub")}},
			"/w/sub/x", true, false, "allowWrite /w/sub", "denyWrite /w/sub"},
		{"denyWrite glob", Policy{AllowWrite: []Rule{rule("/w")}, DenyWrite: []Rule{glob("/w/**/*.pem")}},
			"/w/a/k.pem", true, false, "allowWrite /w", "denyWrite /w/**/*.pem"},
		{"deny glob", Policy{DenyRead: []Rule{glob("/w/**/.env")}}, "/w/a/b/.env", false, false, "denyRead /w/**/.env", "denyRead /w/**/.env"},
		{"deny glob: no match", Policy{DenyRead: []Rule{glob("/w/**/.env")}}, "/w/a/.envx", true, false, "default ", "default "},
		{"deny glob matching a directory covers it", Policy{DenyRead: []Rule{glob("/w/**/secrets")}},
			"/w/a/secrets/k", false, false, "denyRead /w/**/secrets", "denyRead /w/**/secrets"},
		{"a glob counts at its shallowest match", Policy{DenyRead: []Rule{glob("/w/**/secret")}, AllowRead: []Rule{rule("/w/secret/pub")}},
			"/w/secret/pub/secret/x", true, false, "allowRead /w/secret/pub", "default "},
		{"private /tmp", Policy{}, "/tmp/x", true, true, "private /tmp", "private /tmp"},
		{"private /run hides sockets", Policy{}, "/run/docker.sock", true, true, "private /run", "private /run"},
		{"denyWrite inside private", Policy{DenyWrite: []Rule{rule("/tmp/ro")}}, "/tmp/ro/x", true, false, "private /tmp", "denyWrite /tmp/ro"},
		{"denyRead inside private", Policy{DenyRead: []Rule{rule("/tmp/s")}}, "/tmp/s", false, false, "denyRead /tmp/s", "denyRead /tmp/s"},
		{"runtime dir is private", Policy{RuntimeDir: "/home/u/rt"}, "/home/u/rt/bus", true, true, "private /home/u/rt", "private /home/u/rt"},
		{"protected workspace dir", Policy{AllowWrite: []Rule{rule("/w")}, Protected: []Protected{gitHooks}},
			"/w/.git/hooks/pre-commit", true, false, "allowWrite /w", "protected /w/.git/hooks"},
		{"protected workspace file", Policy{AllowWrite: []Rule{rule("/w")}, Protected: []Protected{gitConfig}},
			"/w/.git/config", true, false, "allowWrite /w", "protected /w/.git/config"},
		{"a protected file does not cover its siblings", Policy{AllowWrite: []Rule{rule("/w")}, Protected: []Protected{gitConfig}},
			"/w/.git/config.bak", true, true, "allowWrite /w", "allowWrite /w"},
		{"protected at every writable root", Policy{AllowWrite: []Rule{rule("/w"), rule("/x")}, Protected: []Protected{gitHooks}},
			"/x/.git/hooks/h", true, false, "allowWrite /x", "protected /x/.git/hooks"},
		{"protected home entry when home is writable", Policy{Home: "/home/u", AllowWrite: []Rule{rule("/home/u")}, Protected: []Protected{bashrc}},
			"/home/u/.bashrc", true, false, "allowWrite /home/u", "protected /home/u/.bashrc"},
		{"unprotected: writable", Policy{AllowWrite: []Rule{rule("/w")}}, "/w/.git/hooks/h", true, true, "allowWrite /w", "allowWrite /w"},
		{"protected but not writable anyway", Policy{Protected: []Protected{gitHooks}}, "/w/.git/hooks/h", true, false, "default ", "default "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.pol
			if p.Home == "" {
				p.Home = "/home/u"
			}
			v := p.ExplainPath(tt.path)
			got := func(r PathRule) string { return r.Kind + " " + r.Path }
			if v.Read != tt.read || v.Write != tt.write || got(v.ReadRule) != tt.readBy || got(v.WriteRule) != tt.writeBy {
				t.Errorf("%s: read %v by %q, write %v by %q; want read %v by %q, write %v by %q",
					tt.path, v.Read, got(v.ReadRule), v.Write, got(v.WriteRule), tt.read, tt.readBy, tt.write, tt.writeBy)
			}
			if v.WriteRule.Kind == KindProtected && v.Protected == nil {
				t.Error("protected verdict without the entry")
			}
			if (!v.Read && v.ReadHint == "" && v.ReadRule.Kind != KindDenyRead) || (!v.Write && v.WriteHint == "") {
				t.Errorf("a denial without a hint: %+v", v)
			}
		})
	}
}

func TestExplainPathHints(t *testing.T) {
	p := mustCompile(t, mustParse(t, `{"filesystem": {"allowWrite": ["."], "denyRead": ["~/private"], "denyWrite": ["dist"]}}`),
		Flags{DenyWrite: []string{"go.sum"}, DenyRead: []string{"~/flagged"}})
	p.UserConfig = "/home/u/.config/moat/config.jsonc"
	tests := []struct{ path, read, write string }{
		{"/home/u/.ssh", `add "~/.ssh" to "moat": {"allowSecrets": [...]} in /home/u/.config/moat/config.jsonc`, "cannot be read"},
		{"/home/u/.ssh/config", "allow with --allow-read /home/u/.ssh/config (only that path)", "cannot be read"},
		{"/work/proj/.env.local", `add ".env.*" to "moat": {"allowSecrets"`, "cannot be read"},
		{"/home/u/private/x", "allow with --allow-read /home/u/private/x", "cannot be read"},
		{"/home/u/private", "remove the rule at s.json:1 filesystem.denyRead[0]", "cannot be read"},
		{"/home/u/flagged", "drop --deny-read /home/u/flagged", "cannot be read"},
		{"/work/proj/dist/a.js", "", "remove the rule at s.json:1 filesystem.denyWrite[0]"},
		{"/work/proj/go.sum", "", "drop --deny-write /work/proj/go.sum"},
		{"/work/proj/.vscode/tasks.json", "", `add ".vscode" to "moat": {"unprotect": [...]}`},
		{"/home/u/notes.txt", "", "allow with --allow-write /home/u/notes.txt"},
		{"/tmp/x", "", ""},
	}
	for _, tt := range tests {
		v := p.ExplainPath(tt.path)
		if !strings.Contains(v.ReadHint, tt.read) || (tt.read == "" && v.ReadHint != "") {
			t.Errorf("%s: read hint %q, want %q", tt.path, v.ReadHint, tt.read)
		}
		if !strings.Contains(v.WriteHint, tt.write) || (tt.write == "" && v.WriteHint != "") {
			t.Errorf("%s: write hint %q, want %q", tt.path, v.WriteHint, tt.write)
		}
	}
	if v := p.ExplainPath("/work/proj/.env.local"); len(v.Notes) == 0 {
		t.Error("a glob verdict without the note that globs cover paths existing at start")
	}
}

func TestExplainHost(t *testing.T) {
	s := mustParse(t, `{
		"network": {
			"allowedDomains": ["*.github.com", "api.github.com", "example.com:8080", "[::1]:3000", "10.0.0.1"],
			"deniedDomains": ["gist.github.com", "*:22"],
			"deniedDomainReasons": {"gist.github.com": "no gists"},
		},
	}`)
	p := mustCompile(t, s, Flags{})
	p.UserConfig = "/cfg.jsonc"
	tests := []struct {
		name, host string
		port       int
		allowed    bool
		rule       string // pattern of the deciding rule, "" for none
		text       string // in Reason or Hint
	}{
		{"exact preferred over wildcard", "api.github.com", 443, true, "api.github.com", "allowed by"},
		{"wildcard", "raw.github.com", 443, true, "*.github.com", "s.json:3 network.allowedDomains[0]"},
		{"wildcard is not the apex", "github.com", 443, false, "", "--allow-net github.com:443"},
		{"look-alike", "evilgithub.com", 443, false, "", "not in any allow list"},
		{"suffix trap", "api.github.com.evil.net", 443, false, "", "not in any allow list"},
		{"deny wins over allow", "gist.github.com", 443, false, "gist.github.com", "no gists"},
		{"deny by port", "api.github.com", 22, false, "*:22", "a deny rule wins"},
		{"port-specific allow", "example.com", 8080, true, "example.com:8080", ""},
		{"other port", "example.com", 443, false, "", "example.com:443"},
		{"case and trailing dot", "API.GitHub.com.", 443, true, "api.github.com", ""},
		{"IPv6 literal", "[::1]", 3000, true, "[::1]:3000", ""},
		{"IPv6 unbracketed", "::1", 3000, true, "[::1]:3000", ""},
		{"IPv6 hint in brackets", "::2", 80, false, "", "--allow-net [::2]:80"},
		{"IPv4 literal", "10.0.0.1", 5432, true, "10.0.0.1", ""},
		{"wildcards never match IPs", "1.github.com", 443, true, "*.github.com", ""},
		{"empty host", "", 443, false, "", "not a host name"},
		{"space", "a b.com", 443, false, "", "not a host name"},
		{"wildcard as host", "*.github.com", 443, false, "", "not a host name"},
		{"NUL", "a\x00.com", 443, false, "", "not a host name"},
		{"port 0", "api.github.com", 0, false, "", "not a port"},
		{"port too big", "api.github.com", 70000, false, "", "not a port"},
		{"profile suggested", "api.anthropic.com", 443, false, "", "the profile claude, opencode allows it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := p.ExplainHost(tt.host, tt.port)
			rule := ""
			if v.Rule != nil {
				rule = v.Rule.Pattern
			}
			if v.Allowed != tt.allowed || rule != tt.rule || !strings.Contains(v.Reason+" "+v.Hint, tt.text) {
				t.Errorf("ExplainHost(%q, %d) = %+v (rule %q)", tt.host, tt.port, v, rule)
			}
			if !v.Allowed && v.Reason == "" {
				t.Error("a denial without a reason")
			}
		})
	}
	// Nothing allowed: everything denied, with a hint.
	empty := mustCompile(t, nil, Flags{})
	if v := empty.ExplainHost("example.com", 443); v.Allowed || v.Hint == "" {
		t.Errorf("default policy: %+v", v)
	}
}

func TestResolve(t *testing.T) {
	p := mustCompile(t, nil, Flags{AllowWrite: []string{"/link/out"}, DenyRead: []string{"/link/*.key"}})
	real := map[string]string{"/link/out": "/real/out", "/home/u": "/data/u"}
	q := p.Resolve(func(s string) (string, error) {
		if r, ok := real[s]; ok {
			return r, nil
		}
		return "", fs.ErrNotExist
	})
	if q.Home != "/data/u" || !q.ExplainPath("/real/out/x").Write || p.ExplainPath("/real/out/x").Write {
		t.Errorf("Resolve: home %s, /real/out/x writable %v", q.Home, q.ExplainPath("/real/out/x").Write)
	}
	if got := own(q.DenyRead)[0].Path; got != "/link/*.key" {
		t.Errorf("glob changed to %s", got)
	}
	if kept := p.Resolve(func(string) (string, error) { return "", errors.New("x") }); kept.Home != p.Home || kept.AllowWrite[1].Path != "/link/out" {
		t.Errorf("paths eval fails on must stay: %+v", kept.AllowWrite)
	}
}
