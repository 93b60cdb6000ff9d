package policy

import (
	"errors"
	"strings"
	"testing"
)

const projPath = "/work/proj/.moat.jsonc"

func parseProject(t *testing.T, doc string) *Settings {
	t.Helper()
	s, err := Parse(projPath, []byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func trustingUser(t *testing.T, path, sum string) *Settings {
	t.Helper()
	return mustParse(t, `{"filesystem": {"allowWrite": ["."]}, "moat": {"trustedProjects": [{"path": "`+path+`", "sha256": "`+sum+`"}]}}`)
}

// TestProjectTightens: an untrusted project file may add every kind of deny.
func TestProjectTightens(t *testing.T) {
	doc := `{
		"filesystem": {"denyRead": ["secrets", "~/.config/x"], "denyWrite": ["go.sum"], "allowRead": [], "allowWrite": []},
		"network": {"deniedDomains": ["*:22"], "deniedDomainReasons": {"*:22": "use https"}, "strictAllowlist": true, "allowLocalBinding": false},
		"credentials": {"envVars": [{"name": "MY_VAR", "mode": "deny"}], "files": [{"path": "prod.key", "mode": "deny"}]},
		"mandatoryDenySearchDepth": 5,
		"moat": {"ignoreFiles": [".cursorignore"]},
	}`
	p, err := CompileLayers(Layers{Project: parseProject(t, doc)}, Env{Cwd: "/work/proj/sub", Home: "/home/u"})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, p)
	if p.ProjectFile != projPath || p.ProjectTrusted {
		t.Errorf("ProjectFile %q trusted %v", p.ProjectFile, p.ProjectTrusted)
	}
	// Relative paths in the project file mean the project's, whatever the cwd.
	if v := p.ExplainPath("/work/proj/secrets/a"); v.Read || v.ReadRule.Origin != projPath+":2 filesystem.denyRead[0]" {
		t.Errorf("secrets: %+v", v.ReadRule)
	}
	if v := p.ExplainPath("/work/proj/prod.key"); v.Read {
		t.Errorf("prod.key readable")
	}
	if !p.ExplainPath("/work/proj/sub/x").Write || p.ExplainPath("/work/proj/go.sum").Write {
		t.Error("without a user config the cwd is writable; the project's denyWrite wins")
	}
	if p.ExplainHost("github.com", 22).Allowed || p.ProtectedDepth != 5 {
		t.Error("deniedDomains or depth not applied")
	}
	if v := p.ExplainEnv("MY_VAR"); v.Kept {
		t.Errorf("MY_VAR kept")
	}
	if len(p.IgnoreFiles) != 2 || p.IgnoreFiles[1].Name != ".cursorignore" {
		t.Errorf("IgnoreFiles = %+v", p.IgnoreFiles)
	}
}

// TestProjectWidening: every widening key of an untrusted project file is an
// error at that key, whose hint gives the exact trust entry.
func TestProjectWidening(t *testing.T) {
	tests := []struct{ name, doc, key string }{
		{"allowRead", `{"filesystem": {/*@*/"allowRead": ["~/.ssh"]}}`, "filesystem.allowRead"},
		{"allowWrite", `{"filesystem": {"denyRead": ["x"], /*@*/"allowWrite": ["~"]}}`, "filesystem.allowWrite"},
		{"allowedDomains", `{"network": {/*@*/"allowedDomains": ["evil.example"]}}`, "network.allowedDomains"},
		{"allowUnixSockets", `{"network": {/*@*/"allowUnixSockets": ["/run/docker.sock"]}}`, "network.allowUnixSockets"},
		{"allowAllUnixSockets", `{"network": {/*@*/"allowAllUnixSockets": true}}`, "network.allowAllUnixSockets"},
		{"allowLocalBinding", `{"network": {/*@*/"allowLocalBinding": true}}`, "network.allowLocalBinding"},
		{"mask", `{"credentials": {"envVars": [/*@*/{"name": "GITHUB_TOKEN", "mode": "mask"}]}}`, "credentials.envVars[0]"},
		{"plaintext inject", `{"credentials": {/*@*/"allowPlaintextInject": true}}`, "credentials.allowPlaintextInject"},
		{"ignoreViolations", `{/*@*/"ignoreViolations": {"*": ["/x"]}}`, "ignoreViolations"},
		{"shallower search", `{/*@*/"mandatoryDenySearchDepth": 1}`, "mandatoryDenySearchDepth"},
		{"unprotect", `{"moat": {/*@*/"unprotect": [".git/hooks"]}}`, "moat.unprotect"},
		{"allowSecrets", `{"moat": {/*@*/"allowSecrets": [".env"]}}`, "moat.allowSecrets"},
		{"passEnv", `{"moat": {/*@*/"passEnv": ["AWS_SECRET_ACCESS_KEY"]}}`, "moat.passEnv"},
		{"defaultProfiles", `{"moat": {/*@*/"defaultProfiles": ["claude"]}}`, "moat.defaultProfiles"},
		{"createDirs", `{"moat": {/*@*/"createDirs": ["~/.config/x"]}}`, "moat.createDirs"},
		{"allowUnscopedSignals", `{"moat": {/*@*/"allowUnscopedSignals": true}}`, "moat.allowUnscopedSignals"},
		{"first in the file wins", "{\"moat\": {/*@*/\"passEnv\": [\"A\"]},\n\"filesystem\": {\"allowWrite\": [\".\"]}}", "moat.passEnv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proj := parseProject(t, tt.doc)
			_, err := CompileLayers(Layers{User: mustParse(t, `{}`), UserPath: "/home/u/.config/moat/config.jsonc", Project: proj}, testEnv)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrUntrusted) {
				t.Fatalf("err = %v, want ErrUntrusted", err)
			}
			line, col := wantPos(t, tt.doc)
			if e.File != projPath || e.Line != line || e.Col != col || e.Key != tt.key {
				t.Errorf("error at %s:%d:%d %s, want %s:%d:%d %s", e.File, e.Line, e.Col, e.Key, projPath, line, col, tt.key)
			}
			for _, want := range []string{`{"path": "/work/proj/.moat.jsonc", "sha256": "` + proj.SHA256 + `"}`,
				`"trustedProjects"`, "/home/u/.config/moat/config.jsonc", "revokes"} {
				if !strings.Contains(e.Hint(), want) {
					t.Errorf("hint lacks %q:\n%s", want, e.Hint())
				}
			}
		})
	}
}

func TestProjectTrust(t *testing.T) {
	doc := `{"filesystem": {"allowWrite": ["build"]}, "network": {"allowedDomains": ["example.com"]}, "moat": {"defaultProfiles": ["node"]}}`
	proj := parseProject(t, doc)
	p, err := CompileLayers(Layers{User: trustingUser(t, projPath, proj.SHA256), Project: proj}, testEnv)
	if err != nil {
		t.Fatalf("trusted: %v", err)
	}
	if !p.ProjectTrusted || !p.ExplainPath("/work/proj/build/x").Write || !p.ExplainHost("example.com", 443).Allowed {
		t.Errorf("a trusted project's widening was not applied: %+v", p)
	}
	if len(p.Profiles) != 1 || p.Profiles[0].Origin != projPath+":1 moat.defaultProfiles[0]" {
		t.Errorf("a trusted project's defaultProfiles: %+v", p.Profiles)
	}

	// One byte changed: the trust is gone, and the hint says the file changed.
	changed := parseProject(t, doc+" ")
	_, err = CompileLayers(Layers{User: trustingUser(t, projPath, proj.SHA256), Project: changed}, testEnv)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrUntrusted) || !strings.Contains(e.Hint(), "changed since you trusted it") ||
		!strings.Contains(e.Hint(), changed.SHA256) {
		t.Errorf("changed file: %v\nhint: %s", err, e.Hint())
	}
	// The same bytes at another path are not trusted.
	other, _ := Parse("/work/other/.moat.jsonc", []byte(doc))
	if _, err := CompileLayers(Layers{User: trustingUser(t, projPath, proj.SHA256), Project: other}, testEnv); !errors.Is(err, ErrUntrusted) {
		t.Errorf("trust followed the content to another path: %v", err)
	}
	// The hash is compared case-insensitively as written, exactly as computed.
	if _, err := CompileLayers(Layers{User: trustingUser(t, projPath, strings.ToUpper(proj.SHA256)), Project: proj}, testEnv); err != nil {
		t.Errorf("upper-case hash: %v", err)
	}
}

func TestProjectUserOnlyKeys(t *testing.T) {
	for _, tt := range []struct{ doc, key string }{
		{`{"moat": {"trustedProjects": [{"path": "/work/proj/.moat.jsonc", "sha256": "` + strings.Repeat("a", 64) + `"}]}}`, "moat.trustedProjects"},
		{`{"moat": {"profiles": {"x": {}}}}`, "moat.profiles"},
	} {
		proj := parseProject(t, tt.doc)
		// Even a trusted project file may not use them.
		_, err := CompileLayers(Layers{User: trustingUser(t, projPath, proj.SHA256), Project: proj}, testEnv)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrUntrusted) || e.Key != tt.key || e.Line != 1 {
			t.Errorf("%s: err = %v", tt.key, err)
		}
	}
}

func TestTrustedProjectsParse(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	tests := []struct{ name, doc, key, msg string }{
		{"relative path", `{"moat": {"trustedProjects": [{"path": /*@*/"proj/.moat.jsonc", "sha256": "` + hash + `"}]}}`,
			"moat.trustedProjects[0].path", "not absolute"},
		{"short hash", `{"moat": {"trustedProjects": [{"path": "/p/.moat.jsonc", "sha256": /*@*/"abc"}]}}`,
			"moat.trustedProjects[0].sha256", "not a SHA-256"},
		{"missing hash", `{"moat": {"trustedProjects": [/*@*/{"path": "/p/.moat.jsonc"}]}}`,
			"moat.trustedProjects[0]", `missing required key "sha256"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s.json", []byte(tt.doc))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v", err)
			}
			line, col := wantPos(t, tt.doc)
			if e.Line != line || e.Col != col || e.Key != tt.key || !strings.Contains(err.Error(), tt.msg) || e.Hint() == "" {
				t.Errorf("err = %v at %d:%d (want %d:%d %s)", err, e.Line, e.Col, line, col, tt.key)
			}
		})
	}
}

// TestLayersCwdWritable: the writable current directory is the built-in
// default's, and only without a user config (srt semantics with one).
func TestLayersCwdWritable(t *testing.T) {
	proj := parseProject(t, `{"filesystem": {"denyWrite": ["x"]}}`)
	for _, tt := range []struct {
		name     string
		l        Layers
		writable bool
	}{
		{"nothing", Layers{}, true},
		{"project only", Layers{Project: proj}, true},
		{"profiles only", Layers{Profiles: []string{"claude"}}, true},
		{"user config", Layers{User: mustParse(t, `{}`)}, false},
		{"user config and project", Layers{User: mustParse(t, `{}`), Project: proj}, false},
	} {
		p, err := CompileLayers(tt.l, testEnv)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := p.ExplainPath("/work/proj/a").Write; got != tt.writable {
			t.Errorf("%s: cwd writable = %v, want %v", tt.name, got, tt.writable)
		}
	}
}

func TestNetFlags(t *testing.T) {
	p := mustCompile(t, nil, Flags{AllowNet: []string{"*.github.com", "example.com:8443"}, DenyNet: []string{"*:22", "gist.github.com"}})
	for _, tt := range []struct {
		host string
		port int
		want bool
	}{
		{"api.github.com", 443, true}, {"github.com", 443, false}, {"gist.github.com", 443, false},
		{"example.com", 8443, true}, {"example.com", 443, false}, {"api.github.com", 22, false},
	} {
		if v := p.ExplainHost(tt.host, tt.port); v.Allowed != tt.want {
			t.Errorf("%s:%d: %+v", tt.host, tt.port, v)
		}
	}
	if v := p.ExplainHost("gist.github.com", 443); v.Rule.Origin != "flag --deny-net" || !strings.HasPrefix(v.Hint, "drop --deny-net gist.github.com") {
		t.Errorf("deny by flag: %+v", v)
	}
	for _, f := range []Flags{{AllowNet: []string{"*"}}, {AllowNet: []string{"https://x.com"}}, {DenyNet: []string{"a b"}}} {
		_, err := Compile(nil, f, testEnv)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrDomain) || !strings.HasPrefix(e.Key, "--") || e.Hint() == "" {
			t.Errorf("%+v: err = %v", f, err)
		}
	}
}

// TestEnvRulesAcrossLayers: deny beats mask across layers; between masks the
// stronger layer's settings win.
func TestEnvRulesAcrossLayers(t *testing.T) {
	user := mustParse(t, `{"credentials": {"envVars": [{"name": "A", "mode": "mask"}, {"name": "B", "mode": "deny"}]}}`)
	proj := parseProject(t, `{"credentials": {"envVars": [{"name": "A", "mode": "deny"}]}}`)
	p, err := CompileLayers(Layers{User: user, Project: proj}, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.EnvVars) != 2 || p.EnvVars[0].Mode != ModeDeny || p.EnvVars[0].Origin != projPath+":1 credentials.envVars[0]" {
		t.Errorf("EnvVars = %+v", p.EnvVars)
	}
}

// TestProjectWithoutPositions: settings built without Parse are checked by
// their values, not by the positions Parse records.
func TestProjectWithoutPositions(t *testing.T) {
	for name, s := range map[string]*Settings{
		"allowWrite":      {File: projPath, Filesystem: FilesystemSettings{AllowWrite: []Item{{Value: "~"}}}},
		"allowedDomains":  {File: projPath, Network: NetworkSettings{AllowedDomains: []DomainRule{{Pattern: "x.com", Host: "x.com"}}}},
		"trustedProjects": {File: projPath, Moat: MoatSettings{TrustedProjects: []TrustedProject{{Path: projPath}}}},
		"depth":           {File: projPath, MandatoryDenySearchDepth: 1},
	} {
		if _, err := CompileLayers(Layers{Project: s}, testEnv); !errors.Is(err, ErrUntrusted) {
			t.Errorf("%s: err = %v, want ErrUntrusted", name, err)
		}
	}
}
