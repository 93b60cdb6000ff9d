package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

var sentinels = []error{ErrSyntax, ErrUnknownKey, ErrDuplicate, ErrType, ErrValue, ErrPath, ErrDomain, ErrUnsupported, ErrConflict, ErrEnv}

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
		flags := []Flags{{}, {DenyRead: lines}, {DenyWrite: lines}, {AllowRead: lines}, {AllowWrite: lines}}
		for _, fl := range flags {
			p, err := Compile(s, fl, env)
			if err != nil {
				checkFuzzErr(t, err)
				continue
			}
			checkInvariants(t, p)
		}
	})
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
}
