//go:build linux

package probe

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readOwnMemory reads a few bytes of this process's memory with process_vm_readv, as
// the direct mode's broker reads a sandboxed process's connect address.
func readOwnMemory() error {
	src, dst := []byte("moat"), make([]byte, 4)
	n, err := unix.ProcessVMReadv(os.Getpid(), []unix.Iovec{{Base: &dst[0], Len: uint64(len(dst))}},
		[]unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: len(src)}}, 0)
	if err != nil {
		return err
	}
	if n != len(src) || string(dst) != string(src) {
		return errors.New("short or wrong read")
	}
	return nil
}
