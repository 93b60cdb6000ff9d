package ignorefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moat-sandbox/moat/policy"
)

// ErrTooMany is returned, with the matches found so far, when a walk visits
// more entries than its limit: ignore files further down were not read.
var ErrTooMany = errors.New("too many entries to look for ignore files")

// maxIgnoreFileSize bounds one ignore file; a larger one is read up to here.
const maxIgnoreFileSize = 1 << 20

// File is one ignore file read during a walk.
type File struct {
	Path     string // absolute
	Patterns []Pattern
}

// Match is one existing path an ignore file matches.
type Match struct {
	Path    string // absolute; for a directory, everything below it is covered too
	IsDir   bool
	File    string // the ignore file
	Line    int
	Pattern string // as written
}

// Origin names the rule, as policy rule origins do: "/w/.moatignore:3 secrets/".
func (m Match) Origin() string {
	return m.File + ":" + strconv.Itoa(m.Line) + " " + m.Pattern
}

// Walk finds the ignore files with the given names in root and every directory
// below it, and returns the existing paths they match, in walk order. A matched
// directory is returned once and not descended into (gitignore: nothing below an
// excluded directory can be re-included). .git directories are skipped, symlinks
// are not followed, and unreadable directories are skipped. Deeper ignore files
// override shallower ones, and within a file the last matching pattern wins. At
// most limit entries are visited; past that Walk returns what it found and an
// error wrapping ErrTooMany.
//
// Files created after the walk are not covered: the sandbox applies the result
// when it starts.
func Walk(root string, names []string, limit int) ([]Match, []File, error) {
	return WalkWith(root, names, limit, os.ReadDir)
}

// WalkWith is Walk reading directories with readDir, which returns a directory's
// entries sorted by name, as os.ReadDir does: a caller that walks the same tree
// for other reasons can share one reading of it.
func WalkWith(root string, names []string, limit int, readDir func(string) ([]fs.DirEntry, error)) ([]Match, []File, error) {
	w := &walker{names: names, limit: limit, readDir: readDir}
	err := w.walk(filepath.Clean(root), nil)
	if errors.Is(err, ErrTooMany) {
		err = fmt.Errorf("walk %s: more than %d entries: %w", root, limit, ErrTooMany)
	}
	return w.matches, w.files, err
}

type walker struct {
	readDir func(string) ([]fs.DirEntry, error)
	names   []string
	limit   int
	visited int
	matches []Match
	files   []File
}

func (w *walker) walk(dir string, stack []*File) error {
	entries, err := w.readDir(dir)
	if err != nil {
		return nil // not readable to this user, so not inside the sandbox either
	}
	for _, name := range w.names {
		if _, found := slices.BinarySearchFunc(entries, name, func(e fs.DirEntry, name string) int {
			return strings.Compare(e.Name(), name)
		}); !found {
			continue // the listing has no such entry: don't stat it in every directory
		}
		f, err := readIgnoreFile(filepath.Join(dir, name))
		if err != nil || f == nil {
			continue
		}
		stack = append(stack[:len(stack):len(stack)], f)
		w.files = append(w.files, *f)
	}
	for _, e := range entries {
		if w.visited++; w.visited > w.limit {
			return ErrTooMany
		}
		isDir := e.IsDir()
		if isDir && e.Name() == ".git" {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if m, ok := decide(stack, path, isDir); ok {
			w.matches = append(w.matches, m)
			continue
		}
		if isDir {
			if err := w.walk(path, stack); err != nil {
				return err
			}
		}
	}
	return nil
}

// readIgnoreFile reads one ignore file; nil when there is none (or it is not a
// regular file, such as the empty placeholder directory of a protected path).
func readIgnoreFile(path string) (*File, error) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFileSize))
	if err != nil {
		return nil, err
	}
	return &File{Path: path, Patterns: Parse(data)}, nil
}

// decide applies the stack of ignore files (shallowest first) to path: the last
// matching pattern wins.
func decide(stack []*File, path string, isDir bool) (Match, bool) {
	var last *Pattern
	var from *File
	for _, f := range stack {
		rel, err := filepath.Rel(filepath.Dir(f.Path), path)
		if err != nil {
			continue
		}
		rel = filepath.ToSlash(rel)
		for i := range f.Patterns {
			if f.Patterns[i].Match(rel, isDir) {
				last, from = &f.Patterns[i], f
			}
		}
	}
	if last == nil || last.negate {
		return Match{}, false
	}
	return Match{Path: path, IsDir: isDir, File: from.Path, Line: last.Line, Pattern: last.Text}, true
}

// Ignored reports whether rel (slash-separated, relative to the directory of
// the patterns) is excluded by patterns, checking its parent directories first
// as git does: below an excluded directory everything is excluded.
func Ignored(patterns []Pattern, rel string, isDir bool) bool {
	f := &File{Path: "/x/ignore", Patterns: patterns}
	parts := strings.Split(strings.Trim(rel, "/"), "/")
	for i := 1; i <= len(parts); i++ {
		dir := i < len(parts) || isDir
		if _, ok := decide([]*File{f}, "/x/"+strings.Join(parts[:i], "/"), dir); ok {
			return true
		}
	}
	return false
}

// Rules turns matches into the rules the sandbox applies to them: each matched
// path (a directory with everything below it) becomes unreadable and unwritable.
func Rules(ms []Match) (denyRead, denyWrite []policy.Rule) {
	for _, m := range ms {
		r := policy.Rule{Path: m.Path, Origin: "ignore file " + m.Origin()}
		denyRead = append(denyRead, r)
		denyWrite = append(denyWrite, r)
	}
	return denyRead, denyWrite
}

// WorkTreeRoot returns the root of the git work tree holding dir (the nearest
// directory with a .git), or dir itself outside one.
func WorkTreeRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}
