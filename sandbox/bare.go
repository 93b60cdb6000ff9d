package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// After the run moat looks at the git files the sandbox could write but no
// mount can keep as they were, and moves aside what would make the user's next
// git command run or write what the command chose. Both checks run when no
// process of the sandbox is left, so nothing changes the files meanwhile, on a
// directory opened without following links that must be the one seen at start.
//
// - A bare layout. A directory holding HEAD, objects/ and refs/ is a git dir to
//   git. Where a work tree's .git is missing or broken (the command can break a
//   real one: commits need its refs writable), git takes the work tree itself for
//   one, and with "core.worktree = ." the config the command wrote runs (its
//   core.fsmonitor on git status, its pager and aliases on other commands). A
//   placeholder can't keep HEAD from being made: a directory named HEAD in a work
//   tree makes "git show HEAD" ambiguous.
// - Links in a git dir where git writes by opening the file, not by renaming a
//   new one into place, and so follows a link: it appends to the reflogs (logs/)
//   and writes COMMIT_EDITMSG, FETCH_HEAD and the like. logs/HEAD -> ~/.bashrc
//   makes the user's next checkout append a line naming a branch the command
//   chose ("fix$(payload)"). Inside the sandbox those writes fail; on the host
//   they don't.

// watchedDir is a directory to look at after the run, and its identity at the
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

// open opens d without following links and checks it is the directory seen at
// the start. A failure is said on w: the check of d did not happen.
func (d watchedDir) open(w io.Writer, what string) (int, bool) {
	fd, err := unix.Openat2(unix.AT_FDCWD, d.path, &unix.OpenHow{
		Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	if errors.Is(err, unix.ENOENT) {
		return -1, false // removed: nothing of it for git to read
	}
	var st unix.Stat_t
	if err == nil && (unix.Fstat(fd, &st) != nil || st.Dev != d.dev || st.Ino != d.ino) {
		unix.Close(fd)
		err = errors.New("it is no longer the directory it was at the start")
	}
	if err != nil {
		fmt.Fprintf(w, "moat: warning: could not check %s for %s: %v; look before you run git there\n", d.path, what, err)
		return -1, false
	}
	return fd, true
}

// quarantine renames name in dir to name.moat-quarantine (or -2, -3, ...) and
// returns the new name.
func quarantine(dir int, name string) (string, error) {
	var st unix.Stat_t
	to := name + ".moat-quarantine"
	for i := 2; unix.Fstatat(dir, to, &st, unix.AT_SYMLINK_NOFOLLOW) == nil; i++ {
		to = name + ".moat-quarantine-" + strconv.Itoa(i)
	}
	return to, unix.Renameat2(dir, name, dir, to, unix.RENAME_NOREPLACE)
}

// disarmBareLayouts moves HEAD aside in each of dirs (work trees that had none
// at the start) that the command left laid out as a bare repository, and says
// so on w.
func disarmBareLayouts(dirs []watchedDir, w io.Writer) {
	for _, d := range dirs {
		if fd, ok := d.open(w, "a bare repository layout"); ok {
			disarmBareLayout(fd, d.path, w)
			unix.Close(fd)
		}
	}
}

func disarmBareLayout(dir int, path string, w io.Writer) {
	// git reads HEAD as a file, or a symlink into refs/; objects/ and refs/ it
	// checks with access(2), which follows links.
	var st unix.Stat_t
	if unix.Fstatat(dir, "HEAD", &st, unix.AT_SYMLINK_NOFOLLOW) != nil || (st.Mode&unix.S_IFMT != unix.S_IFREG && st.Mode&unix.S_IFMT != unix.S_IFLNK) {
		return
	}
	for _, sub := range []string{"objects", "refs"} {
		if unix.Fstatat(dir, sub, &st, 0) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return
		}
	}
	to, err := quarantine(dir, "HEAD")
	if err != nil {
		fmt.Fprintf(w, "moat: warning: the command laid out %s as a bare git repository (HEAD, objects/, refs/), and moving HEAD aside failed: %v; don't run git there before you remove them\n", path, err)
		return
	}
	fmt.Fprintf(w, "moat: the command laid out %s as a bare git repository (HEAD, objects/, refs/), whose config git would obey; moved HEAD to %s\n", path, to)
}

// gitFollowedFiles are the git dir's files git writes through a link.
var gitFollowedFiles = []string{"COMMIT_EDITMSG", "MERGE_MSG", "SQUASH_MSG", "TAG_EDITMSG", "FETCH_HEAD",
	"BISECT_LOG", "MERGE_RR", "gitk.cache", "logs"}

// gitLinkWatch is a writable git dir and the links among its followed files at
// the start, by path relative to it.
type gitLinkWatch struct {
	dir   watchedDir
	links map[string]bool
}

func watchGitLinks(dir string) (gitLinkWatch, bool) {
	d, ok := watchDir(dir)
	if !ok {
		return gitLinkWatch{}, false
	}
	return gitLinkWatch{d, gitDirLinks(os.DirFS(dir))}, true
}

// gitDirLinks lists the links among a git dir's followed files and below logs/
// (a walk that doesn't follow links).
func gitDirLinks(dir fs.FS) map[string]bool {
	links := map[string]bool{}
	for _, name := range gitFollowedFiles {
		// WalkDir takes its root's type from Stat, which follows a link: a link
		// named COMMIT_EDITMSG, or logs, would pass for the file or directory it
		// points to, and a dangling one for nothing at all.
		fi, err := fs.Lstat(dir, name)
		if err != nil {
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			links[name] = true
			continue
		}
		_ = fs.WalkDir(dir, name, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.Type()&fs.ModeSymlink != 0 {
				links[p] = true
			}
			return nil
		})
	}
	return links
}

// adminDirs lists the git dirs inside common, the git dir a repository's work
// trees share, that git writes through links in as it does in common itself: each
// linked work tree's (worktrees/ID) and each submodule's (modules/NAME, where NAME
// may hold slashes, and a submodule's own modules/ nests).
func adminDirs(common string) []string {
	var dirs []string
	if ents, err := os.ReadDir(filepath.Join(common, "worktrees")); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(common, "worktrees", e.Name()))
			}
		}
	}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		ents, err := os.ReadDir(dir)
		if err != nil || depth > 8 {
			return
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			d := filepath.Join(dir, e.Name())
			if _, err := os.Lstat(filepath.Join(d, "HEAD")); err == nil {
				dirs = append(dirs, d)
				dirs = append(dirs, adminDirs(d)...)
				continue
			}
			walk(d, depth+1)
		}
	}
	walk(filepath.Join(common, "modules"), 0)
	return dirs
}

// disarmGitLinks moves aside each link that is new among a watched git dir's
// followed files, and says so on w.
func disarmGitLinks(dirs []gitLinkWatch, w io.Writer) {
	for _, g := range dirs {
		fd, ok := g.dir.open(w, "links git would write through")
		if !ok {
			continue
		}
		// Listed through the verified descriptor, not the path.
		for rel := range gitDirLinks(os.DirFS(fmt.Sprintf("/proc/self/fd/%d", fd))) {
			if g.links[rel] {
				continue
			}
			disarmGitLink(fd, g.dir.path, rel, w)
		}
		unix.Close(fd)
	}
}

func disarmGitLink(dir int, gitDir, rel string, w io.Writer) {
	full := path.Join(gitDir, rel)
	parent, err := unix.Openat2(dir, path.Dir(rel), &unix.OpenHow{
		Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS})
	var to string
	if err == nil {
		to, err = quarantine(parent, path.Base(rel))
		unix.Close(parent)
	}
	if err != nil {
		fmt.Fprintf(w, "moat: warning: the command made %s a link, which git would write through, and moving it aside failed: %v; remove it before you run git there\n", full, err)
		return
	}
	fmt.Fprintf(w, "moat: the command made %s a link, which git would write through; moved it to %s\n", full, to)
}
