package corpus_test

import (
	"fmt"
	"github.com/moat-sandbox/moat/internal/testmoat"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/policy"
)

// profileRules is what one built-in profile adds to the default policy, as the
// policy package compiles it for a box's workspace and home.
type profileRules struct {
	pol                   *policy.Policy
	allowWrite, denyWrite []string // absolute paths
	passEnv               []string // patterns
	secrets               []string // absolute paths of the secret table entries it re-opens
}

func compileProfile(t *testing.T, b *box, name string) profileRules {
	t.Helper()
	pol, err := policy.CompileLayers(policy.Layers{Profiles: []string{name}}, policy.Env{Cwd: b.ws, Home: b.home})
	if err != nil {
		t.Fatal(err)
	}
	pr := profileRules{pol: pol}
	fromProfile := func(origin string) bool { return strings.HasPrefix(origin, "profile ") }
	for _, r := range pol.AllowWrite {
		if fromProfile(r.Origin) && !r.Glob {
			pr.allowWrite = append(pr.allowWrite, r.Path)
		}
	}
	for _, r := range pol.DenyWrite {
		if fromProfile(r.Origin) && !r.Glob {
			pr.denyWrite = append(pr.denyWrite, r.Path)
		}
	}
	for _, e := range pol.PassEnv {
		if fromProfile(e.Origin) {
			pr.passEnv = append(pr.passEnv, e.Pattern)
		}
	}
	for _, s := range pol.AllowedSecrets {
		pr.secrets = append(pr.secrets, filepath.Join(b.home, strings.TrimPrefix(s.Name, "~/")))
	}
	return pr
}

// looksLikeFile says whether a profile path names a file (~/.claude.json) rather
// than a directory (~/.claude, ~/.cache/go-build): moat's own rule for
// placeholders, an extension after the leading dot.
func looksLikeFile(path string) bool {
	return strings.Contains(strings.TrimPrefix(filepath.Base(path), "."), ".")
}

// makeStateDirs creates a profile's writable paths in the fake home, as a user has
// them after running the tool once: a path that doesn't exist when the sandbox
// starts can't be made writable (README, Limitations).
func makeStateDirs(t *testing.T, paths []string) {
	t.Helper()
	for _, p := range paths {
		if looksLikeFile(p) {
			if !testmoat.Exists(p) {
				writeFile(t, p, "{}\n")
			}
			continue
		}
		testmoat.Mkdir(t, p)
	}
}

// TestProfiles runs every built-in profile for real (policy.BuiltinProfiles, so a
// new profile is covered without changing the test): each path it makes writable
// takes a write that lands on the host, each path it keeps read-only refuses one,
// each variable it passes reaches the command while a token it doesn't pass stays
// out, and each login it re-opens is readable with the profile and hidden without.
func TestProfiles(t *testing.T) {
	for _, info := range policy.BuiltinProfiles() {
		t.Run(info.Name, func(t *testing.T) {
			t.Parallel()
			testProfile(t, info.Name)
		})
	}
}

func testProfile(t *testing.T, name string) {
	b := newBox(t)
	b.git("init", "-q")
	pr := compileProfile(t, b, name)
	makeStateDirs(t, pr.allowWrite)

	var script strings.Builder
	script.WriteString("w() { printf '%s\\n' \"$2\" > \"$1\"; }\n")
	writes := map[string]string{} // host file -> token the sandbox writes there
	for _, p := range pr.allowWrite {
		target := p
		if !looksLikeFile(p) {
			target = filepath.Join(p, "moat-profile-probe")
		}
		writes[target] = testmoat.Token("write")
		fmt.Fprintf(&script, "w %s %s\n", shq(target), writes[target])
	}
	denyTok := testmoat.Token("denied")
	for _, p := range pr.denyWrite {
		for _, target := range []string{p, filepath.Join(p, "moat-profile-probe"), filepath.Join(p, "sub", "x")} {
			fmt.Fprintf(&script, "mkdir -p %s 2>/dev/null; w %s %s 2>/dev/null\n", shq(filepath.Dir(target)), shq(target), denyTok)
		}
	}

	env := []string{"GITHUB_TOKEN=" + testmoat.Token("unpassed")}
	passed := map[string]string{}
	for _, pat := range pr.passEnv {
		n := strings.ReplaceAll(pat, "*", "MOATPROBE")
		passed[n] = testmoat.Token("passed")
		env = append(env, n+"="+passed[n])
	}
	script.WriteString("env > envdump\n")

	logins := map[string]string{}
	for _, p := range pr.secrets {
		file := p // a login file; a login directory gets a file inside
		if testmoat.Exists(p) && !looksLikeFile(p) {
			file = filepath.Join(p, "login")
		}
		logins[file] = testmoat.Token("login")
		writeFile(t, file, logins[file]+"\n")
		fmt.Fprintf(&script, "cat %s\n", shq(file))
	}
	script.WriteString("exit 0\n")

	r := b.run(opts{script: script.String(), flags: []string{"--profile", name}, env: env})
	if r.code != 0 {
		t.Fatalf("moat run --profile %s failed:\n%s", name, r)
	}
	for target, tok := range writes {
		if !strings.Contains(testmoat.ReadFile(t, target), tok) {
			t.Errorf("the profile makes %s writable, but the sandbox's write did not land there on the host:\n%s", target, r)
		}
	}
	if hits := filesContaining(t, b.home, denyTok, nil); len(hits) > 0 {
		t.Errorf("the profile keeps these read-only, yet the sandbox wrote %v", hits)
	}
	dump := testmoat.ReadFile(t, filepath.Join(b.ws, "envdump"))
	for n, tok := range passed {
		if !strings.Contains(dump, n+"="+tok) {
			t.Errorf("the profile passes %s, but it did not reach the command", n)
		}
	}
	if strings.Contains(dump, "GITHUB_TOKEN=") {
		t.Errorf("GITHUB_TOKEN reached the command under the profile, which does not pass it")
	}
	for p, tok := range logins {
		if !strings.Contains(r.stdout, tok) {
			t.Errorf("the profile re-opens %s, but the sandbox could not read it:\n%s", p, r)
		}
	}
	if len(logins) > 0 {
		var cat strings.Builder
		for p := range logins {
			fmt.Fprintf(&cat, "cat %s; ", shq(p))
		}
		r := b.run(opts{script: cat.String() + "exit 0"})
		for p, tok := range logins {
			if strings.Contains(r.stdout+r.stderr, tok) {
				t.Errorf("%s is readable without the profile", p)
			}
		}
	}
	t.Logf("%d writable paths, %d read-only paths, %d variables, %d logins", len(writes), len(pr.denyWrite), len(passed), len(logins))
}
