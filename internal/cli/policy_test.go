package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/policy"
)

// cliEnv makes a home directory and a workspace (a git work tree), moves into
// the workspace and points HOME at the home, for the duration of the test.
func cliEnv(t *testing.T) (home, ws string) {
	t.Helper()
	root := testRoot(t)
	home, ws = filepath.Join(root, "home"), filepath.Join(root, "ws")
	for _, d := range []string{home, filepath.Join(ws, ".git", "hooks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	if real, err := filepath.EvalSymlinks(home); err == nil {
		home = real
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Chdir(ws)
	return home, ws
}

// testRoot makes a directory the explanations see as the host's: not under
// /tmp or another directory the sandbox replaces with a private one.
func testRoot(t *testing.T) string {
	t.Helper()
	base := os.Getenv("MOAT_SCRIPT_DIR")
	if base == "" {
		base, _ = os.UserHomeDir()
	}
	for _, d := range (&policy.Policy{}).PrivateDirs() {
		if base == d.Path || strings.HasPrefix(base, d.Path+"/") {
			t.Skipf("no directory outside the sandbox's private ones to test in (home %s); set MOAT_SCRIPT_DIR", base)
		}
	}
	root, err := os.MkdirTemp(base, "moat-clitest-")
	if err != nil {
		t.Skipf("no test directory: %v; set MOAT_SCRIPT_DIR", err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	return root
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runCLI(t *testing.T, cmd func([]string, stdio) error, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := cmd(args, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if err != nil {
		report(&errb, err)
	}
	return out.String(), errb.String(), err
}

func TestPolicyDefault(t *testing.T) {
	home, ws := cliEnv(t)
	out, stderr, err := runCLI(t, policyCmd)
	if err != nil {
		t.Fatalf("moat policy: %v\n%s", err, stderr)
	}
	for _, want := range []string{
		"moat policy for " + ws,
		"user config   " + filepath.Join(home, ".config/moat/config.jsonc") + " (none: the built-in default applies",
		"project file  none",
		"profiles      none",
		"~/.ssh                             default: credential store (~/.ssh: SSH private keys)",
		"./.env                             default: workspace secrets",
		".                                  default\n",
		".git/hooks ",
		"  .moatignore ",
		"scrubbed unless passed: *_TOKEN",
		"(no hosts allowed)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPolicyLayers(t *testing.T) {
	home, ws := cliEnv(t)
	cfg := filepath.Join(home, ".config/moat/config.jsonc")
	writeFile(t, cfg, `{
  "filesystem": {"allowWrite": ["."]},
  "moat": {"profiles": {"mywork": {"extends": ["claude"], "network": {"allowedDomains": ["example.com"]}}}},
}`)
	writeFile(t, filepath.Join(ws, ".moat.jsonc"), `{"filesystem": {"denyRead": ["secrets"]}}`)
	writeFile(t, filepath.Join(ws, ".moatignore"), "private/\n")
	writeFile(t, filepath.Join(ws, "private", "x"), "")
	// Run from a subdirectory: the project file at the work tree's root applies.
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(ws, "sub"))

	out, stderr, err := runCLI(t, policyCmd, "--profile", "mywork", "--deny-net", "evil.example", "--json")
	if err != nil {
		t.Fatalf("moat policy: %v\n%s", err, stderr)
	}
	var v policyView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if !v.UserFound || v.UserConfig != cfg || v.ProjectFile != filepath.Join(ws, ".moat.jsonc") || v.ProjectTrusted {
		t.Errorf("files: %+v", v)
	}
	if len(v.Profiles) != 2 || v.Profiles[0].Name != "claude" || v.Profiles[0].Origin != "extended by mywork" ||
		v.Profiles[1].Origin != "flag --profile" {
		t.Errorf("profiles: %+v", v.Profiles)
	}
	has := func(rs []ruleView, path, origin string) bool {
		for _, r := range rs {
			if r.Path == path && strings.HasPrefix(r.Origin, origin) {
				return true
			}
		}
		return false
	}
	if !has(v.DenyRead, filepath.Join(ws, "secrets"), filepath.Join(ws, ".moat.jsonc")+":1 filesystem.denyRead[0]") {
		t.Errorf("the project's denyRead is missing or resolved against the wrong directory: %+v", v.DenyRead)
	}
	if !has(v.AllowedDomains, "example.com", "profile mywork ("+cfg+":3 moat.profiles.mywork.network.allowedDomains[0])") ||
		!has(v.AllowedDomains, "api.anthropic.com", "profile claude (profiles/claude.jsonc:") ||
		!has(v.DeniedDomains, "evil.example", "flag --deny-net") {
		t.Errorf("network: %+v %+v", v.AllowedDomains, v.DeniedDomains)
	}
	if !has(v.Ignored, filepath.Join(ws, "private"), filepath.Join(ws, ".moatignore")+":1 private/") {
		t.Errorf("ignored: %+v", v.Ignored)
	}
	if len(v.EnvScrub) == 0 || len(v.PassEnv) == 0 {
		t.Errorf("environment: %+v %+v", v.EnvScrub, v.PassEnv)
	}
}

// TestPolicyUntrustedProject: a widening project file stops moat with the exact
// line that trusts it; with that line, it applies; after an edit, it stops again.
func TestPolicyUntrustedProject(t *testing.T) {
	home, ws := cliEnv(t)
	proj := filepath.Join(ws, ".moat.jsonc")
	writeFile(t, proj, `{"network": {"allowedDomains": ["example.com"]}}`)
	_, stderr, err := runCLI(t, policyCmd)
	if !errors.Is(err, policy.ErrUntrusted) {
		t.Fatalf("err = %v, want ErrUntrusted\n%s", err, stderr)
	}
	for _, want := range []string{"moat: error: " + proj + ":1:14: network.allowedDomains: this project file is not trusted",
		"moat: hint: if you trust this file as it is now", `moat: hint:   {"path": "` + proj + `", "sha256": "`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	entry := stderr[strings.Index(stderr, `{"path"`):]
	entry = entry[:strings.IndexByte(entry, '\n')]
	writeFile(t, filepath.Join(home, ".config/moat/config.jsonc"),
		`{"filesystem": {"allowWrite": ["."]}, "moat": {"trustedProjects": [`+entry+`]}}`)
	out, stderr, err := runCLI(t, policyCmd)
	if err != nil || !strings.Contains(out, proj+" (trusted)") || !strings.Contains(out, "allow example.com") {
		t.Fatalf("trusted: %v\n%s\n%s", err, stderr, out)
	}
	writeFile(t, proj, `{"network": {"allowedDomains": ["example.com", "evil.example"]}}`)
	if _, stderr, err = runCLI(t, policyCmd); !errors.Is(err, policy.ErrUntrusted) || !strings.Contains(stderr, "changed since you trusted it") {
		t.Errorf("edited: %v\n%s", err, stderr)
	}
}

func TestPolicyProfilesList(t *testing.T) {
	home, _ := cliEnv(t)
	writeFile(t, filepath.Join(home, ".config/moat/config.jsonc"), `{"moat": {"profiles": {"mine": {"description": "d", "extends": ["go"]}}}}`)
	out, _, err := runCLI(t, policyCmd, "--profiles")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"claude ", "cursor ", "registries ", "(extends node-registry, python-registry", "mine             d (extends go)  ["} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPolicyUsage(t *testing.T) {
	cliEnv(t)
	for _, args := range [][]string{{"extra"}, {"--nope"}, {"--profile", "nope"}, {"--allow-net", "https://x"}} {
		_, stderr, err := runCLI(t, policyCmd, args...)
		if err == nil || !strings.Contains(stderr, "moat: error: ") || !strings.Contains(stderr, "moat: hint: ") {
			t.Errorf("%q: err %v\n%s", args, err, stderr)
		}
	}
	out, _, err := runCLI(t, policyCmd, "-h")
	if err != nil || !strings.Contains(out, policyUsage) || !strings.Contains(out, "-allow-net") {
		t.Errorf("-h: %v\n%s", err, out)
	}
}
