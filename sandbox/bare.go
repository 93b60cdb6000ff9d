package sandbox

import (
	"fmt"
	"io"
	"strconv"

	"golang.org/x/sys/unix"
)

// A directory holding HEAD, objects/ and refs/ is a git dir to git: a bare
// repository. Where a work tree's .git is missing or broken (the command can
// break a real one: commits need its refs writable), git's discovery takes the
// work tree itself for one, and with "core.worktree = ." in the config the
// command wrote, the user's next git status there runs that config's
// core.fsmonitor (its pager and aliases run on other commands). A placeholder
// can't keep HEAD from being made: a directory named HEAD in a work tree makes
// "git show HEAD" ambiguous. So moat looks once the sandbox is gone.

// watchedDir is a work tree to look at after the run, and its identity at the
// start: the command may have replaced it (or a directory above it) with a link
// to somewhere else, where moat must not rename anything.
type watchedDir struct {
	path     string
	dev, ino uint64
}

func watchDir(path string) (watchedDir, bool) {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return watchedDir{}, false
	}
	return watchedDir{path, st.Dev, st.Ino}, true
}

// disarmBareLayouts renames HEAD to HEAD.moat-quarantine in each of dirs that
// the command left laid out as a bare repository, and says so on w. It runs when
// no process of the sandbox is left, so nothing changes the layout meanwhile;
// each directory is opened without following links and must be the one seen at
// the start.
func disarmBareLayouts(dirs []watchedDir, w io.Writer) {
	for _, d := range dirs {
		fd, err := unix.Openat2(unix.AT_FDCWD, d.path, &unix.OpenHow{
			Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
		if err != nil {
			continue
		}
		disarmBareLayout(fd, d, w)
		unix.Close(fd)
	}
}

func disarmBareLayout(dir int, d watchedDir, w io.Writer) {
	var st unix.Stat_t
	if unix.Fstat(dir, &st) != nil || st.Dev != d.dev || st.Ino != d.ino {
		return
	}
	// git reads HEAD as a file, or a symlink into refs/; objects/ and refs/ it
	// checks with access(2), which follows links.
	if unix.Fstatat(dir, "HEAD", &st, unix.AT_SYMLINK_NOFOLLOW) != nil || (st.Mode&unix.S_IFMT != unix.S_IFREG && st.Mode&unix.S_IFMT != unix.S_IFLNK) {
		return
	}
	for _, sub := range []string{"objects", "refs"} {
		if unix.Fstatat(dir, sub, &st, 0) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return
		}
	}
	to := "HEAD.moat-quarantine"
	for i := 2; unix.Fstatat(dir, to, &st, unix.AT_SYMLINK_NOFOLLOW) == nil; i++ {
		to = "HEAD.moat-quarantine-" + strconv.Itoa(i)
	}
	if err := unix.Renameat2(dir, "HEAD", dir, to, unix.RENAME_NOREPLACE); err != nil {
		fmt.Fprintf(w, "moat: warning: the command laid out %s as a bare git repository (HEAD, objects/, refs/), and moving HEAD aside failed: %v; don't run git there before you remove them\n", d.path, err)
		return
	}
	fmt.Fprintf(w, "moat: the command laid out %s as a bare git repository (HEAD, objects/, refs/), whose config git would obey; moved HEAD to %s\n", d.path, to)
}
