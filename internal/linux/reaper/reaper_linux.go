// Package reaper makes a process the reaper of everything it starts (a child subreaper)
// and, when asked, kills every process below it, including ones that left its session with
// setsid or were double-forked, without ever signalling a process that isn't its own child.
//
// It is the direct mode's replacement for a pid namespace's "init exits, everything dies":
// orphans re-parent to the nearest subreaper, so every descendant is either a child of the
// reaper or below one, and a child's pid can't be reused until the reaper waits for it.
// Only the goroutine that calls [Wait] and [KillAll] may wait for children: a wait
// elsewhere (os.Process.Wait, exec.Cmd.Wait) could free a pid that KillAll then signals.
package reaper

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Become makes the calling process a child subreaper (PR_SET_CHILD_SUBREAPER): a
// descendant whose parent exits is re-parented to it rather than to the host's init.
// Call it before starting any child; it lasts for the life of the process.
func Become() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become child subreaper: %w", os.NewSyscallError("prctl(PR_SET_CHILD_SUBREAPER)", err))
	}
	return nil
}

// Wait waits for the child pid to end and returns its status, reaping every other child
// (re-parented orphans) that ends meanwhile.
func Wait(pid int) (unix.WaitStatus, error) { return WaitJob(pid, nil) }

// WaitJob is Wait that, when stopped is not nil, calls it each time pid is stopped
// by a signal.
func WaitJob(pid int, stopped func(unix.Signal)) (unix.WaitStatus, error) {
	flags := 0
	if stopped != nil {
		flags = unix.WUNTRACED
	}
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, flags, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return 0, fmt.Errorf("wait for process %d: %w", pid, os.NewSyscallError("wait4", err))
		case got == pid && (ws.Exited() || ws.Signaled()):
			return ws, nil
		case got == pid && ws.Stopped() && stopped != nil:
			stopped(ws.StopSignal())
		}
	}
}

// KillAll sends SIGKILL to every child and waits for it, round after round, until the
// process has no child left (wait4 says ECHILD). A killed child's own children are
// re-parented to this process before the child can be reaped, so each round finds the next
// generation; a killed process can't fork any more, so a fork bomb only has the processes
// that already exist. It returns how many processes it signalled.
//
// Only this process's children are signalled, and only before they are reaped, so a pid is
// never one the kernel has reused for someone else.
func KillAll() (killed int, err error) {
	signalled := map[int]bool{}
	idle := 0
	for {
		kids, err := Children()
		if err != nil {
			return killed, err
		}
		fresh := 0
		for _, pid := range kids {
			if signalled[pid] {
				continue
			}
			// ESRCH can't happen for an unreaped child; a zombie takes the signal silently.
			_ = unix.Kill(pid, unix.SIGKILL)
			signalled[pid] = true
			killed++
			fresh++
		}
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.ECHILD):
			return killed, nil
		case errors.Is(err, unix.EINTR):
		case err != nil:
			return killed, fmt.Errorf("kill descendants: %w", os.NewSyscallError("wait4", err))
		case pid > 0:
			delete(signalled, pid) // reaped: the pid may now be reused
			idle = 0
		case fresh == 0:
			// Every child has been signalled and none has ended yet: they are dying
			// (SIGKILL can take a moment for a process in an uninterruptible wait).
			idle++
			time.Sleep(time.Duration(min(idle, 100)) * 100 * time.Microsecond)
		}
	}
}

// Children lists the calling process's children (zombies included), from
// /proc/self/task/*/children, or from every process's /proc/PID/stat where the kernel
// lacks that file (CONFIG_PROC_CHILDREN=n).
func Children() ([]int, error) {
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil || len(tasks) == 0 {
		return childrenByScan()
	}
	var out []int
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // the thread ended; its children moved to another thread
			}
			return nil, fmt.Errorf("list children: %w", err)
		}
		for _, field := range bytes.Fields(b) {
			pid, err := strconv.Atoi(string(field))
			if err != nil {
				return nil, fmt.Errorf("list children: %s: bad pid %q", f, field)
			}
			out = append(out, pid)
		}
	}
	return out, nil
}

// childrenByScan finds the processes whose parent is this one by reading every
// /proc/PID/stat. A pid it returns is an unreaped child, so it stays valid until waited for.
func childrenByScan() ([]int, error) {
	self := os.Getpid()
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("list children: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list children: %w", err)
	}
	var out []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok && ppid == self {
			out = append(out, pid)
		}
	}
	return out, nil
}

// parentOf reads the parent pid from /proc/PID/stat ("pid (comm) state ppid ..."; comm may
// hold spaces and parentheses, so fields are counted after the last ')').
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	s := bufio.NewScanner(bytes.NewReader(b[i+1:]))
	s.Split(bufio.ScanWords)
	for n := 0; s.Scan(); n++ {
		if n == 1 {
			ppid, err := strconv.Atoi(s.Text())
			return ppid, err == nil
		}
	}
	return 0, false
}
