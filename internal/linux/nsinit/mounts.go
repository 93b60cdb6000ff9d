//go:build linux

package nsinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linux/fusemask"
	"github.com/moat-sandbox/moat/internal/spec"
)

// staging is where the new root is attached while it is built; only this mount
// namespace sees it, and pivot_root makes it "/" at the end.
const staging = "/tmp"

// buildRoot builds the sandbox's mount view and makes it the root.
func buildRoot(s *spec.Spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return sysErr("make mounts private", "/", err)
	}
	// First, so that the supervisor starts serving the FUSE masks while the host
	// trees are cloned.
	fuse := mountFUSE(s)
	if fuse >= 0 {
		defer unix.Close(fuse)
	}
	// Clone every host tree the plan binds before anything is attached: the sources
	// are then the host's, whatever the staging point covers.
	sources := make([]int, len(s.Mounts))
	for i, m := range s.Mounts {
		sources[i] = -1
		if m.Source == "" || m.Op != spec.OpBindRW && m.Op != spec.OpBindRO {
			continue // only binds use a source; a clone left unattached costs its teardown
		}
		attr := uint64(unix.MOUNT_ATTR_NOSUID)
		if m.Op == spec.OpBindRO {
			attr |= unix.MOUNT_ATTR_RDONLY
		}
		fd, err := cloneTree(m.Source, attr)
		if err != nil {
			return fmt.Errorf("%s (%s): %w", m.Path, m.Reason, err)
		}
		sources[i] = fd
	}
	devs, err := cloneDevices()
	if err != nil {
		return err
	}
	term := cloneTerminal()
	root, err := cloneTree("/", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID)
	if err != nil {
		return fmt.Errorf("host root: %w", err)
	}
	if err := unix.MoveMount(root, "", unix.AT_FDCWD, staging, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return sysErr("attach new root at", staging, err)
	}
	unix.Close(root)

	empty, err := newEmptySource(s.Mounts)
	if err != nil {
		return err
	}
	defer unix.Close(empty)

	if err := buildDev(devs, term); err != nil {
		return err
	}
	listFUSERoot(fuse, s.Mounts) // by now the supervisor serves it
	for i, m := range s.Mounts {
		var err error
		if fuse >= 0 && fusemask.IsMask(m) {
			err = applyFUSEMask(m, i, fuse)
		} else {
			err = applyMount(s.Mounts, i, sources[i], empty)
		}
		if err != nil {
			return fmt.Errorf("%s %s (%s): %w", m.Op, m.Path, m.Reason, err)
		}
		if sources[i] >= 0 {
			unix.Close(sources[i])
		}
	}
	if err := buildProc(empty); err != nil {
		return err
	}
	if err := unix.Chdir(staging); err != nil {
		return sysErr("chdir", staging, err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return sysErr("pivot_root", staging, err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return sysErr("detach old root", "/", err)
	}
	return unix.Chdir("/")
}

// applyMount performs step i of the plan.
func applyMount(all []spec.Mount, i, source, empty int) error {
	m := all[i]
	target, err := openInRoot(m.Path)
	if err != nil {
		if m.Optional && errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	defer unix.Close(target)
	var fd int
	switch m.Op {
	case spec.OpBindRW, spec.OpBindRO:
		return attach(source, target)
	case spec.OpTmpfs, spec.OpMaskDir:
		mode := "0755"
		if m.Op == spec.OpTmpfs {
			mode = "1777"
		}
		if fd, err = newTmpfs(mode); err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := makeMountpoints(fd, all, i); err != nil {
			return err
		}
		if m.Op == spec.OpMaskDir {
			if err := setAttr(fd, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, false); err != nil {
				return err
			}
		}
		return attach(fd, target)
	case spec.OpFile, spec.OpMaskFile, spec.OpPlaceholder:
		// A clone of the sealed source: read-only, nosuid, nodev and noexec as it is.
		name := "file"
		switch m.Op {
		case spec.OpFile:
			name = contentName(i)
		case spec.OpPlaceholder:
			name = "dir"
		}
		if fd, err = unix.OpenTree(empty, name, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC); err != nil {
			return sysErr("clone", name, err)
		}
		defer unix.Close(fd)
		return attach(fd, target)
	}
	return fmt.Errorf("bug: unknown mount op %q", m.Op)
}

// makeMountpoints creates, inside the fresh tmpfs of step i, the directories and
// files that later steps mount on, for the steps whose nearest enclosing step is i.
func makeMountpoints(tmpfs int, all []spec.Mount, i int) error {
	for j := i + 1; j < len(all); j++ {
		if spec.Enclosing(all, j) != i {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(all[j].Path, all[i].Path), "/")
		parts := strings.Split(rel, "/")
		dir, err := unix.Dup(tmpfs)
		if err != nil {
			return err
		}
		for k, part := range parts {
			last := k == len(parts)-1
			if last && !all[j].WantsDir() {
				f, err := unix.Openat(dir, part, unix.O_CREAT|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o444)
				if err != nil {
					unix.Close(dir)
					return sysErr("create mountpoint", all[j].Path, err)
				}
				unix.Close(f)
				break
			}
			if err := unix.Mkdirat(dir, part, 0o755); err != nil && err != unix.EEXIST {
				unix.Close(dir)
				return sysErr("create mountpoint", all[j].Path, err)
			}
			next, err := unix.Openat(dir, part, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			unix.Close(dir)
			if err != nil {
				return sysErr("open mountpoint", all[j].Path, err)
			}
			dir = next
		}
		unix.Close(dir)
	}
	return nil
}

// openInRoot opens path of the new root as an O_PATH descriptor without following
// any symlink: the plan's paths are resolved already, so a link met here was planted
// after planning and must not redirect a mount.
func openInRoot(path string) (int, error) {
	full := filepath.Join(staging, path)
	fd, err := unix.Openat2(unix.AT_FDCWD, full, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return -1, sysErr("open mount target", path, err)
	}
	return fd, nil
}

// cloneTree returns a detached copy of the mount tree at path with attr set on it.
func cloneTree(path string, attr uint64) (int, error) {
	o, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return -1, sysErr("open", path, err)
	}
	defer unix.Close(o)
	fd, err := unix.OpenTree(o, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return -1, sysErr("open_tree", path, err)
	}
	if err := setAttr(fd, attr, true); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: %w", path, err)
	}
	return fd, nil
}

func setAttr(fd int, attr uint64, recursive bool) error {
	flags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	if err := unix.MountSetattr(fd, "", flags, &unix.MountAttr{Attr_set: attr}); err != nil {
		return os.NewSyscallError("mount_setattr", err)
	}
	return nil
}

func attach(fd, target int) error {
	if err := unix.MoveMount(fd, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return os.NewSyscallError("move_mount", err)
	}
	return nil
}

// newTmpfs returns a detached, empty tmpfs owned by the sandbox.
func newTmpfs(mode string) (int, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, os.NewSyscallError("fsopen tmpfs", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigSetString(fs, "mode", mode); err != nil {
		return -1, os.NewSyscallError("fsconfig mode", err)
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, os.NewSyscallError("fsconfig create", err)
	}
	fd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return -1, os.NewSyscallError("fsmount tmpfs", err)
	}
	return fd, nil
}

// sealedAttr are the flags of the sealed source and so of every mount cloned from it.
const sealedAttr = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC

// newEmptySource returns a sealed tmpfs that holds the sources of every mask and
// file step: an empty file "file", an empty directory "dir", and the content of each
// OpFile step (contentName). Sealed means sealedAttr, set once, here: a clone of a
// mount gets the flags of its source mount (the kernel's clone_mnt copies them), so
// each mask cloned from it is read-only, nosuid, nodev and noexec without a
// mount_setattr of its own, and nothing the sandbox sees through one can be written.
func newEmptySource(mounts []spec.Mount) (fd int, err error) {
	fd, err = newTmpfs("0755") // never attached itself: only clones of its entries are
	if err != nil {
		return -1, err
	}
	defer func() {
		if err != nil {
			unix.Close(fd)
		}
	}()
	f, err := unix.Openat(fd, "file", unix.O_CREAT|unix.O_RDONLY|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return -1, sysErr("create", "empty file", err)
	}
	unix.Close(f)
	if err := unix.Mkdirat(fd, "dir", 0o555); err != nil {
		return -1, sysErr("create", "empty dir", err)
	}
	for i, m := range mounts {
		if m.Op == spec.OpFile {
			if err := writeFileAt(fd, contentName(i), m.Content); err != nil {
				return -1, err
			}
		}
	}
	if err := setAttr(fd, sealedAttr, false); err != nil {
		return -1, fmt.Errorf("seal the empty source: %w", err)
	}
	return fd, nil
}

// contentName is the sealed source's file that holds the content of OpFile step i.
func contentName(i int) string { return "content-" + strconv.Itoa(i) }

// writeFileAt creates name in the directory dirfd with content, readable by all.
func writeFileAt(dirfd int, name, content string) error {
	f, err := unix.Openat(dirfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return sysErr("create", name, err)
	}
	defer unix.Close(f)
	for b := []byte(content); len(b) > 0; {
		n, err := unix.Write(f, b)
		if err != nil {
			return sysErr("write", name, err)
		}
		b = b[n:]
	}
	return nil
}

func sysErr(op, path string, err error) error {
	return fmt.Errorf("%s %s: %w", op, path, os.NewSyscallError(strings.Fields(op)[0], err))
}
