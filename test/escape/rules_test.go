package escape_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testmoat"
)

// testRulePaths: the paths a policy's rules name can't be bent by what an earlier
// sandbox left in the workspace, and a rule on a path that doesn't exist yet still
// holds.
func testRulePaths(t *testing.T) {
	// An allow rule for a path inside the workspace: one run replaces the path
	// with a symlink to a secret or to the user's config, and the next run with
	// the same settings would carry the rule to the link's target, deeper than
	// (and so beating) the deny that hides it.
	t.Run("allow_through_planted_link", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		secret := testmoat.Token("secret")
		writeFile(t, filepath.Join(b.home, "secret", "key"), secret, 0o600)
		testmoat.Mkdir(t, filepath.Join(b.home, ".config"))
		config := `{"filesystem": {"denyRead": ["~/secret"], "allowWrite": [".", "./build"], "allowRead": ["./docs"]}}`
		r := b.run(opts{config: config, script: `ln -s "$HOME/.config" build && ln -s "$HOME/secret/key" docs && echo planted`})
		if r.code != 0 || !strings.Contains(r.stdout, "planted") {
			t.Fatalf("control: the first run could not make the links:\n%s", r)
		}
		r = b.run(opts{config: config, script: `cat docs "$HOME/secret/key"; echo pwned > build/planted; echo ran`})
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("the second run read the denied secret through the planted link:\n%s", r)
		}
		if testmoat.Exists(filepath.Join(b.home, ".config", "planted")) {
			t.Errorf("the second run wrote ~/.config/planted on the host through the planted link")
		}
		if r.code != 125 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, "symlink") {
			t.Errorf("moat ran the command with a rule through a link the sandbox could have made (want exit 125 naming the link):\n%s", r)
		}
		// Control: with the links replaced by real directories the rules work.
		for _, n := range []string{"build", "docs"} {
			if err := os.Remove(filepath.Join(b.ws, n)); err != nil {
				t.Fatal(err)
			}
		}
		testmoat.Mkdir(t, filepath.Join(b.ws, "build"))
		writeFile(t, filepath.Join(b.ws, "docs"), "public\n", 0o644)
		r = b.run(opts{config: config, script: `echo ok > build/x`})
		if r.code != 0 || testmoat.ReadFile(t, filepath.Join(b.ws, "build", "x")) != "ok\n" {
			t.Errorf("control: with real directories the run failed:\n%s", r)
		}
	})

	// A denyWrite whose parent directory doesn't exist yet: the command must not
	// be able to create the directories and then the file.
	t.Run("deny_write_missing_parent", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		config := `{"filesystem": {"allowWrite": ["."], "denyWrite": ["./deep/x/prod.conf"]}}`
		r := b.run(opts{config: config, script: `mkdir -p deep/x; echo evil > deep/x/prod.conf; echo ok > normal`})
		if testmoat.ReadFile(t, filepath.Join(b.ws, "normal")) != "ok\n" {
			t.Fatalf("control: a workspace write did not land on the host:\n%s", r)
		}
		if p := filepath.Join(b.ws, "deep", "x", "prod.conf"); testmoat.Exists(p) {
			t.Errorf("the sandbox created the denied %s on the host: %q", p, testmoat.ReadFile(t, p))
		}
		if testmoat.Exists(filepath.Join(b.ws, "deep")) {
			t.Errorf("deep/ exists on the host after the run (created, or a placeholder left behind)")
		}
	})

	// A denyWrite whose way goes through a dangling link (tools -> real, no real
	// yet): the command could create real/ and then the path through the link.
	// moat refuses to run and says why.
	t.Run("deny_write_through_dangling_link", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		if err := os.Symlink("real", filepath.Join(b.ws, "tools")); err != nil {
			t.Fatal(err)
		}
		config := `{"filesystem": {"allowWrite": ["."], "denyWrite": ["./tools/cfg/settings.json"]}}`
		r := b.run(opts{config: config, script: `mkdir -p real/cfg; echo evil > tools/cfg/settings.json; echo ran`})
		if p := filepath.Join(b.ws, "real", "cfg", "settings.json"); testmoat.Exists(p) {
			t.Errorf("the sandbox created the denied path through the dangling link: %q", testmoat.ReadFile(t, p))
		}
		if r.code != 125 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, "points to nothing") {
			t.Errorf("moat ran with a denyWrite it couldn't cover (want exit 125 naming the dangling link):\n%s", r)
		}
	})
}
