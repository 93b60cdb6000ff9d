//go:build linux

package nsinit

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// lookPath finds name the way a shell would, with the command's own PATH, as the
// sandbox sees the filesystem.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if err := checkExec(name); err != nil {
			return "", &os.PathError{Op: "exec", Path: name, Err: err}
		}
		return name, nil
	}
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	var denied error
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		err := checkExec(p)
		if err == nil {
			return p, nil
		}
		if err == unix.EACCES && denied == nil {
			denied = &os.PathError{Op: "exec", Path: p, Err: unix.EACCES}
		}
	}
	if denied != nil {
		return "", denied
	}
	return "", &os.PathError{Op: "exec", Path: name, Err: unix.ENOENT}
}

func checkExec(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return unix.ENOENT
	}
	if fi.IsDir() {
		return unix.EACCES
	}
	if err := unix.Access(p, unix.X_OK); err != nil {
		return unix.EACCES
	}
	return nil
}
