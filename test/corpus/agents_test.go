package corpus_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testmoat"
	"github.com/moat-sandbox/moat/policy"
)

// agentCLI is a coding agent's CLI as published on the npm registry, and how to
// start it offline under its profile.
type agentCLI struct {
	profile string
	// pkg is the npm package@version, pinned: what npm chose on Node 20 in
	// November 2026 (later claude-code releases declare Node 22 in engines).
	pkg string
	bin string // its command's name
	// exe is the program to start, a glob relative to the install directory.
	// Packages that ship a native binary per platform (claude, opencode) put a
	// placeholder in node_modules/.bin that their postinstall script replaces;
	// the test installs with --ignore-scripts (no package code runs on the host)
	// and starts the platform package's binary, which is what the script copies.
	exe     string
	minNode int // Node.js major its JavaScript needs (engines); 0 for a native binary
	// skip, when set, says why the CLI can't be installed here.
	skip string
	// state is a command that makes the CLI write its state without a network or
	// a login; stateDir ("~/...") is where the profile says that state goes.
	state    []string
	stateDir string
	env      []string // keep the CLI off the network where it has a switch for that
}

var agents = []agentCLI{
	{profile: "claude", pkg: "@anthropic-ai/claude-code@2.1.197", bin: "claude",
		exe: "node_modules/@anthropic-ai/claude-code-linux-*/claude",
		// Without a login, -p answers "Not logged in" and still records the session.
		state: []string{"-p", "hello"}, stateDir: "~/.claude/projects",
		env: []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}},
	{profile: "codex", pkg: "@openai/codex@0.169.0", bin: "codex", minNode: 16,
		exe: "node_modules/.bin/codex",
		// Opens (creates) its state databases and installation id, then says "Not logged in".
		state: []string{"login", "status"}, stateDir: "~/.codex"},
	{profile: "gemini", pkg: "@google/gemini-cli@0.61.0", bin: "gemini", minNode: 20,
		exe: "node_modules/.bin/gemini",
		// Registers the project (projects.json, tmp/, history/), then asks for an auth method.
		state: []string{"-p", "hello"}, stateDir: "~/.gemini",
		env: []string{"GEMINI_CLI_NO_RELAUNCH=true"}}, // one node process, not two
	{profile: "opencode", pkg: "opencode-ai@1.18.33", bin: "opencode",
		exe:   "node_modules/opencode-linux-*/bin/opencode",
		state: []string{"auth", "list"}, stateDir: "~/.local/share/opencode",
		env: []string{"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1"}},
	{profile: "cursor", skip: "cursor-agent is published only on cursor.com's own download host, not on the npm " +
		"registry (the npm package named cursor-agent is someone else's); this host reaches only the Go module proxy, " +
		"Debian's archive and the npm registry"},
}

// TestAgents installs the agent CLIs from the npm registry (once, into a cache
// directory) and starts each under its profile in an empty home directory, as on
// a machine where the agent never ran outside moat: --version and --help must
// work, and a command that records state must leave it on the host where the
// profile says, and nothing anywhere else in the home directory.
func TestAgents(t *testing.T) {
	t.Parallel() // a long sequence of its own: run it beside the others
	if testing.Short() {
		t.Skip("-short: the agent CLIs are a large download")
	}
	// An agent's profile re-opens its login: each such built-in profile needs an
	// entry here, installable or with the reason it is not.
	covered := map[string]bool{}
	for _, a := range agents {
		covered[a.profile] = true
	}
	for _, info := range policy.BuiltinProfiles() {
		pol, err := policy.CompileLayers(policy.Layers{Profiles: []string{info.Name}}, policy.Env{Cwd: "/w", Home: "/h"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pol.AllowedSecrets) > 0 && !covered[info.Name] {
			t.Errorf("the %s profile re-opens a login, so it is an agent's: add its CLI to agents", info.Name)
		}
	}
	for _, a := range agents {
		t.Run(a.profile, func(t *testing.T) {
			if a.skip != "" {
				t.Skip(a.skip)
			}
			if a.minNode > 0 {
				if major, err := nodeMajor(); err != nil {
					t.Skipf("%s needs Node.js %d+: %v", a.pkg, a.minNode, err)
				} else if major < a.minNode {
					t.Skipf("%s needs Node.js %d+; this host has %d", a.pkg, a.minNode, major)
				}
			}
			dir, skip, err := installAgents(t)
			if err != nil {
				t.Fatal(err)
			}
			if skip != "" {
				t.Skip(skip)
			}
			exes, _ := filepath.Glob(filepath.Join(dir, a.exe))
			if len(exes) == 0 {
				t.Skipf("%s installed no %s: no build of it for this platform (%s/%s)", a.pkg, a.exe, runtime.GOOS, runtime.GOARCH)
			}
			testAgent(t, a, exes[0])
		})
	}
}

func testAgent(t *testing.T, a agentCLI, bin string) {
	b := newBox(t)
	b.git("init", "-q")
	pr := compileProfile(t, b, a.profile)
	flags := []string{"--profile", a.profile}
	version := a.pkg[strings.LastIndex(a.pkg, "@")+1:]

	r := b.run(opts{argv: []string{bin, "--version"}, flags: flags, env: a.env})
	if r.code != 0 || !strings.Contains(r.stdout, version) {
		t.Fatalf("%s --version under --profile %s: want exit 0 and %s:\n%s", a.bin, a.profile, version, r)
	}
	r = b.run(opts{argv: []string{bin, "--help"}, flags: flags, env: a.env})
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, a.bin) { // opencode prints its usage on stderr
		t.Errorf("%s --help under --profile %s: want exit 0 and a usage text:\n%s", a.bin, a.profile, r)
	}

	before := snapshot(t, b.home)
	r = b.run(opts{argv: append([]string{bin}, a.state...), flags: flags, env: a.env})
	if r.code >= 125 {
		t.Fatalf("%s %s under --profile %s did not start:\n%s", a.bin, strings.Join(a.state, " "), a.profile, r)
	}
	after := snapshot(t, b.home)
	stateDir := filepath.Join(b.home, strings.TrimPrefix(a.stateDir, "~/"))
	var inState, elsewhere []string
	for p, sig := range after {
		if before[p] == sig {
			continue
		}
		if p == stateDir || strings.HasPrefix(p, stateDir+"/") {
			inState = append(inState, p)
		}
		if !pr.pol.ExplainPath(p).Write {
			elsewhere = append(elsewhere, p)
		}
	}
	sort.Strings(elsewhere)
	if len(inState) == 0 {
		t.Errorf("%s %s wrote nothing under %s on the host (exit %d):\n%s", a.bin, strings.Join(a.state, " "), a.stateDir, r.code, r)
	}
	if len(elsewhere) > 0 {
		t.Errorf("after %s %s these paths changed in the home directory outside the profile's writable paths: %q",
			a.bin, strings.Join(a.state, " "), elsewhere)
	}
	t.Logf("%s %s: exit %d, %d state files under %s", a.bin, strings.Join(a.state, " "), r.code, len(inState), a.stateDir)
}

// snapshot maps every file and symlink under dir to its size and modification
// time, and every directory to "dir" (a directory counts when it appears, not
// when its entries change).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		if d.IsDir() {
			m[p] = "dir"
			return nil
		}
		if fi, err := d.Info(); err == nil {
			m[p] = fmt.Sprintf("%d %d", fi.Size(), fi.ModTime().UnixNano())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func nodeMajor() (int, error) {
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return 0, fmt.Errorf("node --version: %v", err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, _, _ := strings.Cut(v, ".")
	return strconv.Atoi(major)
}

var (
	agentsOnce         sync.Once
	agentsDir, noAgent string
	agentsErr          error
)

// installAgents installs every agent package with one npm install, from the
// registry npm is configured for, into $MOAT_TEST_AGENTS or the user's cache
// directory (reused by later runs: the versions are pinned). It returns the
// directory, or why the packages can't be installed here, or the error of an
// install that should have worked.
func installAgents(t *testing.T) (dir, skip string, err error) {
	agentsOnce.Do(func() { agentsDir, noAgent, agentsErr = doInstallAgents(t) })
	return agentsDir, noAgent, agentsErr
}

func doInstallAgents(t *testing.T) (string, string, error) {
	var pkgs []string
	for _, a := range agents {
		if a.pkg != "" {
			pkgs = append(pkgs, a.pkg)
		}
	}
	sum := sha256.Sum256([]byte(strings.Join(pkgs, "\n")))
	name := "agents-" + hex.EncodeToString(sum[:6])

	parent := os.Getenv("MOAT_TEST_AGENTS")
	if parent == "" {
		if c, err := os.UserCacheDir(); err == nil && !testmoat.HiddenInSandbox(c) {
			parent = filepath.Join(c, "moat-test")
		} else {
			parent = baseDir // not kept: installed again on every run
		}
	}
	dir := filepath.Join(parent, name)
	if testmoat.Exists(filepath.Join(dir, ".installed")) {
		return dir, "", nil
	}
	reg := npmRegistry()
	if reg.skip != "" {
		return "", "can't install " + strings.Join(pkgs, ", ") + ": " + reg.skip, nil
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", "", fmt.Errorf("install the agent CLIs: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, ".install-")
	if err != nil {
		return "", "", fmt.Errorf("install the agent CLIs: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	args := append([]string{"install", "--prefix", tmp, "--registry", reg.url, "--cache", filepath.Join(tmp, ".npm-cache"),
		"--ignore-scripts", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error"}, pkgs...)
	cmd := exec.CommandContext(ctx, "npm", args...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		// The registry answered a moment ago: a failure now is this test's to report.
		return "", "", fmt.Errorf("npm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("installed %s in %v", strings.Join(pkgs, " "), time.Since(start).Round(time.Second))
	if err := os.RemoveAll(filepath.Join(tmp, ".npm-cache")); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, ".installed"), []byte(strings.Join(pkgs, "\n")+"\n"), 0o644); err != nil {
		return "", "", err
	}
	if err := os.Rename(tmp, dir); err != nil && !testmoat.Exists(filepath.Join(dir, ".installed")) {
		return "", "", err // not a concurrent install that finished first
	}
	return dir, "", nil
}
