package seccomp

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Install sets no_new_privs and loads prog as a seccomp filter on every thread of the calling
// process (SECCOMP_FILTER_FLAG_TSYNC), so threads that already exist, those made later and
// every child the process forks are all filtered. It never falls back to filtering only the
// calling thread: if any thread can't be synchronized, no filter is loaded and it fails.
// Filters can't be removed; call it only in the process that will run the sandboxed command.
func Install(prog []bpf.RawInstruction) error {
	if len(prog) == 0 || len(prog) > maxInsns {
		return fmt.Errorf("install seccomp filter: program has %d instructions, want 1 to %d", len(prog), maxInsns)
	}
	// no_new_privs is per thread until TSYNC copies it to the others: stay on one thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("install seccomp filter: %w", os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err))
	}
	tid, err := setFilter(prog, unix.SECCOMP_FILTER_FLAG_TSYNC)
	if err != nil {
		return fmt.Errorf("install seccomp filter: %w", os.NewSyscallError("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC)", err))
	}
	if tid != 0 {
		return fmt.Errorf("install seccomp filter: thread %d can't take the filter (it has a seccomp filter of its own); nothing was loaded", tid)
	}
	return nil
}
