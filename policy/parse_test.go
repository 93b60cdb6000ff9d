package policy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tailscale/hujson"
)

// mark is a comment placed right before the value (or key) an error must point at.
const mark = "/*@*/"

// wantPos returns the line and column just after the mark in doc.
func wantPos(t *testing.T, doc string) (int, int) {
	t.Helper()
	i := strings.Index(doc, mark)
	if i < 0 {
		t.Fatalf("test doc has no %s mark", mark)
	}
	off := i + len(mark)
	before := doc[:off]
	return 1 + strings.Count(before, "\n"), 1 + off - (strings.LastIndexByte(before, '\n') + 1)
}

func TestParseExamples(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json*")
	if err != nil || len(files) < 4 {
		t.Fatalf("want at least 4 example files in testdata, got %v (%v)", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := LoadFile(f)
			if err != nil {
				t.Fatalf("LoadFile: %v", err)
			}
			if s.File != f {
				t.Errorf("File = %q, want %q", s.File, f)
			}
			if _, err := Compile(s, Flags{}, Env{Cwd: "/work/proj", Home: "/home/u"}); err != nil {
				t.Fatalf("Compile: %v", err)
			}
		})
	}
}

func TestParseReadmeExample(t *testing.T) {
	s, err := LoadFile("testdata/srt-readme.json")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range s.Network.AllowedDomains {
		got = append(got, d.Host)
	}
	want := []string{"github.com", "*.github.com", "lfs.github.com", "api.github.com", "npmjs.org", "*.npmjs.org"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("allowedDomains hosts = %q, want %q", got, want)
	}
	if d := s.Network.AllowedDomains[1]; d.Origin != "testdata/srt-readme.json:5 network.allowedDomains[1]" {
		t.Errorf("origin = %q", d.Origin)
	}
	if w := s.Filesystem.AllowWrite; len(w) != 4 || w[1].Value != "src/" || w[1].Key != "filesystem.allowWrite[1]" || w[1].Line != 18 {
		t.Errorf("allowWrite = %+v", w)
	}
	if !reflect.DeepEqual(s.IgnoreViolations["git push"], []string{"/usr/bin/nc"}) || len(s.IgnoreViolations) != 3 {
		t.Errorf("ignoreViolations = %v", s.IgnoreViolations)
	}
}

func TestParseAllKeys(t *testing.T) {
	s, err := LoadFile("testdata/srt-all-keys.json")
	if err != nil {
		t.Fatal(err)
	}
	n := s.Network
	if !n.StrictAllowlist || !n.AllowLocalBinding || n.AllowAllUnixSockets {
		t.Errorf("network flags = %+v", n)
	}
	if d := n.AllowedDomains[2]; d.Host != "api.example.com" || d.Port != 443 {
		t.Errorf("allowedDomains[2] = %+v", d)
	}
	if d := n.AllowedDomains[4]; d.Host != "::1" || d.Port != 3000 {
		t.Errorf("allowedDomains[4] = %+v", d)
	}
	if d := n.DeniedDomains[0]; d.Host != "*" || d.Port != 22 {
		t.Errorf("deniedDomains[0] = %+v", d)
	}
	if n.DeniedDomainReasons["*:22"] == "" {
		t.Errorf("deniedDomainReasons = %v", n.DeniedDomainReasons)
	}
	if s.MandatoryDenySearchDepth != 5 {
		t.Errorf("mandatoryDenySearchDepth = %d", s.MandatoryDenySearchDepth)
	}
	ev := s.Credentials.EnvVars
	if len(ev) != 2 || ev[0].Mode != ModeDeny || ev[1].Mode != ModeMask || ev[1].InjectHosts[0].Host != "api.github.com" {
		t.Errorf("envVars = %+v", ev)
	}
	if f := s.Credentials.Files; len(f) != 1 || f[0].Value != "~/.netrc" {
		t.Errorf("files = %+v", f)
	}
}

// srtKeys is every key of srt's settings schema (src/sandbox/sandbox-config.ts,
// SandboxRuntimeConfigSchema), "[]" standing for any array index.
var srtKeys = []string{
	"network", "network.allowedDomains", "network.deniedDomains", "network.deniedDomainReasons",
	"network.strictAllowlist", "network.allowUnixSockets", "network.allowAllUnixSockets",
	"network.allowLocalBinding", "network.allowMachLookup", "network.httpProxyPort",
	"network.socksProxyPort", "network.mitmProxy", "network.filterRequest", "network.tlsTerminate",
	"network.parentProxy",
	"filesystem", "filesystem.disabled", "filesystem.denyRead", "filesystem.allowRead",
	"filesystem.allowWrite", "filesystem.denyWrite", "filesystem.allowGitConfig",
	"credentials", "credentials.files", "credentials.files[].path", "credentials.files[].mode",
	"credentials.files[].extract", "credentials.files[].onExtractNoMatch", "credentials.files[].decode",
	"credentials.files[].maskClaims", "credentials.files[].maskDuplicates", "credentials.files[].injectHosts",
	"credentials.envVars", "credentials.envVars[].name", "credentials.envVars[].mode",
	"credentials.envVars[].extract", "credentials.envVars[].onExtractNoMatch", "credentials.envVars[].decode",
	"credentials.envVars[].maskClaims", "credentials.envVars[].injectHosts",
	"credentials.allowPlaintextInject", "credentials.awsPairs", "credentials.sigv4",
	"ignoreViolations", "enableWeakerNestedSandbox", "enableWeakerNetworkIsolation", "allowAppleEvents",
	"ripgrep", "mandatoryDenySearchDepth", "allowPty", "seccomp", "bwrapPath", "socatPath",
	"javaAgentJarPath", "windows", "git", "git.safeDirectories",
}

// TestSrtKeysCovered checks that every srt key is either set in the all-keys example
// (so it parses) or in unsupportedKeys (so TestUnsupportedKeys rejects it by name).
func TestSrtKeysCovered(t *testing.T) {
	data, err := os.ReadFile("testdata/srt-all-keys.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := hujson.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	var walk func(v *hujson.Value, key string)
	walk = func(v *hujson.Value, key string) {
		switch x := v.Value.(type) {
		case *hujson.Object:
			if key == "ignoreViolations" || key == "network.deniedDomainReasons" {
				return // free-form maps
			}
			for i := range x.Members {
				k := x.Members[i].Name.Value.(hujson.Literal).String()
				if key != "" {
					k = key + "." + k
				}
				present[k] = true
				walk(&x.Members[i].Value, k)
			}
		case *hujson.Array:
			for i := range x.Elements {
				walk(&x.Elements[i], key+"[]")
			}
		}
	}
	walk(&v, "")
	for _, k := range srtKeys {
		_, rejected := unsupportedKeys[k]
		if !present[k] && !rejected {
			t.Errorf("srt key %s is neither in testdata/srt-all-keys.json nor in unsupportedKeys", k)
		}
	}
	for k := range unsupportedKeys {
		if !contains(srtKeys, k) {
			t.Errorf("unsupportedKeys has %s, which is not an srt key", k)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestUnsupportedKeys sets each key moat cannot honour to a value that asks for
// something, and expects an ErrUnsupported naming the key at its value.
func TestUnsupportedKeys(t *testing.T) {
	docs := map[string]string{
		"enableWeakerNestedSandbox":              `{"enableWeakerNestedSandbox": /*@*/true}`,
		"enableWeakerNetworkIsolation":           `{"enableWeakerNetworkIsolation": /*@*/true}`,
		"allowAppleEvents":                       `{"allowAppleEvents": /*@*/true}`,
		"allowPty":                               `{"allowPty": /*@*/true}`,
		"ripgrep":                                `{"ripgrep": /*@*/{"command": "rg"}}`,
		"seccomp":                                `{"seccomp": /*@*/{"applyPath": "/usr/lib/x"}}`,
		"bwrapPath":                              `{"bwrapPath": /*@*/"/usr/bin/bwrap"}`,
		"socatPath":                              `{"socatPath": /*@*/"/usr/bin/socat"}`,
		"javaAgentJarPath":                       `{"javaAgentJarPath": /*@*/"/opt/a.jar"}`,
		"windows":                                `{"windows": /*@*/{}}`,
		"git.safeDirectories":                    `{"git": {"safeDirectories": /*@*/["/repo"]}}`,
		"network.httpProxyPort":                  `{"network": {"httpProxyPort": /*@*/8080}}`,
		"network.socksProxyPort":                 `{"network": {"socksProxyPort": /*@*/1080}}`,
		"network.mitmProxy":                      `{"network": {"mitmProxy": /*@*/{"socketPath": "/s", "domains": ["a.com"]}}}`,
		"network.parentProxy":                    `{"network": {"parentProxy": /*@*/{"http": "http://proxy:3128"}}}`,
		"network.tlsTerminate":                   `{"network": {"tlsTerminate": /*@*/{}}}`,
		"network.filterRequest":                  `{"network": {"filterRequest": /*@*/"f"}}`,
		"network.allowMachLookup":                `{"network": {"allowMachLookup": /*@*/["com.apple.x"]}}`,
		"filesystem.disabled":                    `{"filesystem": {"disabled": /*@*/true}}`,
		"filesystem.allowGitConfig":              `{"filesystem": {"allowGitConfig": /*@*/true}}`,
		"credentials.awsPairs":                   `{"credentials": {"awsPairs": /*@*/[{}]}}`,
		"credentials.sigv4":                      `{"credentials": {"sigv4": /*@*/{}}}`,
		"credentials.envVars[].extract":          `{"credentials": {"envVars": [{"name": "A", "mode": "mask", "extract": /*@*/"(x)"}]}}`,
		"credentials.envVars[].onExtractNoMatch": `{"credentials": {"envVars": [{"name": "A", "mode": "mask", "onExtractNoMatch": /*@*/"deny"}]}}`,
		"credentials.envVars[].decode":           `{"credentials": {"envVars": [{"name": "A", "mode": "mask", "decode": /*@*/"jwt"}]}}`,
		"credentials.envVars[].maskClaims":       `{"credentials": {"envVars": [{"name": "A", "mode": "mask", "maskClaims": /*@*/["sub"]}]}}`,
		"credentials.files[].extract":            `{"credentials": {"files": [{"path": "~/.netrc", "mode": "deny", "extract": /*@*/"(x)"}]}}`,
		"credentials.files[].onExtractNoMatch":   `{"credentials": {"files": [{"path": "~/.netrc", "mode": "deny", "onExtractNoMatch": /*@*/"warn"}]}}`,
		"credentials.files[].decode":             `{"credentials": {"files": [{"path": "~/.netrc", "mode": "deny", "decode": /*@*/"jwt"}]}}`,
		"credentials.files[].maskClaims":         `{"credentials": {"files": [{"path": "~/.netrc", "mode": "deny", "maskClaims": /*@*/["a"]}]}}`,
		"credentials.files[].maskDuplicates":     `{"credentials": {"files": [{"path": "~/.netrc", "mode": "deny", "maskDuplicates": /*@*/true}]}}`,
		"credentials.files[].injectHosts":        `{"credentials": {"files": [{"path": "~/.netrc", "mode": "deny", "injectHosts": /*@*/["a.com"]}]}}`,
	}
	for key := range unsupportedKeys {
		if _, ok := docs[key]; !ok {
			t.Errorf("no test document for unsupported key %s", key)
		}
	}
	for key, doc := range docs {
		t.Run(key, func(t *testing.T) {
			_, err := Parse("s.json", []byte(doc))
			wantKey := strings.ReplaceAll(key, "[]", "[0]")
			checkErr(t, doc, err, ErrUnsupported, wantKey, "not supported by moat")
		})
	}
}

// checkErr checks that err is an *Error of class kind at the doc's mark, for key.
func checkErr(t *testing.T, doc string, err error, kind error, key, msg string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	if !errors.Is(err, kind) {
		t.Errorf("err = %v, want class %v", err, kind)
	}
	line, col := wantPos(t, doc)
	if e.File != "s.json" || e.Line != line || e.Col != col {
		t.Errorf("position = %s:%d:%d, want s.json:%d:%d (err: %v)", e.File, e.Line, e.Col, line, col, err)
	}
	if e.Key != key {
		t.Errorf("key = %q, want %q (err: %v)", e.Key, key, err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("err = %q, want it to contain %q", err, msg)
	}
	if e.Hint() == "" {
		t.Errorf("err %v has no hint", err)
	}
	if s := e.Err.Error(); s != "" && s[0] >= 'A' && s[0] <= 'Z' {
		t.Errorf("message %q starts with a capital", s)
	}
}

func TestHarmlessDefaultsAccepted(t *testing.T) {
	doc := `{
		"enableWeakerNestedSandbox": false, "enableWeakerNetworkIsolation": false,
		"allowAppleEvents": false, "allowPty": false, "git": {"safeDirectories": []},
		"network": {"allowMachLookup": []},
		"filesystem": {"disabled": false, "allowGitConfig": false},
		"credentials": {"awsPairs": []}
	}`
	if _, err := Parse("s.json", []byte(doc)); err != nil {
		t.Fatal(err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		kind      error
		key, msg  string
	}{
		{"unknown top key", `{/*@*/"filesytem": {}}`, ErrUnknownKey, "filesytem", `unknown key "filesytem"`},
		{"unknown nested key", "{\"network\": {\n  /*@*/\"allowedDomain\": []}}", ErrUnknownKey, "network.allowedDomain", "valid keys here: allowAllUnixSockets"},
		{"unknown moat key", `{"moat": {/*@*/"protect": []}}`, ErrUnknownKey, "moat.protect", "unknown key"},
		{"unknown envVars key", `{"credentials": {"envVars": [{"name": "A", "mode": "deny", /*@*/"value": "x"}]}}`, ErrUnknownKey, "credentials.envVars[0].value", "unknown key"},
		{"duplicate key", `{"filesystem": {"denyRead": [], /*@*/"denyRead": []}}`, ErrDuplicate, "filesystem.denyRead", "twice"},
		{"top level array", `/*@*/[]`, ErrType, "", "expected an object, got an array"},
		{"string for array", `{"filesystem": {"denyRead": /*@*/"~/.ssh"}}`, ErrType, "filesystem.denyRead", "expected an array, got a string"},
		{"null for array", `{"filesystem": {"allowWrite": /*@*/null}}`, ErrType, "filesystem.allowWrite", "got null"},
		{"number in path list", `{"filesystem": {"denyRead": ["a", /*@*/1]}}`, ErrType, "filesystem.denyRead[1]", "expected a string, got a number"},
		{"string for bool", `{"network": {"allowLocalBinding": /*@*/"true"}}`, ErrType, "network.allowLocalBinding", "expected a boolean"},
		{"NUL in path", "{\"filesystem\": {\n  \"denyRead\": [\"/ok\", /*@*/\"/a\\u0000b\"]}}", ErrPath, "filesystem.denyRead[1]", `path "/a\x00b" contains a NUL byte`},
		{"empty path", `{"filesystem": {"allowWrite": [/*@*/""]}}`, ErrPath, "filesystem.allowWrite[0]", "empty path"},
		{"tilde user", `{"filesystem": {"denyRead": [/*@*/"~root/.ssh"]}}`, ErrPath, "filesystem.denyRead[0]", "~user"},
		{"glob in allowWrite", `{"filesystem": {"allowWrite": [/*@*/"src/*.go"]}}`, ErrPath, "filesystem.allowWrite[0]", "globs are accepted only in denyRead and denyWrite"},
		{"createDirs outside home", `{"moat": {"createDirs": [/*@*/"/etc/x"]}}`, ErrPath, "moat.createDirs[0]", "not a directory in the home directory"},
		{"createDirs with dotdot", `{"moat": {"createDirs": [/*@*/"~/a/../../etc"]}}`, ErrPath, "moat.createDirs[0]", "not a directory in the home directory"},
		{"glob in allowRead", `{"filesystem": {"allowRead": [/*@*/"~/proj/**/src"]}}`, ErrPath, "filesystem.allowRead[0]", "glob"},
		{"glob in socket", `{"network": {"allowUnixSockets": [/*@*/"/run/*.sock"]}}`, ErrPath, "network.allowUnixSockets[0]", "socket paths are literal"},
		{"malformed glob", `{"filesystem": {"denyRead": [/*@*/"/a/[bc"]}}`, ErrPath, "filesystem.denyRead[0]", "malformed"},
		{"dotdot after glob", `{"filesystem": {"denyWrite": [/*@*/"/a/*/../b"]}}`, ErrPath, "filesystem.denyWrite[0]", `".." after a wildcard`},
		{"absolute climbs above root", `{"filesystem": {"denyRead": [/*@*/"/../etc"]}}`, ErrPath, "filesystem.denyRead[0]", "climbs above /"},
		{"invalid utf8", "{\"filesystem\": {\"denyRead\": [/*@*/\"/a\xffb\"]}}", ErrValue, "filesystem.denyRead[0]", "invalid UTF-8"},
		{"lone surrogate", `{"filesystem": {"denyRead": [/*@*/"/a\ud800"]}}`, ErrValue, "filesystem.denyRead[0]", "surrogate"},
		{"domain with scheme", `{"network": {"allowedDomains": [/*@*/"https://github.com"]}}`, ErrDomain, "network.allowedDomains[0]", "is a URL"},
		{"domain with path", `{"network": {"allowedDomains": ["a.com", /*@*/"github.com/org"]}}`, ErrDomain, "network.allowedDomains[1]", "contains a path"},
		{"bare star allowed", `{"network": {"allowedDomains": [/*@*/"*"]}}`, ErrDomain, "network.allowedDomains[0]", `bare "*"`},
		{"star with port allowed", `{"network": {"allowedDomains": [/*@*/"*:443"]}}`, ErrDomain, "network.allowedDomains[0]", `bare "*"`},
		{"too broad wildcard", `{"network": {"allowedDomains": [/*@*/"*.com"]}}`, ErrDomain, "network.allowedDomains[0]", "too broad"},
		{"inner wildcard", `{"network": {"allowedDomains": [/*@*/"api.*.com"]}}`, ErrDomain, "network.allowedDomains[0]", `"*" other than`},
		{"empty label", `{"network": {"deniedDomains": [/*@*/"a..example.com"]}}`, ErrDomain, "network.deniedDomains[0]", "empty label"},
		{"trailing dot", `{"network": {"deniedDomains": [/*@*/"example.com."]}}`, ErrDomain, "network.deniedDomains[0]", "empty label"},
		{"single label", `{"network": {"allowedDomains": [/*@*/"intranet"]}}`, ErrDomain, "network.allowedDomains[0]", "no dot"},
		{"port zero", `{"network": {"allowedDomains": [/*@*/"a.com:0"]}}`, ErrDomain, "network.allowedDomains[0]", "not a number 1-65535"},
		{"port too big", `{"network": {"allowedDomains": [/*@*/"a.com:65536"]}}`, ErrDomain, "network.allowedDomains[0]", "not a number 1-65535"},
		{"port leading zero", `{"network": {"allowedDomains": [/*@*/"a.com:080"]}}`, ErrDomain, "network.allowedDomains[0]", "not a number 1-65535"},
		{"empty port", `{"network": {"allowedDomains": [/*@*/"a.com:"]}}`, ErrDomain, "network.allowedDomains[0]", "not a number 1-65535"},
		{"bracket empty port", `{"network": {"allowedDomains": [/*@*/"[::1]:"]}}`, ErrDomain, "network.allowedDomains[0]", "not a number 1-65535"},
		{"unbracketed ipv6", `{"network": {"allowedDomains": [/*@*/"2001:db8::1:443"]}}`, ErrDomain, "network.allowedDomains[0]", "unbracketed IPv6"},
		{"unclosed bracket", `{"network": {"allowedDomains": [/*@*/"[::1"]}}`, ErrDomain, "network.allowedDomains[0]", "unclosed"},
		{"bracketed name", `{"network": {"allowedDomains": [/*@*/"[example.com]"]}}`, ErrDomain, "network.allowedDomains[0]", "not an IPv6 address"},
		{"ipv6 zone", `{"network": {"allowedDomains": [/*@*/"[fe80::1%eth0]"]}}`, ErrDomain, "network.allowedDomains[0]", "not an IPv6 address"},
		{"control byte", `{"network": {"allowedDomains": [/*@*/"a.com\u0007"]}}`, ErrDomain, "network.allowedDomains[0]", "control byte"},
		{"NUL in domain", `{"network": {"deniedDomains": [/*@*/"a.com\u0000.evil.net"]}}`, ErrDomain, "network.deniedDomains[0]", "control byte"},
		{"space in domain", `{"network": {"allowedDomains": [/*@*/"a.com b.com"]}}`, ErrDomain, "network.allowedDomains[0]", "space"},
		{"non-ascii domain", `{"network": {"allowedDomains": [/*@*/"bücher.de"]}}`, ErrDomain, "network.allowedDomains[0]", "non-ASCII"},
		{"bad label char", `{"network": {"allowedDomains": [/*@*/"a!b.com"]}}`, ErrDomain, "network.allowedDomains[0]", `contains "!"`},
		{"port smuggling", `{"network": {"allowedDomains": [/*@*/"evil.com:443.allowed.com"]}}`, ErrDomain, "network.allowedDomains[0]", "not a number"},
		{"proxy port out of range", `{"network": {"httpProxyPort": /*@*/70000}}`, ErrValue, "network.httpProxyPort", "not an integer from 1 to 65535"},
		{"depth out of range", `{"mandatoryDenySearchDepth": /*@*/11}`, ErrValue, "mandatoryDenySearchDepth", "from 1 to 10"},
		{"depth fraction", `{"mandatoryDenySearchDepth": /*@*/2.5}`, ErrValue, "mandatoryDenySearchDepth", "not an integer"},
		{"depth string", `{"mandatoryDenySearchDepth": /*@*/"3"}`, ErrType, "mandatoryDenySearchDepth", "expected a number"},
		{"bad mode", `{"credentials": {"envVars": [{"name": "A", "mode": /*@*/"hide"}]}}`, ErrValue, "credentials.envVars[0].mode", `mode "hide"`},
		{"bad env name", `{"credentials": {"envVars": [{"name": /*@*/"MY-TOKEN", "mode": "deny"}]}}`, ErrValue, "credentials.envVars[0].name", "not an environment variable name"},
		{"env name with equals", `{"credentials": {"envVars": [{"name": /*@*/"A=B", "mode": "deny"}]}}`, ErrValue, "credentials.envVars[0].name", "not an environment variable name"},
		{"missing mode", `{"credentials": {"envVars": [/*@*/{"name": "A"}]}}`, ErrValue, "credentials.envVars[0]", `missing required key "mode"`},
		{"env entry not object", `{"credentials": {"envVars": [/*@*/"A"]}}`, ErrType, "credentials.envVars[0]", "expected an object"},
		{"duplicate env different modes", "{\"credentials\": {\"envVars\": [\n  {\"name\": \"A\", \"mode\": \"deny\"},\n  /*@*/{\"name\": \"A\", \"mode\": \"mask\"}]}}", ErrConflict, "credentials.envVars[1]", "also listed at credentials.envVars[0]"},
		{"injectHosts on deny", `{"network": {"allowedDomains": ["a.com"]}, "credentials": {"envVars": [{"name": "A", "mode": "deny", "injectHosts": /*@*/["a.com"]}]}}`, ErrConflict, "credentials.envVars[0].injectHosts", `only to mode "mask"`},
		{"empty injectHosts", `{"credentials": {"envVars": [{"name": "A", "mode": "mask", "injectHosts": /*@*/[]}]}}`, ErrConflict, "credentials.envVars[0].injectHosts", "never be injected"},
		{"injectHosts not allowed", `{"credentials": {"envVars": [{"name": "A", "mode": "mask", "injectHosts": ["api.a.com", /*@*/"b.com"]}]}, "network": {"allowedDomains": ["*.a.com"]}}`, ErrConflict, "credentials.envVars[0].injectHosts[1]", "not covered"},
		{"injectHosts wildcard wider", `{"network": {"allowedDomains": ["*.api.a.com"]}, "credentials": {"envVars": [{"name": "A", "mode": "mask", "injectHosts": [/*@*/"*.a.com"]}]}}`, ErrConflict, "credentials.envVars[0].injectHosts[0]", "not covered"},
		{"injectHosts with port", `{"credentials": {"envVars": [{"name": "A", "mode": "mask", "injectHosts": [/*@*/"a.com:443"]}]}}`, ErrDomain, "credentials.envVars[0].injectHosts[0]", "has a port"},
		{"file mask", `{"credentials": {"files": [{"path": "~/.netrc", "mode": /*@*/"mask"}]}}`, ErrUnsupported, "credentials.files[0].mode", "masking file contents"},
		{"file missing path", `{"credentials": {"files": [/*@*/{"mode": "deny"}]}}`, ErrValue, "credentials.files[0]", `missing required key "path"`},
		{"file bad path", `{"credentials": {"files": [{"path": /*@*/"~bob/.netrc", "mode": "deny"}]}}`, ErrPath, "credentials.files[0].path", "~user"},
		{"reason for unknown entry", `{"network": {"deniedDomainReasons": {/*@*/"github.com:22": "no ssh"}, "deniedDomains": ["github.com"]}}`, ErrConflict, `network.deniedDomainReasons["github.com:22"]`, "not an entry of network.deniedDomains"},
		{"empty reason", `{"network": {"deniedDomains": ["a.com"], "deniedDomainReasons": {"a.com": /*@*/" "}}}`, ErrValue, `network.deniedDomainReasons["a.com"]`, "empty reason"},
		{"ignoreViolations not array", `{"ignoreViolations": {"npm": /*@*/"/tmp"}}`, ErrType, `ignoreViolations.npm`, "expected an array"},
		{"ignoreViolations duplicate", `{"ignoreViolations": {"git push": [], /*@*/"git push": []}}`, ErrDuplicate, `ignoreViolations["git push"]`, "twice"},
		{"unprotect unknown", `{"moat": {"unprotect": [/*@*/".vscodium"]}}`, ErrValue, "moat.unprotect[0]", "not a protected path name"},
		{"unprotect home without tilde", `{"moat": {"unprotect": [".vscode", /*@*/".bashrc"]}}`, ErrValue, "moat.unprotect[1]", "not a protected path name"},
		{"unprotect workspace with tilde", `{"moat": {"unprotect": [/*@*/"~/.git/hooks"]}}`, ErrValue, "moat.unprotect[0]", "not a protected path name"},
		{"unprotect not array", `{"moat": {"unprotect": /*@*/".vscode"}}`, ErrType, "moat.unprotect", "expected an array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s.json", []byte(tt.doc))
			checkErr(t, tt.doc, err, tt.kind, tt.key, tt.msg)
		})
	}
}

func TestParseErrorHints(t *testing.T) {
	tests := []struct{ doc, hint string }{
		{`{"filesytem": {}}`, `did you mean "filesystem"?`},
		{`{"sandbox": {}}`, `moat's own settings go under "moat"`},
		{`{"network": {"AllowedDomains": []}}`, `did you mean "allowedDomains"?`},
		{`{"moat": {"unprotect": [".bashrc"]}}`, `did you mean "~/.bashrc"?`},
		{`{"filesystem": {"allowGitConfig": true}}`, `"unprotect": [".git/config"]`},
		{`{"filesystem": {"allowWrite": ["src/*.go"]}}`, "silently miss files created later"},
	}
	for _, tt := range tests {
		_, err := Parse("s.json", []byte(tt.doc))
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Hint(), tt.hint) {
			t.Errorf("Parse(%s): err %v, hint %q; want hint containing %q", tt.doc, err, hintOf(err), tt.hint)
		}
	}
}

func hintOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Hint()
	}
	return ""
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		line, col int
	}{
		{"missing comma", "{\n  \"filesystem\": {\n    \"denyRead\": [\"a\" \"b\"]\n  }\n}", 3, 22},
		{"unterminated", "{\"filesystem\": {", 1, 17},
		{"bom", "\ufeff{}", 1, 1},
		{"single quotes", "{\n 'a': 1}", 2, 2},
		{"empty", " \n\t", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s.json", []byte(tt.doc))
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("err = %v, want a syntax *Error", err)
			}
			if e.Line != tt.line || e.Col != tt.col || e.File != "s.json" {
				t.Errorf("position %s:%d:%d, want s.json:%d:%d (%v)", e.File, e.Line, e.Col, tt.line, tt.col, err)
			}
			if strings.Contains(err.Error(), "hujson") {
				t.Errorf("err %q leaks the parser's name", err)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	doc := "{\n  \"filesystem\": {\n    \"denyRead\": [\"/ok\", \"/a\\u0000b\"]\n  }\n}"
	_, err := Parse("settings.json", []byte(doc))
	want := `settings.json:3:25: filesystem.denyRead[1]: path "/a\x00b" contains a NUL byte`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant  %s", err, want)
	}
	e := &Error{Key: "--deny-read", Err: errf(ErrPath, "empty path")}
	if got := e.Error(); got != "--deny-read: empty path" {
		t.Errorf("flag error = %q", got)
	}
}

func TestJSONC(t *testing.T) {
	doc := `// leading comment
	{
		/* block */ "filesystem": {
			"denyRead": ["~/.ssh", /* inline */ "~/.aws",], // trailing comma
		},
		"network": {"allowedDomains": ["github.com",],},
	}
	// trailing comment`
	s, err := Parse("s.jsonc", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Filesystem.DenyRead) != 2 || s.Filesystem.DenyRead[1].Value != "~/.aws" || s.Filesystem.DenyRead[1].Line != 4 {
		t.Errorf("denyRead = %+v", s.Filesystem.DenyRead)
	}
	if len(s.Network.AllowedDomains) != 1 {
		t.Errorf("allowedDomains = %+v", s.Network.AllowedDomains)
	}
}

// TestDocExample keeps the example in the package documentation valid.
func TestDocExample(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		switch {
		case line == "//\t{":
			in = true
		case !in:
			continue
		}
		b.WriteString(strings.TrimPrefix(line, "//\t") + "\n")
		if line == "//\t}" {
			break
		}
	}
	doc := b.String()
	if !strings.Contains(doc, "unprotect") {
		t.Fatalf("could not find the settings example in doc.go, got %q", doc)
	}
	s, err := Parse("doc.go example", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(s, Flags{}, testEnv); err != nil {
		t.Fatal(err)
	}
}

func TestLoadFileMissing(t *testing.T) {
	_, err := LoadFile(filepath.Join(t.TempDir(), "nope.json"))
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, os.ErrNotExist) || e.Hint() == "" {
		t.Errorf("err = %v, want *Error wrapping ErrNotExist with a hint", err)
	}
}

func TestParseTooLarge(t *testing.T) {
	doc := append([]byte("{}"), bytes.Repeat([]byte(" "), maxSettingsSize)...)
	if _, err := Parse("s.json", doc); !errors.Is(err, ErrValue) {
		t.Errorf("err = %v, want ErrValue", err)
	}
}

func TestDefaultUserConfigPath(t *testing.T) {
	tests := []struct {
		xdg, want string
	}{
		{"", "/home/u/.config/moat/config.jsonc"},
		{"/xdg", "/xdg/moat/config.jsonc"},
		{"relative/xdg", "/home/u/.config/moat/config.jsonc"}, // XDG: relative paths are ignored
	}
	for _, tt := range tests {
		env := func(k string) string {
			if k == "XDG_CONFIG_HOME" {
				return tt.xdg
			}
			return ""
		}
		if got := DefaultUserConfigPath(env, "/home/u"); got != tt.want {
			t.Errorf("XDG_CONFIG_HOME=%q: got %q, want %q", tt.xdg, got, tt.want)
		}
	}
}

func TestProtectedTable(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range protectedTable {
		id := unprotectName(e)
		switch {
		case seen[id]:
			t.Errorf("%s listed twice", id)
		case e.Reason == "":
			t.Errorf("%s has no reason", id)
		case e.Where != WhereWorkspace && e.Where != WhereHome:
			t.Errorf("%s: Where = %q", id, e.Where)
		case e.Name == "" || filepath.IsAbs(e.Name) || filepath.Clean(e.Name) != e.Name || strings.HasPrefix(e.Name, ".."):
			t.Errorf("%s: name is not a clean relative path", id)
		}
		seen[id] = true
		if checkUnprotect(id) != nil {
			t.Errorf("%s cannot be unprotected by its own name", id)
		}
	}
	// The entries the brief and srt require.
	for _, id := range []string{".git/hooks", ".git/config", ".gitmodules", ".vscode", ".idea", ".envrc", ".mcp.json",
		".claude", ".codex", ".cursor", ".gemini", ".agents", "~/.bashrc", "~/.bash_profile", "~/.bash_login",
		"~/.profile", "~/.bash_logout", "~/.zshrc", "~/.zshenv", "~/.zprofile", "~/.zlogin", "~/.gitconfig",
		"~/.config/git", "~/.ssh", "~/.config/fish"} {
		if !seen[id] {
			t.Errorf("protected table lacks %s", id)
		}
	}
	names := make([]string, 0, len(seen))
	for k := range seen {
		names = append(names, k)
	}
	sort.Strings(names)
	t.Logf("protected: %s", strings.Join(names, " "))
}
