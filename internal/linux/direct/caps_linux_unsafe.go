//go:build linux

package direct

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// dropAllThreadsCapabilities empties the effective, permitted and inheritable sets of
// every thread of the process (capset is per thread), if it has any capability. psx (as
// go-landlock uses it) makes the call on every thread with or without cgo.
func dropAllThreadsCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return os.NewSyscallError("capget", err)
	}
	if data[0].Permitted|data[1].Permitted|data[0].Effective|data[1].Effective == 0 {
		return nil
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_CAP_AMBIENT_CLEAR_ALL)", err)
	}
	data = [2]unix.CapUserData{}
	_, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	if e != 0 {
		return os.NewSyscallError("capset (all threads)", syscall.Errno(e))
	}
	return nil
}
