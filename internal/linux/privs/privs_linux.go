//go:build linux

// Package privs holds the last steps before the sandboxed command's exec that both
// modes share: dropping every capability and finding the executable.
package privs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// DropCapabilities empties every capability set of this thread, the bounding set first
// (so a command running as root regains nothing at exec). Without CAP_SETPCAP (any
// unprivileged user) the bounding set can't be touched, and needn't be: exec grants a
// non-root uid nothing under no_new_privs.
func DropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return os.NewSyscallError("capget", err)
	}
	if data[0].Permitted|data[1].Permitted != 0 {
		// The kernel answers EINVAL for exactly the numbers past its last capability
		// (cap_valid), and only after the CAP_SETPCAP check: dropping until then
		// drops every capability this kernel has, those newer than x/sys/unix too,
		// without reading /proc/sys/kernel/cap_last_cap.
		for c := 0; ; c++ {
			err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
			if err == unix.EINVAL && c > 0 {
				break
			}
			if err != nil {
				return os.NewSyscallError("prctl(PR_CAPBSET_DROP)", err)
			}
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_CAP_AMBIENT_CLEAR_ALL)", err)
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return os.NewSyscallError("capset", err)
	}
	return nil
}

// LookPath finds name as a shell would, with the command's own PATH, as the
// sandbox sees the filesystem; its errors carry ENOENT or EACCES for exit 127/126.
func LookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, checkExec(name)
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
		if errors.Is(err, unix.EACCES) && denied == nil {
			denied = err
		}
	}
	if denied != nil {
		return "", denied
	}
	return "", &os.PathError{Op: "exec", Path: name, Err: unix.ENOENT}
}

func checkExec(p string) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return &os.PathError{Op: "exec", Path: p, Err: unix.ENOENT}
	case fi.IsDir(), unix.Access(p, unix.X_OK) != nil:
		return &os.PathError{Op: "exec", Path: p, Err: unix.EACCES}
	}
	return nil
}
