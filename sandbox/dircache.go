package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
)

// dirCache holds the directory listings read while one sandbox is planned, so that
// the walks over the workspace (ignore files, deny globs, nested repositories) read
// each directory once. A listing is as of the first walk that read it, as it would be
// one walk later; a nil cache reads every time.
type dirCache struct {
	m map[string][]fs.DirEntry
	n int // entries held
}

// maxCachedEntries bounds what a cache holds; listings past it are read and not kept.
const maxCachedEntries = 50000

func newDirCache() *dirCache { return &dirCache{m: map[string][]fs.DirEntry{}} }

// readDir is os.ReadDir, once per directory. Errors are not kept.
func (c *dirCache) readDir(dir string) ([]fs.DirEntry, error) {
	if c == nil {
		return os.ReadDir(dir)
	}
	if ents, ok := c.m[dir]; ok {
		return ents, nil
	}
	ents, err := os.ReadDir(dir)
	if err == nil && c.n+len(ents) <= maxCachedEntries {
		c.m[dir] = ents
		c.n += len(ents)
	}
	return ents, err
}

// walkDir is filepath.WalkDir reading directories through the cache.
func (c *dirCache) walkDir(root string, fn fs.WalkDirFunc) error {
	info, err := os.Lstat(root)
	if err != nil {
		err = fn(root, nil, err)
	} else {
		err = c.walk(root, fs.FileInfoToDirEntry(info), fn)
	}
	if err == filepath.SkipDir || err == filepath.SkipAll {
		return nil
	}
	return err
}

func (c *dirCache) walk(path string, d fs.DirEntry, fn fs.WalkDirFunc) error {
	if err := fn(path, d, nil); err != nil || !d.IsDir() {
		if err == filepath.SkipDir && d.IsDir() {
			err = nil // the directory is skipped
		}
		return err
	}
	ents, err := c.readDir(path)
	if err != nil {
		// A second call reports the error, as filepath.WalkDir makes it.
		if err = fn(path, d, err); err != nil {
			if err == filepath.SkipDir && d.IsDir() {
				err = nil
			}
			return err
		}
	}
	for _, e := range ents {
		if err := c.walk(filepath.Join(path, e.Name()), e, fn); err != nil {
			if err == filepath.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}
