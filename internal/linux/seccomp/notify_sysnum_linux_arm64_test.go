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

func TestDirectSysnumsARM64(t *testing.T) {
	want := map[string]int{
		"prlimit64": unix.SYS_PRLIMIT64, "setpriority": unix.SYS_SETPRIORITY, "ioprio_set": unix.SYS_IOPRIO_SET,
		"sched_setaffinity": unix.SYS_SCHED_SETAFFINITY, "sched_setscheduler": unix.SYS_SCHED_SETSCHEDULER,
		"sched_setparam": unix.SYS_SCHED_SETPARAM, "sched_setattr": unix.SYS_SCHED_SETATTR,
		"setxattr": unix.SYS_SETXATTR, "lsetxattr": unix.SYS_LSETXATTR, "fsetxattr": unix.SYS_FSETXATTR,
		"removexattr": unix.SYS_REMOVEXATTR, "lremovexattr": unix.SYS_LREMOVEXATTR, "fremovexattr": unix.SYS_FREMOVEXATTR,
		"setxattrat": unix.SYS_SETXATTRAT, "removexattrat": unix.SYS_REMOVEXATTRAT,
	}
	if len(want) != len(directSysnums["arm64"]) {
		t.Errorf("%d numbers checked, table has %d", len(want), len(directSysnums["arm64"]))
	}
	for name, n := range want {
		if got := directSysnums["arm64"][name]; got != n {
			t.Errorf("%s = %d, x/sys/unix says %d", name, got, n)
		}
	}
}
