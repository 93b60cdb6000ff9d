//go:build linux

package nsinit

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// devices are the host device nodes the sandbox's /dev holds. Nothing else of the
// host's /dev is there: not its disks, not the user's other terminals (/dev/pts/N,
// whose input could be read), not /dev/shm.
var devices = []struct{ name, reason string }{
	{"null", "discarding output"},
	{"zero", "zero bytes"},
	{"full", "tests of write errors"},
	{"random", "randomness"},
	{"urandom", "randomness"},
	{"tty", "the command's own controlling terminal, for interactive programs"},
}

// devLinks are symlinks every /dev has.
var devLinks = []struct{ name, target string }{
	{"fd", "/proc/self/fd"},
	{"stdin", "/proc/self/fd/0"},
	{"stdout", "/proc/self/fd/1"},
	{"stderr", "/proc/self/fd/2"},
	{"ptmx", "pts/ptmx"},
}

// cloneDevices takes detached binds of the host's device nodes, before the staging
// point is covered.
func cloneDevices() ([]int, error) {
	fds := make([]int, len(devices))
	for i, d := range devices {
		fd, err := cloneTree("/dev/"+d.name, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
		if err != nil {
			return nil, err
		}
		fds[i] = fd
	}
	return fds, nil
}

// cloneTerminal takes a detached bind of the host pty the command's stdio is
// (the first of fds 0, 1, 2 that is one), or returns -1. The sandbox's /dev/pts
// is a private instance, so the pty's own name, /dev/pts/N, isn't there; bound at
// /dev/console, as container runtimes do, it gives ttyname(3) (tty, tmux,
// GPG_TTY=$(tty)) a name to find, by scanning /dev for the device. It is the
// terminal the command already holds, and nothing else of the host's devpts.
func cloneTerminal() int {
	for fd := 0; fd <= 2; fd++ {
		var st unix.Stat_t
		// Unix98 pty slaves: majors 136-143.
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) < 136 || unix.Major(st.Rdev) > 143 {
			continue
		}
		path, err := readlinkFD(fd)
		if err != nil {
			continue
		}
		var at unix.Stat_t
		if unix.Stat(path, &at) != nil || at.Dev != st.Dev || at.Ino != st.Ino {
			continue // not reachable by its name here (another mount namespace's devpts)
		}
		t, err := cloneTree(path, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
		if err != nil {
			return -1 // a convenience, not a protection: without it ttyname fails inside
		}
		return t
	}
	return -1
}

func readlinkFD(fd int) (string, error) {
	buf := make([]byte, 256)
	n, err := unix.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd), buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// buildDev mounts a fresh /dev: a tmpfs with the device binds, a private devpts
// instance (so ptys opened inside work and the host's are unreachable), a private
// /dev/shm, and at /dev/console the command's terminal when term >= 0.
func buildDev(devs []int, term int) error {
	dev, err := newTmpfs("0755")
	if err != nil {
		return err
	}
	defer unix.Close(dev)
	for _, d := range devices {
		f, err := unix.Openat(dev, d.name, unix.O_CREAT|unix.O_RDONLY|unix.O_CLOEXEC, 0o666)
		if err != nil {
			return sysErr("create", "/dev/"+d.name, err)
		}
		unix.Close(f)
	}
	for _, dir := range []string{"pts", "shm"} {
		if err := unix.Mkdirat(dev, dir, 0o755); err != nil {
			return sysErr("create", "/dev/"+dir, err)
		}
	}
	for _, l := range devLinks {
		if err := unix.Symlinkat(l.target, dev, l.name); err != nil {
			return sysErr("create", "/dev/"+l.name, err)
		}
	}
	target, err := openInRoot("/dev")
	if err != nil {
		return err
	}
	defer unix.Close(target)
	if err := attach(dev, target); err != nil {
		return err
	}
	if term >= 0 {
		defer unix.Close(term)
		f, err := unix.Openat(dev, "console", unix.O_CREAT|unix.O_RDONLY|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return sysErr("create", "/dev/console", err)
		}
		unix.Close(f)
		t, err := openInRoot("/dev/console")
		if err != nil {
			return err
		}
		err = attach(term, t)
		unix.Close(t)
		if err != nil {
			return sysErr("bind", "/dev/console", err)
		}
	}
	for i, d := range devices {
		t, err := openInRoot("/dev/" + d.name)
		if err != nil {
			return err
		}
		err = attach(devs[i], t)
		unix.Close(t)
		unix.Close(devs[i])
		if err != nil {
			return sysErr("bind", "/dev/"+d.name, err)
		}
	}
	if err := mountFresh("devpts", "/dev/pts", map[string]string{"ptmxmode": "0666", "mode": "0620"}); err != nil {
		return err
	}
	shm, err := newTmpfs("1777")
	if err != nil {
		return err
	}
	defer unix.Close(shm)
	t, err := openInRoot("/dev/shm")
	if err != nil {
		return err
	}
	defer unix.Close(t)
	return attach(shm, t)
}

// mountFresh mounts a new instance of filesystem fstype at path of the new root.
func mountFresh(fstype, path string, opts map[string]string) error {
	fs, err := unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC)
	if err != nil {
		return sysErr("fsopen", fstype, err)
	}
	defer unix.Close(fs)
	for k, v := range opts {
		if err := unix.FsconfigSetString(fs, k, v); err != nil {
			return sysErr("fsconfig "+k, fstype, err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return sysErr("fsconfig create", fstype, err)
	}
	fd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return sysErr("fsmount", fstype, err)
	}
	defer unix.Close(fd)
	t, err := openInRoot(path)
	if err != nil {
		return err
	}
	defer unix.Close(t)
	return attach(fd, t)
}
