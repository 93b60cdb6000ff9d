package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestNotifySysnumsARM64(t *testing.T) {
	checkNotifySysnums(t, "arm64", map[string]int{
		"socket": unix.SYS_SOCKET, "connect": unix.SYS_CONNECT, "sendto": unix.SYS_SENDTO, "sendmsg": unix.SYS_SENDMSG,
		"listen": unix.SYS_LISTEN, "socketpair": unix.SYS_SOCKETPAIR, "setsockopt": unix.SYS_SETSOCKOPT, "sendmmsg": unix.SYS_SENDMMSG,
	})
}

func TestFSSysnumsARM64(t *testing.T) {
	checkFSSysnums(t, "arm64", map[string]int{
		"open": absent, "creat": absent, "openat": unix.SYS_OPENAT, "openat2": unix.SYS_OPENAT2,
		"mkdir": absent, "mkdirat": unix.SYS_MKDIRAT, "mknod": absent, "mknodat": unix.SYS_MKNODAT,
		"symlink": absent, "symlinkat": unix.SYS_SYMLINKAT, "link": absent, "linkat": unix.SYS_LINKAT,
		"rename": absent, "renameat": absent, "renameat2": unix.SYS_RENAMEAT2,
		"unlink": absent, "unlinkat": unix.SYS_UNLINKAT, "rmdir": absent, "truncate": unix.SYS_TRUNCATE,
	})
}
