package policy

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

var testEnv = Env{Cwd: "/work/proj", Home: "/home/u"}

func mustParse(t *testing.T, doc string) *Settings {
	t.Helper()
	s, err := Parse("s.json", []byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func mustCompile(t *testing.T, s *Settings, f Flags) *Policy {
	t.Helper()
	p, err := Compile(s, f, testEnv)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	checkInvariants(t, p)
	return p
}

func paths(rules []Rule) []string {
	out := []string{}
	for _, r := range rules {
		out = append(out, r.Path)
	}
	return out
}

// own drops the rules of the built-in secret table, which every policy has.
func own(rules []Rule) []Rule {
	out := []Rule{}
	for _, r := range rules {
		if !strings.HasPrefix(r.Origin, OriginDefault+": ") {
			out = append(out, r)
		}
	}
	return out
}

func TestDefault(t *testing.T) {
	for name, get := range map[string]func() (*Policy, error){
		"Compile(nil)": func() (*Policy, error) { return Compile(nil, Flags{}, testEnv) },
		"Default":      func() (*Policy, error) { return Default(testEnv) },
	} {
		t.Run(name, func(t *testing.T) {
			p, err := get()
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, p)
			if want := []Rule{{Path: "/work/proj", Origin: OriginDefault}}; !reflect.DeepEqual(p.AllowWrite, want) {
				t.Errorf("AllowWrite = %+v, want %+v", p.AllowWrite, want)
			}
			if !reflect.DeepEqual(p.Protected, protectedTable) || p.ProtectedDepth != 3 {
				t.Errorf("Protected = %d entries, depth %d; want the whole table, depth 3", len(p.Protected), p.ProtectedDepth)
			}
			if len(own(p.DenyRead)) != 0 || len(p.DenyRead) != secretRuleCount() {
				t.Errorf("DenyRead has %d rules (%d not from the secret table), want the %d of the secret table",
					len(p.DenyRead), len(own(p.DenyRead)), secretRuleCount())
			}
			if len(p.AllowRead)+len(p.DenyWrite)+len(p.EnvVars)+len(p.PassEnv)+len(p.Profiles) != 0 ||
				len(p.Network.AllowedDomains)+len(p.Network.DeniedDomains) != 0 {
				t.Errorf("default policy has rules beyond the tables: %+v", p)
			}
			if want := []IgnoreFile{{Name: ".moatignore", Origin: "default: moat's ignore file"}}; !reflect.DeepEqual(p.IgnoreFiles, want) {
				t.Errorf("IgnoreFiles = %+v", p.IgnoreFiles)
			}
		})
	}
}

func secretRuleCount() int {
	n := 0
	for _, s := range secretTable {
		n += len(secretPaths(s))
	}
	return n
}

func TestSettingsHaveNoImplicitCwd(t *testing.T) {
	p := mustCompile(t, mustParse(t, `{}`), Flags{})
	if len(p.AllowWrite) != 0 {
		t.Errorf("{} made %v writable; srt semantics: nothing is writable unless listed", paths(p.AllowWrite))
	}
	if len(p.Protected) != len(protectedTable) {
		t.Errorf("{} protects %d paths, want the whole table (%d)", len(p.Protected), len(protectedTable))
	}
	p = mustCompile(t, mustParse(t, `{"filesystem": {"allowWrite": ["."]}}`), Flags{})
	if got := paths(p.AllowWrite); !reflect.DeepEqual(got, []string{"/work/proj"}) {
		t.Errorf("allowWrite [.] = %v", got)
	}
}

func TestPathExpansion(t *testing.T) {
	tests := []struct {
		raw, want string
		glob      bool
		env       *Env
	}{
		{raw: "~", want: "/home/u"},
		{raw: "~/", want: "/home/u"},
		{raw: "~/.sshx", want: "/home/u/.sshx"},
		{raw: "~/.ssh/../.awsx", want: "/home/u/.awsx"},
		{raw: ".", want: "/work/proj"},
		{raw: "./src/", want: "/work/proj/src"},
		{raw: "src", want: "/work/proj/src"},
		{raw: "../other", want: "/work/other"},
		{raw: "../..", want: "/"},
		{raw: "../../..", want: ""}, // rejected: climbs above /
		{raw: "~/../..", want: "/"},
		{raw: "~/../../x/../..", want: ""},
		{raw: "/tmp/", want: "/tmp"},
		{raw: "/a//b/./c", want: "/a/b/c"},
		{raw: "/", want: "/"},
		{raw: "~user-ish/x", want: ""}, // rejected: ~user form
		{raw: "dir/~/x", want: "/work/proj/dir/~/x"},
		{raw: "/tmp/build/**", want: "/tmp/build"},
		{raw: "/tmp/build/**/**", want: "/tmp/build"},
		{raw: "**", want: "/work/proj"},
		{raw: "/**", want: "/"},
		{raw: "**/.env", want: "/work/proj/**/.env", glob: true},
		{raw: "~/**/*.pem", want: "/home/u/**/*.pem", glob: true},
		{raw: "/x/**/y/**", want: "/x/**/y", glob: true},
		{raw: "./a/../*.key", want: "/work/proj/*.key", glob: true},
		{raw: "file?.txt", want: "/work/proj/file?.txt", glob: true},
		{raw: "[ab].txt", want: "/work/proj/[ab].txt", glob: true},
		{raw: "*{a,b}", want: `/work/proj/*\{a,b\}`, glob: true},
		{raw: `\{x}*`, want: `/work/proj/\{x\}*`, glob: true},
		{raw: "*.log", want: `/w/\[p\] \{q\}\*/*.log`, glob: true, env: &Env{Cwd: "/w/[p] {q}*", Home: "/h"}},
		{raw: ".", want: "/w/[p]", env: &Env{Cwd: "/w/[p]", Home: "/h"}},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			env := testEnv
			if tt.env != nil {
				env = *tt.env
			}
			p, err := Compile(nil, Flags{DenyRead: []string{tt.raw}}, env)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("accepted, got %v", paths(p.DenyRead))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, p)
			r := own(p.DenyRead)[0]
			if r.Path != tt.want || r.Glob != tt.glob || r.Origin != "flag --deny-read" {
				t.Errorf("got %+v, want path %q glob %v", r, tt.want, tt.glob)
			}
		})
	}
}

func TestCompileErrorsCarryPosition(t *testing.T) {
	tests := []struct{ name, doc, key string }{
		{"relative climbs above root", `{"filesystem": {"allowWrite": ["a", /*@*/"../../../x"]}}`, "filesystem.allowWrite[1]"},
		{"home climbs above root", `{"filesystem": {"denyRead": [/*@*/"~/../../../etc"]}}`, "filesystem.denyRead[0]"},
		{"credential file climbs", `{"credentials": {"files": [{"path": /*@*/"../../../x", "mode": "deny"}]}}`, "credentials.files[0].path"},
		{"socket climbs", `{"network": {"allowUnixSockets": [/*@*/"../../../s.sock"]}}`, "network.allowUnixSockets[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.doc) // depends on cwd, so Parse accepts it
			_, err := Compile(s, Flags{}, testEnv)
			checkErr(t, tt.doc, err, ErrPath, tt.key, "climbs above /")
		})
	}
}

func TestReadPrecedenceDataPreserved(t *testing.T) {
	s, err := LoadFile("testdata/srt-workspace-only.json")
	if err != nil {
		t.Fatal(err)
	}
	p := mustCompile(t, s, Flags{})
	if got, want := paths(own(p.DenyRead)), []string{"/home", "/work/proj/secrets", "/work/proj/**/.env"}; !reflect.DeepEqual(got, want) {
		t.Errorf("DenyRead = %v, want %v", got, want)
	}
	if got, want := paths(p.AllowRead), []string{"/work/proj"}; !reflect.DeepEqual(got, want) {
		t.Errorf("AllowRead = %v, want %v", got, want)
	}
	// The more specific deny inside the re-allowed area must still be there, as
	// its own rule with its own origin, for the sandbox to keep it denied.
	deny := own(p.DenyRead)
	if r := deny[1]; r.Origin != "testdata/srt-workspace-only.json:7 filesystem.denyRead[1]" {
		t.Errorf("origin = %q", r.Origin)
	}
	if !deny[2].Glob || deny[0].Glob {
		t.Errorf("glob flags = %v %v", deny[0].Glob, deny[2].Glob)
	}
}

func TestFlagsMerge(t *testing.T) {
	s := mustParse(t, `{"filesystem": {"allowWrite": ["."], "denyWrite": [".env"], "denyRead": ["~/private"]}}`)
	p := mustCompile(t, s, Flags{
		AllowWrite: []string{"/tmp/out", "."},
		DenyWrite:  []string{"~/x"},
		AllowRead:  []string{"~/private/public"},
		DenyRead:   []string{"**/*.key", "~/private"},
	})
	want := map[string][]Rule{
		"AllowWrite": {{Path: "/work/proj", Origin: "s.json:1 filesystem.allowWrite[0]"}, {Path: "/tmp/out", Origin: "flag --allow-write"}},
		"DenyWrite":  {{Path: "/work/proj/.env", Origin: "s.json:1 filesystem.denyWrite[0]"}, {Path: "/home/u/x", Origin: "flag --deny-write"}},
		"AllowRead":  {{Path: "/home/u/private/public", Origin: "flag --allow-read"}},
		"DenyRead":   {{Path: "/home/u/private", Origin: "s.json:1 filesystem.denyRead[0]"}, {Path: "/work/proj/**/*.key", Glob: true, Origin: "flag --deny-read"}},
	}
	got := map[string][]Rule{"AllowWrite": p.AllowWrite, "DenyWrite": p.DenyWrite, "AllowRead": p.AllowRead, "DenyRead": own(p.DenyRead)}
	for k := range want {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("%s =\n%+v\nwant\n%+v", k, got[k], want[k])
		}
	}

	// Flags add to the default, too.
	p = mustCompile(t, nil, Flags{AllowWrite: []string{"~/.cache"}, DenyWrite: []string{"./dist"}})
	if got := paths(p.AllowWrite); !reflect.DeepEqual(got, []string{"/work/proj", "/home/u/.cache"}) {
		t.Errorf("default + --allow-write = %v", got)
	}
	if got := paths(p.DenyWrite); !reflect.DeepEqual(got, []string{"/work/proj/dist"}) {
		t.Errorf("default + --deny-write = %v", got)
	}
}

func TestFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		f    Flags
		key  string
	}{
		{"glob allow-write", Flags{AllowWrite: []string{"src/*"}}, "--allow-write"},
		{"glob allow-read", Flags{AllowRead: []string{"a/[b]"}}, "--allow-read"},
		{"empty deny-read", Flags{DenyRead: []string{""}}, "--deny-read"},
		{"NUL deny-write", Flags{DenyWrite: []string{"a\x00b"}}, "--deny-write"},
		{"tilde user", Flags{DenyRead: []string{"~bob"}}, "--deny-read"},
		{"climb", Flags{AllowWrite: []string{"../../../.."}}, "--allow-write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(nil, tt.f, testEnv)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrPath) {
				t.Fatalf("err = %v, want an ErrPath *Error", err)
			}
			if e.Key != tt.key || e.File != "" || e.Line != 0 || e.Hint() == "" {
				t.Errorf("err = %+v", e)
			}
		})
	}
}

func TestUnprotect(t *testing.T) {
	p := mustCompile(t, mustParse(t, `{"moat": {"unprotect": [".vscode", "~/.bashrc", ".claude"]}}`), Flags{})
	has := map[string]bool{}
	for _, e := range p.Protected {
		has[unprotectName(e)] = true
	}
	for _, gone := range []string{".vscode", "~/.bashrc", ".claude"} {
		if has[gone] {
			t.Errorf("%s still protected", gone)
		}
	}
	for _, kept := range []string{".idea", "~/.zshrc", "~/.claude", ".git/hooks"} {
		if !has[kept] {
			t.Errorf("%s no longer protected", kept)
		}
	}
	if len(p.Protected) != len(protectedTable)-3 {
		t.Errorf("%d protected, want %d", len(p.Protected), len(protectedTable)-3)
	}
}

func TestCompileCredentialsAndNetwork(t *testing.T) {
	s := mustParse(t, `{
		"network": {
			"allowedDomains": ["*.github.com"],
			"deniedDomains": ["gist.github.com"],
			"deniedDomainReasons": {"gist.github.com": "no gists"},
			"allowUnixSockets": ["~/agent.sock", "/run/docker.sock", "/run/../run/docker.sock"],
			"allowLocalBinding": true
		},
		"credentials": {
			"envVars": [
				{"name": "GH_TOKEN", "mode": "mask", "injectHosts": ["api.github.com"]},
				{"name": "AWS_SECRET_ACCESS_KEY", "mode": "deny"},
				{"name": "AWS_SECRET_ACCESS_KEY", "mode": "deny"}
			],
			"files": [{"path": ".netrc-copy", "mode": "deny"}],
			"allowPlaintextInject": true
		},
		"mandatoryDenySearchDepth": 7
	}`)
	p := mustCompile(t, s, Flags{})
	if len(p.EnvVars) != 2 || p.EnvVars[0].Name != "GH_TOKEN" || p.EnvVars[0].Mode != ModeMask ||
		p.EnvVars[0].InjectHosts[0].Host != "api.github.com" || p.EnvVars[1].Mode != ModeDeny ||
		p.EnvVars[1].Origin != "s.json:12 credentials.envVars[1]" {
		t.Errorf("EnvVars = %+v", p.EnvVars)
	}
	if got := paths(own(p.DenyRead)); !reflect.DeepEqual(got, []string{"/work/proj/.netrc-copy"}) {
		t.Errorf("credential files should be denied for reading: DenyRead = %v", got)
	}
	n := p.Network
	if !reflect.DeepEqual(n.AllowUnixSockets, []string{"/home/u/agent.sock", "/run/docker.sock"}) {
		t.Errorf("AllowUnixSockets = %v", n.AllowUnixSockets)
	}
	if !n.AllowLocalBinding || !n.AllowPlaintextInject || n.DeniedDomainReasons["gist.github.com"] != "no gists" ||
		len(n.AllowedDomains) != 1 || len(n.DeniedDomains) != 1 {
		t.Errorf("Network = %+v", n)
	}
	if p.ProtectedDepth != 7 {
		t.Errorf("ProtectedDepth = %d", p.ProtectedDepth)
	}
}

func TestCompileEnvErrors(t *testing.T) {
	for _, env := range []Env{
		{Cwd: "rel", Home: "/h"},
		{Cwd: "/c", Home: ""},
		{Cwd: "/c\x00", Home: "/h"},
	} {
		if _, err := Compile(nil, Flags{}, env); !errors.Is(err, ErrEnv) {
			t.Errorf("Compile with env %q: err = %v, want ErrEnv", env, err)
		}
	}
}

func TestDomainMatch(t *testing.T) {
	tests := []struct {
		pattern, host string
		port          int
		want          bool
	}{
		{"example.com", "example.com", 443, true},
		{"example.com", "EXAMPLE.com.", 80, true},
		{"example.com", "www.example.com", 443, false},
		{"*.example.com", "www.example.com", 443, true},
		{"*.example.com", "a.b.example.com", 443, true},
		{"*.example.com", "example.com", 443, false},
		{"*.tailscale.com", "scale.com", 443, false},
		{"*.tailscale.com", "evil-tailscale.com", 443, false},
		{"*.tailscale.com", "login.tailscale.com.evil.net", 443, false},
		{"example.com:443", "example.com", 443, true},
		{"example.com:443", "example.com", 80, false},
		{"*:22", "anything.net", 22, true},
		{"*:22", "anything.net", 443, false},
		{"*", "1.2.3.4", 1, true},
		{"[::1]:8080", "::1", 8080, true},
		{"[::1]:8080", "[::1]", 8080, true},
		{"[::1]", "0:0:0:0:0:0:0:1", 1, true},
		{"[2001:DB8::1]", "2001:db8::1", 1, true},
		{"127.0.0.1", "127.0.0.1", 80, true},
		{"127.0.0.1", "::ffff:127.0.0.1", 80, true},
		{"localhost", "LOCALHOST", 3000, true},
		{"localhost", "127.0.0.1", 3000, false},
	}
	for _, tt := range tests {
		r, pr := parseDomain(tt.pattern, true, true)
		if pr != nil {
			t.Fatalf("parseDomain(%q): %v", tt.pattern, pr.err)
		}
		if got := r.Match(tt.host, tt.port); got != tt.want {
			t.Errorf("%q.Match(%q, %d) = %v, want %v", tt.pattern, tt.host, tt.port, got, tt.want)
		}
	}
}

func TestDomainCovers(t *testing.T) {
	tests := []struct {
		allowed, inject string
		want            bool
	}{
		{"github.com", "github.com", true},
		{"*.github.com", "api.github.com", true},
		{"*.github.com", "github.com", false},
		{"*.github.com", "*.github.com", true},
		{"*.github.com", "*.api.github.com", true},
		{"*.api.github.com", "*.github.com", false},
		{"api.github.com:443", "api.github.com", true},
		{"*.tailscale.com", "scale.com", false},
		{"127.0.0.1", "127.0.0.1", true},
		{"[::1]", "[0::1]", true},
	}
	for _, tt := range tests {
		a, pr1 := parseDomain(tt.allowed, true, false)
		h, pr2 := parseDomain(tt.inject, true, false)
		if pr1 != nil || pr2 != nil {
			t.Fatalf("bad test patterns %q %q", tt.allowed, tt.inject)
		}
		if got := (domainSet{a.Host: true}).covers(h); got != tt.want {
			t.Errorf("%q covers %q = %v, want %v", tt.allowed, tt.inject, got, tt.want)
		}
	}
}

// TestDomainNumericForms: IPv4 addresses written other than in dotted decimal are
// refused, since the proxy reads them as addresses and a rule naming them as a
// name would never match; a dotted address is kept as a literal.
func TestDomainNumericForms(t *testing.T) {
	for _, p := range []string{"127.1", "2130706433", "010.0.0.1", "0x7f.1", "*.0.0.1", "1.2.3.4.5", "example.123"} {
		if _, pr := parseDomain(p, true, true); pr == nil {
			t.Errorf("parseDomain(%q) accepted it", p)
		}
	}
	for _, p := range []string{"10.0.0.1", "example.com", "3com.example", "x.y2k"} {
		if _, pr := parseDomain(p, true, true); pr != nil {
			t.Errorf("parseDomain(%q): %v", p, pr.err)
		}
	}
}
