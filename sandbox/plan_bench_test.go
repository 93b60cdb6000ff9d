package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/moat-sandbox/moat/policy"
)

// BenchmarkStartPlan measures what Cmd.Start does on the host before the sandbox
// exists (host sockets, ignore files, the plan, placeholders made and removed), for
// the default policy in an empty workspace and in a git work tree with files.
func BenchmarkStartPlan(b *testing.B) {
	home, err := os.UserHomeDir()
	if err != nil {
		b.Fatal(err)
	}
	empty := b.TempDir()
	repo := b.TempDir()
	for i := 0; i < 20; i++ {
		d := filepath.Join(repo, "pkg", string(rune('a'+i)), "sub")
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 20; j++ {
			if err := os.WriteFile(filepath.Join(d, string(rune('a'+j))+".go"), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		b.Skipf("git init: %v: %s", err, out)
	}
	for _, ws := range []struct{ name, dir string }{{"empty", empty}, {"repo", repo}} {
		b.Run(ws.name, func(b *testing.B) {
			pol, err := policy.Default(policy.Env{Cwd: ws.dir, Home: home})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				ph, err := lockPlaceholders()
				if err != nil {
					b.Fatal(err)
				}
				o := planOptions{extraDeny: hostSockets(pol, os.Environ()), createPlaceholders: true, record: ph.record, dirs: newDirCache()}
				if o.denyRead, o.denyWrite, err = ignoreRules(pol, o.dirs); err != nil {
					b.Fatal(err)
				}
				if _, err := newPlan(pol, o); err != nil {
					b.Fatal(err)
				}
				ph.release()
			}
		})
	}
}
