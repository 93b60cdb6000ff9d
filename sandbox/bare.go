package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// A directory holding HEAD, objects/ and refs/ is a git dir to git: a bare
// repository. Where a work tree's .git is missing or broken (the command can
// break a real one: commits need its refs writable), git's discovery takes the
// work tree itself for one, and with "core.worktree = ." in the config the
// command wrote, the user's next git status there runs that config's
// core.fsmonitor (its pager and aliases run on other commands). A placeholder
// can't keep HEAD from being made: a directory named HEAD in a work tree makes
// "git show HEAD" ambiguous. So moat looks once the sandbox is gone.

// disarmBareLayouts renames HEAD to HEAD.moat-quarantine in each of dirs (work
// trees that had no HEAD when the run started) that the command left laid out
// as a bare repository, and says so on w. It runs when no process of the
// sandbox is left, so nothing can change the layout in between.
func disarmBareLayouts(dirs []string, w io.Writer) {
	for _, dir := range dirs {
		head := filepath.Join(dir, "HEAD")
		fi, err := os.Lstat(head)
		if err != nil || !(fi.Mode().IsRegular() || fi.Mode()&os.ModeSymlink != 0) {
			continue // git reads HEAD as a file, or a symlink into refs/
		}
		if !isDir(filepath.Join(dir, "objects")) || !isDir(filepath.Join(dir, "refs")) {
			continue
		}
		to := head + ".moat-quarantine"
		for i := 2; exists(to); i++ {
			to = head + ".moat-quarantine-" + strconv.Itoa(i)
		}
		if err := os.Rename(head, to); err != nil {
			fmt.Fprintf(w, "moat: warning: the command laid out %s as a bare git repository (HEAD, objects/, refs/), and moving HEAD aside failed: %v; don't run git there before you remove them\n", dir, err)
			continue
		}
		fmt.Fprintf(w, "moat: the command laid out %s as a bare git repository (HEAD, objects/, refs/), whose config git would obey; moved HEAD to %s\n", dir, filepath.Base(to))
	}
}

// isDir follows links as git's access(2) checks do.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
