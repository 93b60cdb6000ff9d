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

func TestDirectSysnumsAMD64(t *testing.T) {
	want := map[string]int{
		"prlimit64": unix.SYS_PRLIMIT64, "setpriority": unix.SYS_SETPRIORITY, "ioprio_set": unix.SYS_IOPRIO_SET,
		"sched_setaffinity": unix.SYS_SCHED_SETAFFINITY, "sched_setscheduler": unix.SYS_SCHED_SETSCHEDULER,
		"sched_setparam": unix.SYS_SCHED_SETPARAM, "sched_setattr": unix.SYS_SCHED_SETATTR,
		"setxattr": unix.SYS_SETXATTR, "lsetxattr": unix.SYS_LSETXATTR, "fsetxattr": unix.SYS_FSETXATTR,
		"removexattr": unix.SYS_REMOVEXATTR, "lremovexattr": unix.SYS_LREMOVEXATTR, "fremovexattr": unix.SYS_FREMOVEXATTR,
		"setxattrat": unix.SYS_SETXATTRAT, "removexattrat": unix.SYS_REMOVEXATTRAT,
	}
	if len(want) != len(directSysnums["amd64"]) {
		t.Errorf("%d numbers checked, table has %d", len(want), len(directSysnums["amd64"]))
	}
	for name, n := range want {
		if got := directSysnums["amd64"][name]; got != n {
			t.Errorf("%s = %d, x/sys/unix says %d", name, got, n)
		}
	}
}
