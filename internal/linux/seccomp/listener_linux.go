package seccomp

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// InstallListener sets no_new_privs and loads prog on every thread of the calling process,
// as [Install] does, and returns the filter's notification listener (close-on-exec): the
// descriptor on which calls the filter sends to the supervisor ([Notify] rules) arrive. The
// caller hands it to the supervisor and closes its own copy before running anything
// untrusted: whoever holds it answers for the kernel.
//
// Once the supervisor has received a notification, the calling thread waits for the answer
// without being interrupted by signals other than fatal ones (WAIT_KILLABLE_RECV, Linux
// 5.19), so a program's own signals (Go's preemption signal, SIGCHLD) never make a call be
// decided twice. A process's filters can have only one listener: it fails with EBUSY if an
// earlier filter (another sandbox's) already has one.
func InstallListener(prog []bpf.RawInstruction) (listener *os.File, err error) {
	if len(prog) == 0 || len(prog) > maxInsns {
		return nil, fmt.Errorf("install seccomp listener filter: program has %d instructions, want 1 to %d", len(prog), maxInsns)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("install seccomp listener filter: %w", os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err))
	}
	// With NEW_LISTENER the return value is the listener, so a thread that can't be
	// synchronized is reported as ESRCH (TSYNC_ESRCH) rather than by its id.
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH |
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	fd, err := setFilter(prog, flags)
	if err != nil {
		return nil, fmt.Errorf("install seccomp listener filter: %w", os.NewSyscallError("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC|NEW_LISTENER|WAIT_KILLABLE_RECV)", err))
	}
	return os.NewFile(uintptr(fd), "seccomp-listener"), nil
}
