//go:build linux

package nsinit

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dropCapabilities leaves the calling thread with no capabilities at all: empty
// bounding, ambient, inheritable, permitted and effective sets. The command is
// forked from this thread (run locks it), so it starts with none either, keeping
// its real uid and gid; setuid binaries are inert (nosuid mounts, no_new_privs).
// Init's other threads only run the Go runtime; Landlock and seccomp cover them.
func dropCapabilities() error {
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return os.NewSyscallError("prctl(PR_CAPBSET_DROP)", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_CAP_AMBIENT_CLEAR_ALL)", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return os.NewSyscallError("capset", err)
	}
	return nil
}
