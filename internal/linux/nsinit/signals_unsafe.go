//go:build linux

package nsinit

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// defaultSignals sets each of sigs to SIG_DFL in the kernel, under the Go runtime,
// which installed a handler for each as it started and still thinks it has.
//
// Init is pid 1 of its pid namespace, and the kernel drops every signal but SIGKILL
// and SIGSTOP (the latter two only from outside the namespace) that such an init
// leaves at SIG_DFL: nothing is delivered, so the runtime's handler, which would end
// init for SIGINT or SIGTERM, never runs. The command inherits SIG_DFL, as it would
// a handled signal. os/signal.Notify gets init the same immunity but takes a round
// trip to a thread of its own per signal, which is most of a millisecond.
func defaultSignals(sigs ...unix.Signal) error {
	// A zeroed struct sigaction is SIG_DFL with no flags and an empty mask, whatever
	// the order of its four fields on the architecture.
	var act [4]uint64
	for _, sig := range sigs {
		_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
		if errno != 0 {
			return os.NewSyscallError("rt_sigaction", errno)
		}
	}
	return nil
}
