package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/moat-sandbox/moat/internal/starttrace"
)

// placeholder is a host path moat creates so that a missing protected path can be
// covered read-only: an empty directory (.vscode, .git/hooks), or a file with
// content that its reader treats as absent (.git/commondir holding ".").
type placeholder struct {
	path    string
	file    bool
	content string
}

func (ph placeholder) create() error {
	if !ph.file {
		if err := os.Mkdir(ph.path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return nil
	}
	f, err := os.OpenFile(ph.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil // made by a concurrent run, or by the user: either way not ours to write
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString(ph.content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// record line: "dir\t<path>" or "file\t<quoted content>\t<path>".
func (ph placeholder) line() string {
	if ph.file {
		return "file\t" + strconv.Quote(ph.content) + "\t" + ph.path
	}
	return "dir\t" + ph.path
}

// remove deletes the placeholder if it is still exactly what moat made: an empty
// directory, or a regular file with the placeholder content.
func removePlaceholder(line string) {
	kind, rest, _ := strings.Cut(line, "\t")
	switch kind {
	case "dir":
		// rmdir removes nothing but an empty directory (a link or file in its place
		// fails with ENOTDIR), in one step: no check to race with.
		_ = syscall.Rmdir(rest)
	case "file":
		q, path, ok := strings.Cut(rest, "\t")
		content, err := strconv.Unquote(q)
		if !ok || err != nil {
			return
		}
		fi, err := os.Lstat(path)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(content)) {
			return
		}
		if data, err := os.ReadFile(path); err == nil && string(data) == content {
			_ = os.Remove(path)
		}
	}
}

// placeholders tracks the placeholders moat creates on the host so that a
// missing protected path (.vscode, .git/hooks, ...) can be covered read-only. Each
// run holds a shared lock while its sandbox lives; the last run to end removes every
// recorded placeholder that is still an empty directory. A sandbox can't reach the
// record: it lives in the host's runtime dir, which the sandbox doesn't see.
type placeholders struct {
	lock *os.File
	dir  string
	list *os.File // the record, open for appending while the plan is made
}

func stateDir() (string, error) {
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" && filepath.IsAbs(rt) {
		if fi, err := os.Stat(rt); err == nil && fi.IsDir() {
			return filepath.Join(rt, "moat"), nil
		}
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("moat-%d", parentUID(os.Getuid()))), nil
}

// parentUID is uid as the parent user namespace sees it (itself outside any), so that
// one user's runs share one state dir in the shared /tmp whatever namespace they run in:
// inside `unshare -r` a user is uid 0, and /tmp/moat-0 is the real root's.
func parentUID(uid int) int {
	data, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return uid
	}
	return mapUID(string(data), uid)
}

// mapUID maps uid through a uid_map's lines ("inside outside count").
func mapUID(uidMap string, uid int) int {
	for _, line := range strings.Split(uidMap, "\n") {
		var inside, outside, count int
		if n, _ := fmt.Sscan(line, &inside, &outside, &count); n == 3 && uid >= inside && uid-inside < count {
			return outside + (uid - inside)
		}
	}
	return uid
}

func lockPlaceholders() (*placeholders, error) {
	dir, err := stateDir()
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return nil, &SetupError{Stage: "state", Err: fmt.Errorf("state dir %s is not a private directory of this user", dir),
			HintText: "remove it, or set XDG_RUNTIME_DIR to a directory only you can write"}
	}
	f, err := os.OpenFile(filepath.Join(dir, "placeholders.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return &placeholders{lock: f, dir: dir}, nil
}

func (p *placeholders) listPath() string { return filepath.Join(p.dir, "placeholders") }

// record notes a placeholder before it is created: a run that fails or is killed
// between creating and recording would leave a placeholder no run removes, which the
// next runs would take for the user's own (and show to the sandbox as such).
func (p *placeholders) record(ph placeholder) error {
	if p.list == nil {
		f, err := os.OpenFile(p.listPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		p.list = f
	}
	_, err := p.list.WriteString(ph.line() + "\n")
	return err
}

// recorded closes the record once the plan is made.
func (p *placeholders) recorded() {
	if p != nil && p.list != nil {
		p.list.Close()
		p.list = nil
	}
}

// release ends this run's hold; if no other run holds the lock, it removes every
// recorded placeholder that is still what moat made.
func (p *placeholders) release() {
	if p == nil || p.lock == nil {
		return
	}
	p.recorded()
	defer p.lock.Close()
	fd := int(p.lock.Fd())
	_ = syscall.Flock(fd, syscall.LOCK_UN)
	if fi, err := os.Stat(p.listPath()); err != nil || fi.Size() == 0 {
		return
	}
	if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return // another sandbox still uses them; the last one out cleans up
	}
	data, err := os.ReadFile(p.listPath())
	if err != nil {
		return
	}
	removePlaceholders(strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"))
	_ = os.Truncate(p.listPath(), 0)
	starttrace.Mark("supervisor", "placeholders removed")
}

// removePlaceholders removes the placeholders of record lines, given in the order
// they were made, last made first: a placeholder made inside another one (the hooks
// directory of a placeholder .git) goes before the directory that holds it. (Not in
// parallel: on a filesystem mounted with discard each rmdir waits for the device,
// and those waits don't overlap.)
func removePlaceholders(lines []string) {
	for i := len(lines) - 1; i >= 0; i-- {
		removePlaceholder(lines[i])
	}
}
