//go:build linux

package nsinit

import (
	"errors"

	"golang.org/x/sys/unix"
)

// procReadOnly are /proc paths made read-only. The sandbox's uid may be the host's
// root (when root runs moat), and sysctl and trigger files check only the uid.
var procReadOnly = []struct{ path, reason string }{
	{"/proc/sys", "sysctls: core_pattern and friends run code as the host's root"},
	{"/proc/sysrq-trigger", "reboots or crashes the host"},
	{"/proc/irq", "interrupt affinity of the host"},
	{"/proc/bus", "PCI and USB device control"},
	{"/proc/fs", "filesystem tunables"},
}

// procMasked are /proc files covered with an empty file: they leak host memory or
// kernel state and no program needs them.
var procMasked = []struct{ path, reason string }{
	{"/proc/kcore", "the host's physical memory image"},
	{"/proc/keys", "the kernel's keyrings"},
	{"/proc/timer_list", "host timers: a side channel"},
	{"/proc/sched_debug", "host scheduler state"},
}

// buildProc mounts a fresh /proc for the sandbox's pid namespace: it shows the
// sandbox's processes only, so host processes can't be seen, signalled or read.
func buildProc(empty int) error {
	if err := mountFresh("proc", "/proc", map[string]string{}); err != nil {
		return err
	}
	for _, p := range procReadOnly {
		fd, err := cloneTreeIn(p.path, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return err
		}
		t, err := openInRoot(p.path)
		if err == nil {
			err = attach(fd, t)
			unix.Close(t)
		}
		unix.Close(fd)
		if err != nil {
			return sysErr("protect", p.path, err)
		}
	}
	for _, p := range procMasked {
		t, err := openInRoot(p.path)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return err
		}
		// A clone of the sealed source (newEmptySource): read-only as it is.
		fd, err := unix.OpenTree(empty, "file", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err == nil {
			err = attach(fd, t)
			unix.Close(fd)
		}
		unix.Close(t)
		if err != nil {
			return sysErr("mask", p.path, err)
		}
	}
	return nil
}

// cloneTreeIn is cloneTree for a path of the new root.
func cloneTreeIn(path string, attr uint64) (int, error) {
	o, err := openInRoot(path)
	if err != nil {
		return -1, err
	}
	defer unix.Close(o)
	fd, err := unix.OpenTree(o, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return -1, sysErr("open_tree", path, err)
	}
	if err := setAttr(fd, attr, true); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}
