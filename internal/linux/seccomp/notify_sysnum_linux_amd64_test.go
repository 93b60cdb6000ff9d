package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestNotifySysnumsAMD64(t *testing.T) {
	checkNotifySysnums(t, "amd64", map[string]int{
		"socket": unix.SYS_SOCKET, "connect": unix.SYS_CONNECT, "sendto": unix.SYS_SENDTO, "sendmsg": unix.SYS_SENDMSG,
		"listen": unix.SYS_LISTEN, "socketpair": unix.SYS_SOCKETPAIR, "setsockopt": unix.SYS_SETSOCKOPT, "sendmmsg": unix.SYS_SENDMMSG,
	})
}

func TestFSSysnumsAMD64(t *testing.T) {
	checkFSSysnums(t, "amd64", map[string]int{
		"open": unix.SYS_OPEN, "creat": unix.SYS_CREAT, "openat": unix.SYS_OPENAT, "openat2": unix.SYS_OPENAT2,
		"mkdir": unix.SYS_MKDIR, "mkdirat": unix.SYS_MKDIRAT, "mknod": unix.SYS_MKNOD, "mknodat": unix.SYS_MKNODAT,
		"symlink": unix.SYS_SYMLINK, "symlinkat": unix.SYS_SYMLINKAT, "link": unix.SYS_LINK, "linkat": unix.SYS_LINKAT,
		"rename": unix.SYS_RENAME, "renameat": unix.SYS_RENAMEAT, "renameat2": unix.SYS_RENAMEAT2,
		"unlink": unix.SYS_UNLINK, "unlinkat": unix.SYS_UNLINKAT, "rmdir": unix.SYS_RMDIR, "truncate": unix.SYS_TRUNCATE,
	})
}
