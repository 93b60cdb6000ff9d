package escape_test

import (
	"github.com/moat-sandbox/moat/internal/testmoat"
	"path/filepath"
	"strings"
	"testing"
)

// testEnvironmentSecrets: API tokens in the environment don't reach the command
// (THREATS: environment secrets), by settings and by default.
func testEnvironmentSecrets(t *testing.T) {
	t.Run("configured_deny_and_mask", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		denied, masked, plain := testmoat.Token("gh"), testmoat.Token("openai"), testmoat.Token("plain")
		r := b.run(opts{
			config: `{"filesystem": {"allowWrite": ["."]}, "credentials": {"envVars": [
  {"name": "GITHUB_TOKEN", "mode": "deny"}, {"name": "OPENAI_API_KEY", "mode": "mask"}]}}`,
			env:    []string{"GITHUB_TOKEN=" + denied, "OPENAI_API_KEY=" + masked, "MOAT_PLAIN=" + plain},
			script: "env > envdump; cat /proc/self/environ /proc/1/environ >> envdump 2>/dev/null; exit 0",
		})
		dump := testmoat.ReadFile(t, filepath.Join(b.ws, "envdump"))
		if !strings.Contains(dump, "MOAT_PLAIN="+plain) {
			t.Fatalf("control: an ordinary variable did not reach the command:\n%s\nenv:\n%s", r, dump)
		}
		for name, tok := range map[string]string{"GITHUB_TOKEN (deny)": denied, "OPENAI_API_KEY (mask)": masked} {
			if strings.Contains(dump, tok) {
				t.Errorf("%s reached the command's environment", name)
			}
		}
		if strings.Contains(dump, "GITHUB_TOKEN=") {
			t.Errorf("a denied variable is still set (with some value)")
		}
		if !strings.Contains(dump, "OPENAI_API_KEY=") {
			t.Errorf("a masked variable should stay set, with a placeholder value")
		}
	})

	t.Run("default_token_names", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		names := []string{"GITHUB_TOKEN", "GH_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
			"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NPM_TOKEN"}
		toks := map[string]string{}
		var env []string
		for _, n := range names {
			toks[n] = testmoat.Token("env")
			env = append(env, n+"="+toks[n])
		}
		plain := testmoat.Token("plain")
		env = append(env, "MOAT_PLAIN="+plain)
		r := b.run(opts{env: env, script: "env > envdump"})
		dump := testmoat.ReadFile(t, filepath.Join(b.ws, "envdump"))
		if !strings.Contains(dump, "MOAT_PLAIN="+plain) {
			t.Fatalf("control: an ordinary variable did not reach the command:\n%s\nenv:\n%s", r, dump)
		}
		var leaked []string
		for _, n := range names {
			if strings.Contains(dump, toks[n]) {
				leaked = append(leaked, n)
			}
		}
		if len(leaked) > 0 {
			t.Errorf("with the default policy these token variables reached the command unmasked: %v", leaked)
		}
	})
}
