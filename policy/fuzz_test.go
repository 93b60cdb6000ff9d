package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

var sentinels = []error{ErrSyntax, ErrUnknownKey, ErrDuplicate, ErrType, ErrValue, ErrPath, ErrDomain, ErrUnsupported, ErrConflict, ErrEnv,
	ErrProfile, ErrUntrusted}

// FuzzParse feeds arbitrary bytes to Parse and Compile (and, split on newlines, to
// the flags), and checks that nothing panics, every error is a classified *Error,
// and every compiled policy keeps the invariants the sandbox relies on.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json*")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		`{}`,
		`{"filesystem": {"denyRead": ["**/.env", "~/.ssh", "../x/*"], "allowWrite": [".", "~", "/tmp/**"]}}`,
		`{"network": {"allowedDomains": ["*.a.com:443", "[::1]:80"], "deniedDomains": ["*"]}}`,
		`{"credentials": {"envVars": [{"name": "A", "mode": "mask", "injectHosts": ["a.com"]}]}, "network": {"allowedDomains": ["a.com"]}}`,
		`{"moat": {"unprotect": [".vscode", "~/.bashrc"]}, "mandatoryDenySearchDepth": 3}`,
		"// c\n{\"filesystem\": {\"denyWrite\": [\"/a/[b]/**\", ],}, /* x */}",
		"-\n~\n..\n[\n**/..\n\\",
		`{"moat": {"allowSecrets": ["~/.npmrc", ".env"], "passEnv": ["GH_*"], "ignoreFiles": [".cursorignore"], "defaultProfiles": ["claude"]}}`,
		`{"moat": {"profiles": {"a": {"extends": ["node", "b"], "network": {"allowedDomains": ["x.com"]}}, "b": {"moat": {"passEnv": ["B"]}}}, "defaultProfiles": ["a"]}}`,
		`{"moat": {"trustedProjects": [{"path": "/w/.moat.jsonc", "sha256": "` + strings.Repeat("0", 64) + `"}]}}`,
		"claude\n/home/u/.ssh/id_rsa\napi.anthropic.com\nGITHUB_TOKEN=x\n",
	} {
		f.Add([]byte(seed))
	}
	env := Env{Cwd: "/home/u/[proj]", Home: "/home/u"}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f.json", data)
		if err != nil {
			checkFuzzErr(t, err)
			s = nil
		}
		lines := strings.Split(string(data), "\n")
		flags := []Flags{{}, {DenyRead: lines}, {DenyWrite: lines}, {AllowRead: lines}, {AllowWrite: lines},
			{AllowNet: lines}, {DenyNet: lines}, {PassEnv: lines}}
		var layers []Layers
		for _, fl := range flags {
			layers = append(layers, Layers{User: s, Flags: fl})
		}
		// The same file as a project file (trusted by its hash, or not), and the
		// lines as profile names.
		if s != nil {
			trusting := &Settings{File: "u.json", Moat: MoatSettings{TrustedProjects: []TrustedProject{{Path: "/home/u/[proj]/.moat.jsonc", SHA256: s.SHA256}}}}
			layers = append(layers, Layers{Project: s, ProjectPath: "/home/u/[proj]/.moat.jsonc"},
				Layers{User: trusting, Project: s, ProjectPath: "/home/u/[proj]/.moat.jsonc"})
		}
		layers = append(layers, Layers{Profiles: lines[:min(len(lines), 4)]})
		for _, l := range layers {
			p, err := CompileLayers(l, env)
			if err != nil {
				checkFuzzErr(t, err)
				continue
			}
			checkInvariants(t, p)
			checkExplain(t, p, lines)
		}
	})
}

// checkExplain runs the explanations and the environment filter on arbitrary
// input: no panic, and every denial says why.
func checkExplain(t *testing.T, p *Policy, lines []string) {
	t.Helper()
	for _, l := range lines[:min(len(lines), 8)] {
		l = l[:min(len(l), 256)]
		path := filepath.Clean("/" + l)
		if v := p.ExplainPath(path); (!v.Read || !v.Write) && v.WriteRule.Kind == "" {
			t.Fatalf("ExplainPath(%q) gave no deciding rule: %+v", path, v)
		}
		host, portStr, _ := strings.Cut(l, ":")
		port, _ := strconv.Atoi(portStr)
		if v := p.ExplainHost(host, port); !v.Allowed && v.Reason == "" {
			t.Fatalf("ExplainHost(%q, %d) denied without a reason", host, port)
		} else if v.Allowed && (v.Rule == nil || port < 1) {
			t.Fatalf("ExplainHost(%q, %d) allowed without a rule", host, port)
		}
	}
	kept, removed := p.FilterEnv(lines)
	if len(kept)+len(removed) < len(lines) {
		t.Fatalf("FilterEnv lost variables: %d in, %d kept, %d removed", len(lines), len(kept), len(removed))
	}
}

func checkFuzzErr(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is a %T, not an *Error", err, err)
	}
	classified := false
	for _, s := range sentinels {
		classified = classified || errors.Is(err, s)
	}
	if !classified {
		t.Fatalf("error %q wraps no sentinel", err)
	}
	if e.File != "" && e.Line < 1 && !errors.Is(err, ErrValue) {
		t.Fatalf("error %q from the file has no line", err)
	}
	if e.Error() == "" {
		t.Fatalf("empty error message")
	}
}

// checkInvariants checks what the sandbox relies on in every compiled policy.
func checkInvariants(t *testing.T, p *Policy) {
	t.Helper()
	clean := func(what, path string) {
		if !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.IndexByte(path, 0) >= 0 {
			t.Fatalf("%s path %q is not absolute, clean and NUL-free", what, path)
		}
	}
	clean("cwd", p.Cwd)
	clean("home", p.Home)
	lists := map[string][]Rule{"DenyRead": p.DenyRead, "AllowRead": p.AllowRead, "AllowWrite": p.AllowWrite, "DenyWrite": p.DenyWrite}
	for name, rules := range lists {
		seen := map[string]bool{}
		for _, r := range rules {
			clean(name, r.Path)
			if r.Origin == "" {
				t.Fatalf("%s rule %q has no origin", name, r.Path)
			}
			if seen[r.Path] {
				t.Fatalf("%s lists %q twice", name, r.Path)
			}
			seen[r.Path] = true
			if r.Glob && !doublestar.ValidatePattern(r.Path) {
				t.Fatalf("%s glob %q is not a valid pattern", name, r.Path)
			}
			if r.Glob && (name == "AllowRead" || name == "AllowWrite") {
				t.Fatalf("%s has glob %q", name, r.Path)
			}
			if r.Glob {
				base, _ := doublestar.SplitPattern(r.Path)
				if !filepath.IsAbs(base) {
					t.Fatalf("%s glob %q has a relative base %q", name, r.Path, base)
				}
			}
		}
	}
	for _, s := range p.Network.AllowUnixSockets {
		clean("socket", s)
	}
	for _, d := range append(append([]DomainRule(nil), p.Network.AllowedDomains...), p.Network.DeniedDomains...) {
		if d.Host == "" || d.Port < 0 || d.Port > 65535 || strings.ContainsAny(d.Host, "\x00/ ") {
			t.Fatalf("bad domain rule %+v", d)
		}
	}
	for _, e := range p.EnvVars {
		if !envNameOK(e.Name) || (e.Mode != ModeDeny && e.Mode != ModeMask) {
			t.Fatalf("bad env rule %+v", e)
		}
	}
	for _, e := range p.Protected {
		if checkUnprotect(unprotectName(e)) != nil {
			t.Fatalf("protected %+v is not in the table", e)
		}
	}
	if p.ProtectedDepth < 1 || p.ProtectedDepth > 10 {
		t.Fatalf("ProtectedDepth = %d", p.ProtectedDepth)
	}
	for _, e := range p.PassEnv {
		if checkPassEnv(e.Pattern) != nil || e.Origin == "" {
			t.Fatalf("bad passEnv %+v", e)
		}
	}
	if len(p.IgnoreFiles) == 0 || p.IgnoreFiles[0].Name != IgnoreFileName {
		t.Fatalf("IgnoreFiles = %+v, want .moatignore first", p.IgnoreFiles)
	}
	for _, f := range p.IgnoreFiles {
		if checkIgnoreFileName(f.Name) != nil || f.Origin == "" {
			t.Fatalf("bad ignore file %+v", f)
		}
	}
	for _, o := range append(append([]OptOut(nil), p.AllowedSecrets...), p.Unprotected...) {
		if o.Origin == "" {
			t.Fatalf("opt-out %+v has no origin", o)
		}
	}
	for _, a := range p.Profiles {
		if checkProfileName(a.Name) != nil || a.Origin == "" {
			t.Fatalf("bad applied profile %+v", a)
		}
	}
	// The secret table is always there, minus the entries dropped by name.
	dropped := map[string]bool{}
	for _, o := range p.AllowedSecrets {
		dropped[o.Name] = true
	}
	have := map[string]bool{}
	for _, r := range p.DenyRead {
		if name, ok := SecretName(r.Origin); ok {
			have[name] = true
		}
	}
	for _, s := range secretTable {
		if have[s.Name] == dropped[s.Name] {
			t.Fatalf("secret %s: in DenyRead %v, dropped %v", s.Name, have[s.Name], dropped[s.Name])
		}
	}
}
