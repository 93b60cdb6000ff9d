package sandbox

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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

// Git writes some files of its git dir by opening them, not by renaming a new
// file into place, and so follows a symlink there: it appends to the reflogs
// (logs/), and writes COMMIT_EDITMSG, MERGE_MSG, FETCH_HEAD and the like. A
// link the command plants there (logs/HEAD -> ~/.bashrc) makes the user's next
// git command write where the link points, outside the workspace, text the
// command chose (a branch name is a shell command substitution away from a
// payload). Inside the sandbox those writes fail; on the host they don't.
// moat notes which of those paths are links at the start and, once the
// sandbox is gone, moves aside every link there that is new.

// gitFollowedFiles are the git dir's files git writes through a link.
var gitFollowedFiles = []string{"COMMIT_EDITMSG", "MERGE_MSG", "SQUASH_MSG", "TAG_EDITMSG", "FETCH_HEAD",
	"BISECT_LOG", "MERGE_RR", "gitk.cache", "logs"}

// gitLinkWatch is a writable git dir and the links its followed files were at
// the start.
type gitLinkWatch struct {
	dir   watchedDir
	links map[string]bool // relative to dir
}

func watchGitLinks(dir string) (gitLinkWatch, bool) {
	d, ok := watchDir(dir)
	if !ok {
		return gitLinkWatch{}, false
	}
	return gitLinkWatch{d, gitDirLinks(dir)}, true
}

// gitDirLinks lists the links among dir's followed files and below logs/.
func gitDirLinks(dir string) map[string]bool {
	links := map[string]bool{}
	for _, name := range gitFollowedFiles {
		_ = filepath.WalkDir(filepath.Join(dir, name), func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if e.Type()&fs.ModeSymlink != 0 {
				if rel, err := filepath.Rel(dir, path); err == nil {
					links[rel] = true
				}
			}
			return nil
		})
	}
	return links
}

// disarmGitLinks renames each link that is new in a watched git dir to
// NAME.moat-quarantine, and says so on w. It runs when no process of the
// sandbox is left.
func disarmGitLinks(dirs []gitLinkWatch, w io.Writer) {
	for _, g := range dirs {
		var st unix.Stat_t
		if unix.Lstat(g.dir.path, &st) != nil || st.Dev != g.dir.dev || st.Ino != g.dir.ino {
			continue
		}
		for rel := range gitDirLinks(g.dir.path) {
			if g.links[rel] {
				continue
			}
			path := filepath.Join(g.dir.path, rel)
			target, _ := os.Readlink(path)
			to := path + ".moat-quarantine"
			for i := 2; unix.Lstat(to, &st) == nil; i++ {
				to = path + ".moat-quarantine-" + strconv.Itoa(i)
			}
			if err := unix.Renameat2(unix.AT_FDCWD, path, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE); err != nil {
				fmt.Fprintf(w, "moat: warning: the command made %s a link to %s, which git would write through, and moving it aside failed: %v; remove it before you run git there\n", path, target, err)
				continue
			}
			fmt.Fprintf(w, "moat: the command made %s a link to %s, which git would write through; moved it to %s\n", path, target, filepath.Base(to))
		}
	}
}
