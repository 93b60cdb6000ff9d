package direct

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linux/connbroker"
)

// decodeLegacy maps amd64's path calls without a directory argument to their *at forms.
func decodeLegacy(n *connbroker.Notif) (call, bool) {
	a := n.Args
	switch n.Nr {
	case unix.SYS_OPEN:
		return call{op: "open", dirfd: atFDCWD, path: a[0], flags: a[1], mode: a[2]}, true
	case unix.SYS_CREAT:
		return call{op: "open", dirfd: atFDCWD, path: a[0], flags: unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC, mode: a[1]}, true
	case unix.SYS_MKDIR:
		return call{op: "mkdir", dirfd: atFDCWD, path: a[0], mode: a[1]}, true
	case unix.SYS_MKNOD:
		return call{op: "mknod", dirfd: atFDCWD, path: a[0], mode: a[1], extra: a[2]}, true
	case unix.SYS_SYMLINK:
		return call{op: "symlink", path2: a[0], dirfd: atFDCWD, path: a[1]}, true
	case unix.SYS_LINK:
		return call{op: "link", dirfd2: atFDCWD, path2: a[0], dirfd: atFDCWD, path: a[1]}, true
	case unix.SYS_RENAME:
		return call{op: "rename", dirfd2: atFDCWD, path2: a[0], dirfd: atFDCWD, path: a[1]}, true
	case unix.SYS_RENAMEAT:
		return call{op: "rename", dirfd2: int32(a[0]), path2: a[1], dirfd: int32(a[2]), path: a[3]}, true
	case unix.SYS_UNLINK:
		return call{op: "unlink", dirfd: atFDCWD, path: a[0]}, true
	case unix.SYS_RMDIR:
		return call{op: "unlink", dirfd: atFDCWD, path: a[0], flags: unix.AT_REMOVEDIR}, true
	}
	return call{}, false
}
