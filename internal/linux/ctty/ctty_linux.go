// Package ctty runs a sandbox's command as the foreground job of the pty the
// supervisor made for it (the controlling terminal of the stage that starts the
// command), as a shell runs a job.
package ctty

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Open returns a descriptor of the calling process's controlling terminal, or
// -1 when it has none. One of the standard streams when it is that terminal;
// else /dev/tty, opened close-on-exec.
func Open() int {
	for fd := 0; fd <= 2; fd++ {
		// Only the controlling terminal answers TIOCGPGRP.
		if _, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil {
			return fd
		}
	}
	fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

// JobAttr starts a child, when tty (from Open) is a terminal, as its foreground
// job in a process group of its own. The stage that starts the command leads the
// session (the supervisor gave it the pty with setsid): a group of the command in
// the stage's own group would be orphaned (no member has a parent in another
// group of the session), and the kernel discards the stop signals the terminal's
// Ctrl-Z sends an orphaned group. nil when tty < 0.
func JobAttr(tty int) *syscall.SysProcAttr {
	if tty < 0 {
		return nil
	}
	return &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: tty}
}
