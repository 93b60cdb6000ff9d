//go:build linux

package fusemask

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenDevice opens the FUSE device at path (Device, or another path in tests) for
// reading and writing, close-on-exec. Its error names the device's mode when
// permission is what is lacking.
func OpenDevice(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err == nil {
		return fd, nil
	}
	err = &os.PathError{Op: "open", Path: path, Err: err}
	var st unix.Stat_t
	if errors.Is(err, unix.EACCES) && unix.Stat(path, &st) == nil {
		err = fmt.Errorf("%w (mode %04o)", err, st.Mode&0o7777)
	}
	return -1, err
}

// Fix says how to make the FUSE device usable after OpenDevice failed with err, in
// lines.
func Fix(err error) string {
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return "as root: chmod 0666 /dev/fuse\n" +
			"to keep it: install fuse3, whose udev rule makes it 0666 (most desktop distributions have it)\n" +
			"or add the rule KERNEL==\"fuse\", MODE=\"0666\" to /etc/udev/rules.d/99-fuse.rules"
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENODEV), errors.Is(err, unix.ENXIO):
		return "as root: modprobe fuse (a kernel built with CONFIG_FUSE_FS), then check that /dev/fuse exists with mode 0666"
	}
	return ""
}

// Check reports whether this process can open the FUSE device, which moat's init
// needs to report reads of hidden paths; when it can't, err says why.
func Check() error {
	fd, err := OpenDevice(Device)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}
