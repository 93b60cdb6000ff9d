package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func bareLayout(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{"objects", "refs/heads"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDisarmBareLayouts: a bare layout left in a watched work tree loses its
// HEAD, and moat says so; a work tree the command replaced with a link to
// another directory is not touched through the link, and moat warns that it
// could not check it.
func TestDisarmBareLayouts(t *testing.T) {
	root := t.TempDir()
	ws, victim := filepath.Join(root, "ws"), filepath.Join(root, "victim")
	for _, d := range []string{ws, victim} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w, ok := watchDir(ws)
	if !ok {
		t.Fatal("watchDir failed")
	}
	bareLayout(t, ws)
	var out bytes.Buffer
	disarmBareLayouts([]watchedDir{w}, &out)
	if _, err := os.Lstat(filepath.Join(ws, "HEAD")); err == nil {
		t.Errorf("HEAD is still in %s", ws)
	}
	if _, err := os.Lstat(filepath.Join(ws, "HEAD.moat-quarantine")); err != nil || !strings.Contains(out.String(), "bare git repository") {
		t.Errorf("no quarantined HEAD or no notice: %v %q", err, out.String())
	}

	// The work tree swapped for a link to a real bare repository elsewhere.
	bareLayout(t, victim)
	if err := os.Rename(ws, ws+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, ws); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	disarmBareLayouts([]watchedDir{w}, &out)
	if _, err := os.Lstat(filepath.Join(victim, "HEAD")); err != nil || strings.Contains(out.String(), "moved HEAD") {
		t.Errorf("moat renamed HEAD through a link the command made (%v): %q", err, out.String())
	}
	if !strings.Contains(out.String(), "warning: could not check "+ws) {
		t.Errorf("moat did not say it could not check the swapped work tree: %q", out.String())
	}
}
