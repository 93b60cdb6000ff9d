package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
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
// missing protected path (.vscode, .git/hooks, ...) can be covered read-only.
// They are grouped by the directory they are made in, each group with a lock
// and a record in the user's state dir. A run holds a shared lock on a group
// from before it looks at any placeholder there (hold) until its sandbox is
// gone; a run that ends removes the recorded placeholders of every group no run
// holds any more. So a placeholder goes when the last run that may cover it
// ends, and runs in other directories don't keep it. A sandbox can't reach the
// state dir: it lives in the host's runtime dir, which the sandbox doesn't see.
type placeholders struct {
	dir    string
	groups map[string]*phGroup // by the directory the placeholders are made in
}

// phGroup is one directory's placeholders: name is the record's file name in
// the state dir, name+".lock" its lock's.
type phGroup struct {
	name string
	lock *os.File
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

// lockPlaceholders prepares this run's use of the state dir; hold takes the
// locks.
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
	return &placeholders{dir: dir, groups: map[string]*phGroup{}}, nil
}

// groupName names the state files of the placeholders made in dir.
func groupName(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "ph-" + hex.EncodeToString(sum[:12])
}

// hold takes this run's shared lock on the placeholders made in dir, waiting
// while a run that ended removes them. The plan calls it before it looks at a
// protected path in dir: from then on no other run removes a placeholder there
// until this run releases.
func (p *placeholders) hold(dir string) error {
	if p.groups[dir] != nil {
		return nil
	}
	g := &phGroup{name: groupName(dir)}
	f, err := os.OpenFile(filepath.Join(p.dir, g.name+".lock"), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	g.lock = f
	p.groups[dir] = g
	return nil
}

// record notes a placeholder before it is created: a run that fails or is killed
// between creating and recording would leave a placeholder no run removes, which the
// next runs would take for the user's own (and show to the sandbox as such).
func (p *placeholders) record(ph placeholder) error {
	dir := filepath.Dir(ph.path)
	if err := p.hold(dir); err != nil {
		return err
	}
	g := p.groups[dir]
	if g.list == nil {
		f, err := os.OpenFile(filepath.Join(p.dir, g.name), os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		g.list = f
	}
	_, err := g.list.WriteString(ph.line() + "\n")
	return err
}

// recorded closes the records once the plan is made.
func (p *placeholders) recorded() {
	if p == nil {
		return
	}
	for _, g := range p.groups {
		if g.list != nil {
			g.list.Close()
			g.list = nil
		}
	}
}

// release ends this run's holds, then removes the recorded placeholders of every
// group no run holds: this run's, and those of runs that ended without removing
// theirs (killed, or failed).
func (p *placeholders) release() {
	if p == nil || p.groups == nil {
		return
	}
	p.recorded()
	for _, g := range p.groups {
		g.lock.Close() // the lock goes with the descriptor
	}
	p.groups = nil
	ents, err := os.ReadDir(p.dir)
	if err != nil {
		return
	}
	var lines []string
	var taken []*os.File
	var lists []string
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok {
			continue
		}
		list := filepath.Join(p.dir, name) // "placeholders" for moat's earlier single record
		if fi, err := os.Stat(list); err != nil || fi.Size() == 0 {
			continue
		}
		f, err := os.OpenFile(filepath.Join(p.dir, e.Name()), os.O_RDWR|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // a live run holds them; the last one out removes them
			continue
		}
		data, err := os.ReadFile(list)
		if err != nil {
			f.Close()
			continue
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
		taken = append(taken, f)
		lists = append(lists, list)
	}
	if len(taken) == 0 {
		return
	}
	removePlaceholders(lines)
	for i, f := range taken {
		_ = os.Truncate(lists[i], 0)
		f.Close()
	}
	starttrace.Mark("supervisor", "placeholders removed")
}

// removePlaceholders removes the placeholders of record lines, deepest first: a
// placeholder made inside another one (the hooks directory of a placeholder .git)
// goes before the directory that holds it, whichever group recorded it. (Not in
// parallel: on a filesystem mounted with discard each rmdir waits for the device,
// and those waits don't overlap.)
func removePlaceholders(lines []string) {
	depth := func(line string) int { return strings.Count(line[strings.LastIndexByte(line, '\t')+1:], "/") }
	sort.SliceStable(lines, func(i, j int) bool { return depth(lines[i]) > depth(lines[j]) })
	for _, l := range lines {
		removePlaceholder(l)
	}
}
