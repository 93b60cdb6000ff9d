package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moat-sandbox/moat/policy"
)

// The directories profiles make writable, and moat.createDirs, are made when
// missing; a file-like path is left alone, and a symlink on the way is not followed.
func TestCreateDirs(t *testing.T) {
	home := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(home, ".cache")); err != nil {
		t.Fatal(err)
	}
	prof := "profile x (profiles/x.jsonc:3 filesystem.allowWrite[0])"
	pol := &policy.Policy{Home: home,
		AllowWrite: []policy.Rule{
			{Path: filepath.Join(home, ".local/share/x"), Origin: prof},
			{Path: filepath.Join(home, ".x.json"), Origin: prof},              // may be a file
			{Path: filepath.Join(home, ".cache/x"), Origin: prof},             // through a symlink
			{Path: filepath.Join(home, "mine"), Origin: "flag --allow-write"}, // not a profile's
			{Path: filepath.Join(elsewhere, "outside"), Origin: prof},         // not in the home
		},
		CreateDirs: []policy.Rule{{Path: filepath.Join(home, ".config/x"), Origin: "profile x (moat.createDirs[0])"}},
	}
	notes := createDirs(pol)
	for _, want := range []string{".local/share/x", ".config/x"} {
		if fi, err := os.Lstat(filepath.Join(home, want)); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s not made as a 0700 directory: %v %v", want, fi, err)
		}
	}
	for _, not := range []string{filepath.Join(home, ".x.json"), filepath.Join(elsewhere, "x"), filepath.Join(home, "mine"), filepath.Join(elsewhere, "outside")} {
		if _, err := os.Lstat(not); err == nil {
			t.Errorf("%s was made", not)
		}
	}
	if len(notes) != 3 {
		t.Errorf("want 3 notes (2 made, 1 refused), got %q", notes)
	}
}
