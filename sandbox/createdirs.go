package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/moat-sandbox/moat/policy"
)

// createDirs makes the missing directories of moat.createDirs, and those that
// profiles make writable, such as ~/.local/share/opencode on opencode's first run:
// a writable path must exist to be bound into the sandbox, and the agent can't
// create it from inside, where its parent is read-only. Only directories in the
// home directory are made (a profile's writable path whose name has an extension
// may be a file, and is left alone), each component without following a symlink,
// mode 0700. It returns one note per directory made or not made.
func createDirs(pol *policy.Policy) []string {
	home := pol.Home
	if real, err := filepath.EvalSymlinks(home); err == nil {
		home = real
	}
	want := append([]policy.Rule(nil), pol.CreateDirs...)
	for _, r := range pol.AllowWrite {
		if !r.Glob && strings.HasPrefix(r.Origin, "profile ") && placeholderContent(r.Path) == nil {
			want = append(want, r)
		}
	}
	var notes []string
	for _, r := range want {
		rel, err := filepath.Rel(pol.Home, r.Path)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		if _, err := os.Lstat(r.Path); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := mkdirBelow(home, rel); err != nil {
			notes = append(notes, fmt.Sprintf("%s: %s does not exist and can't be created: %v", r.Origin, r.Path, err))
			continue
		}
		notes = append(notes, fmt.Sprintf("%s: created %s, which was missing", r.Origin, r.Path))
	}
	return notes
}

// mkdirBelow creates base/rel one component at a time. An existing component must
// be a directory, not a symlink: what a sandbox made writable by an earlier run
// can't point the new directory elsewhere.
func mkdirBelow(base, rel string) error {
	d := base
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		d = filepath.Join(d, part)
		fi, err := os.Lstat(d)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			return fmt.Errorf("%s is not a directory", d)
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}
