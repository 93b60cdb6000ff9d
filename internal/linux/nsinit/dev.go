//go:build linux

package nsinit

import (
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

// buildDev mounts a fresh /dev: a tmpfs with the device binds, a private devpts
// instance (so ptys opened inside work and the host's are unreachable) and a
// private /dev/shm.
func buildDev(devs []int) error {
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
