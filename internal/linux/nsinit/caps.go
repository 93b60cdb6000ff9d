//go:build linux

package nsinit

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// dropCapabilities leaves every thread of init, and so the command, with no
// capabilities at all: empty bounding, ambient, inheritable, permitted and
// effective sets. The command keeps its real uid and gid; setuid binaries are inert
// (nosuid mounts and no_new_privs).
func dropCapabilities() error {
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0); e != 0 {
			return os.NewSyscallError("prctl(PR_CAPBSET_DROP)", e)
		}
	}
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); e != 0 {
		return os.NewSyscallError("prctl(PR_CAP_AMBIENT_CLEAR_ALL)", e)
	}
	return clearCapSets()
}
