//go:build linux

package seccomp

import (
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// setFilter calls seccomp(SECCOMP_SET_MODE_FILTER, flags, prog). With TSYNC the kernel reports
// a thread it could not synchronize by returning that thread's id instead of an error.
func setFilter(prog []bpf.RawInstruction, flags uintptr) (tid int, err error) {
	filter := make([]unix.SockFilter, len(prog))
	for i, ins := range prog {
		filter[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(&fprog)
	runtime.KeepAlive(filter)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
