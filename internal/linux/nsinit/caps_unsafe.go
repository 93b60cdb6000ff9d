//go:build linux

package nsinit

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// clearCapSets empties the permitted, effective and inheritable sets of every thread.
func clearCapSets() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	_, _, e := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	if e != 0 {
		return os.NewSyscallError("capset", e)
	}
	return nil
}
