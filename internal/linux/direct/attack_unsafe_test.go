//go:build linux

package direct_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// attackEnv makes the test binary, run as the sandboxed command, attack instead of test.
const attackEnv = "MOAT_DIRECT_ATTACK"

func attack(mode string) int {
	switch mode {
	case "races":
		return races()
	}
	fmt.Println("unknown attack", mode)
	return 2
}

// flipper keeps rewriting buf between two NUL-terminated paths of the same length.
type flipper struct {
	buf  []byte
	a, b []byte
	stop atomic.Bool
	done chan struct{}
}

func flip(a, b string) *flipper {
	n := max(len(a), len(b)) + 1
	f := &flipper{buf: make([]byte, n), a: make([]byte, n), b: make([]byte, n), done: make(chan struct{})}
	copy(f.a, a)
	copy(f.b, b)
	copy(f.buf, f.a)
	go func() {
		runtime.LockOSThread()
		for !f.stop.Load() {
			copy(f.buf, f.b)
			copy(f.buf, f.a)
		}
		close(f.done)
	}()
	return f
}

func (f *flipper) end() { f.stop.Store(true); <-f.done }

func (f *flipper) ptr() uintptr { return uintptr(unsafe.Pointer(&f.buf[0])) }

func races() int {
	w := os.Getenv("W")
	g := filepath.Join(w, ".git")
	counts := map[string]int{}
	// open(O_CREAT) of a new file in the zone / of a new hook.
	f := flip(filepath.Join(w, "race-aaaaaaaaaaaaaaaaaaaaaaaaa"), filepath.Join(g, "hooks", "pre-commit"))
	created := 0
	for range 3000 {
		fd, _, e := unix.Syscall6(unix.SYS_OPENAT, atFDCWD(), f.ptr(), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o755, 0, 0)
		if e == 0 {
			created++
			unix.Write(int(fd), []byte("#!/bin/sh\necho pwned\n"))
			unix.Close(int(fd))
			unix.Unlink(filepath.Join(w, "race-aaaaaaaaaaaaaaaaaaaaaaaaa"))
		} else {
			counts["open "+unix.ErrnoName(e)]++
		}
	}
	f.end()
	runtime.KeepAlive(f)
	// The same through a Landlock-granted subdirectory, which the broker leaves to the kernel.
	f = flip(filepath.Join(w, "src", "race-bbbbbbbbbbbbbbbbbbbbbbbb"), filepath.Join(g, "hooks", "post-checkout"))
	for range 3000 {
		fd, _, e := unix.Syscall6(unix.SYS_OPENAT, atFDCWD(), f.ptr(), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o755, 0, 0)
		if e == 0 {
			counts["src created"]++
			unix.Close(int(fd))
		} else {
			counts["src open "+unix.ErrnoName(e)]++
		}
	}
	f.end()
	// rename of a scratch file / of the hooks directory and the config.
	f = flip(filepath.Join(w, "scratch-ccccc"), filepath.Join(g, "hooks"))
	for range 2000 {
		os.WriteFile(filepath.Join(w, "scratch-ccccc"), nil, 0o644)
		dst := []byte(filepath.Join(w, "moved-hooks") + "\x00")
		_, _, e := unix.Syscall6(unix.SYS_RENAMEAT2, atFDCWD(), f.ptr(), atFDCWD(), uintptr(unsafe.Pointer(&dst[0])), 0, 0)
		if e == 0 {
			counts["renamed"]++
			os.Remove(filepath.Join(w, "moved-hooks"))
		} else {
			counts["rename "+unix.ErrnoName(e)]++
		}
		runtime.KeepAlive(dst)
	}
	f.end()
	f = flip(filepath.Join(g, "scratch-dd"), filepath.Join(g, "config"))
	for range 2000 {
		os.WriteFile(filepath.Join(g, "scratch-dd"), nil, 0o644)
		dst := []byte(filepath.Join(g, "config.moved") + "\x00")
		_, _, e := unix.Syscall6(unix.SYS_RENAMEAT2, atFDCWD(), f.ptr(), atFDCWD(), uintptr(unsafe.Pointer(&dst[0])), 0, 0)
		if e == 0 {
			counts["renamed config-or-scratch"]++
			os.Remove(filepath.Join(g, "config.moved"))
		}
		runtime.KeepAlive(dst)
	}
	f.end()
	fmt.Printf("created=%d %v\n", created, counts)
	return 0
}

func atFDCWD() uintptr { fd := unix.AT_FDCWD; return uintptr(fd) }
