//go:build linux

package nsinit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linux/fusemask"
	"github.com/moat-sandbox/moat/internal/spec"
)

// mountFUSE mounts the FUSE filesystem whose nodes cover the mask steps (spec.FUSE),
// detached, and passes its device to the supervisor, which serves it from outside:
// the command never holds the device, only the nodes' mounts. It returns the mount,
// or -1 when the masks are to be plain ones, having told the supervisor why. Either
// way the hidden paths are covered: FUSE only adds the reporting of accesses.
func mountFUSE(s *spec.Spec) int {
	if s.FUSE == "" {
		return -1
	}
	mnt, dev, err := newFUSE(s.FUSE)
	msg, rights := spec.FUSEMessage, []byte(nil)
	if err != nil {
		msg = spec.NoFUSEMessage + err.Error()
		if fix := fusemask.Fix(err); fix != "" {
			msg += "; fix: " + strings.ReplaceAll(fix, "\n", "; ")
		}
	} else {
		// The mount too: the supervisor's copy keeps the filesystem after init
		// exits, and its teardown out of init's exit.
		rights = unix.UnixRights(dev, mnt)
	}
	if len(msg) > 500 {
		msg = msg[:500]
	}
	serr := unix.Sendmsg(netFD, []byte(msg), rights, nil, 0)
	if dev >= 0 {
		// The supervisor's copy (in flight, or received) keeps the connection.
		unix.Close(dev)
	}
	if s.Net == nil {
		unix.Close(netFD)
	}
	if err != nil || serr != nil {
		// No server: a lookup on the mount would fail, or wait for nobody.
		if mnt >= 0 {
			unix.Close(mnt)
		}
		return -1
	}
	return mnt
}

// listFUSERoot reads the FUSE root's listing, whose entries (READDIRPLUS) give the
// kernel every mask node: the mask steps then find them without asking the
// supervisor once each. It stops when it has seen them all, before the listing's
// end, which would cost one more request; if it fails, the steps look them up.
func listFUSERoot(mnt int, mounts []spec.Mount) {
	if mnt < 0 {
		return
	}
	want := 2 // "." and ".."
	for _, m := range mounts {
		if fusemask.IsMask(m) {
			want++
		}
	}
	fd, err := unix.Openat(mnt, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	buf := make([]byte, 16<<10)
	for seen := 0; seen < want; {
		n, err := unix.Getdents(fd, buf)
		if err != nil || n <= 0 {
			return
		}
		for off := 0; off+18 <= n; seen++ {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:])) // struct linux_dirent64's d_reclen
			if reclen == 0 {
				return
			}
			off += reclen
		}
	}
}

// newFUSE opens the FUSE device at path and mounts a read-only FUSE filesystem
// served through it, owned by the sandbox's user, whose modes the kernel checks
// (default_permissions). The kernel asks the server for nothing before the first
// lookup, so this doesn't wait for the supervisor.
func newFUSE(path string) (mnt, dev int, err error) {
	dev, err = fusemask.OpenDevice(path)
	if err != nil {
		return -1, -1, err
	}
	fs, err := unix.Fsopen("fuse", unix.FSOPEN_CLOEXEC)
	if err != nil {
		unix.Close(dev)
		return -1, -1, fmt.Errorf("mount FUSE: %w", os.NewSyscallError("fsopen", err))
	}
	defer unix.Close(fs)
	for _, o := range [][2]string{
		{"fd", strconv.Itoa(dev)},
		{"rootmode", "40000"},
		{"user_id", strconv.Itoa(unix.Getuid())},
		{"group_id", strconv.Itoa(unix.Getgid())},
	} {
		if err := unix.FsconfigSetString(fs, o[0], o[1]); err != nil {
			unix.Close(dev)
			return -1, -1, fmt.Errorf("mount FUSE: %s: %w", o[0], os.NewSyscallError("fsconfig", err))
		}
	}
	if err := unix.FsconfigSetFlag(fs, "default_permissions"); err != nil {
		unix.Close(dev)
		return -1, -1, fmt.Errorf("mount FUSE: default_permissions: %w", os.NewSyscallError("fsconfig", err))
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		unix.Close(dev)
		return -1, -1, fmt.Errorf("mount FUSE: %w", os.NewSyscallError("fsconfig create", err))
	}
	mnt, err = unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, sealedAttr) // and so every node's clone (fuseNode)
	if err != nil {
		unix.Close(dev)
		return -1, -1, fmt.Errorf("mount FUSE: %w", os.NewSyscallError("fsmount", err))
	}
	return mnt, dev, nil
}

// fuseNode returns a detached, read-only clone of the FUSE node that covers mask
// step i; the supervisor answers the lookup. The clone keeps the flags newFUSE
// mounted the filesystem with (sealedAttr), as a clone keeps its source mount's.
func fuseNode(mnt, i int) (int, error) {
	name := strconv.Itoa(i)
	fd, err := unix.OpenTree(mnt, name, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return -1, sysErr("clone FUSE mask", name, err)
	}
	return fd, nil
}

// applyFUSEMask covers mask step i with its FUSE node. Unlike the plain masks, it
// makes no mount points for the later steps inside a hidden directory: the node's
// directory has them (fusemask.NewTree).
func applyFUSEMask(m spec.Mount, i, mnt int) error {
	target, err := openInRoot(m.Path)
	if err != nil {
		if m.Optional && errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	defer unix.Close(target)
	fd, err := fuseNode(mnt, i)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return attach(fd, target)
}
