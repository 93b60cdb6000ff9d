package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

func checkNotifySysnums(t *testing.T, arch string, want map[string]int) {
	t.Helper()
	if len(want) != len(notifySysnums[arch]) {
		t.Errorf("%s: %d numbers checked, table has %d", arch, len(want), len(notifySysnums[arch]))
	}
	for name, n := range want {
		if got := notifySysnums[arch][name]; got != n {
			t.Errorf("%s: %s = %d, x/sys/unix says %d", arch, name, got, n)
		}
	}
}

func TestNotifyConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"SOCK_STREAM", nSockStream, unix.SOCK_STREAM},
		{"SOCK_DGRAM", nSockDgram, unix.SOCK_DGRAM},
		{"IPPROTO_TCP", nIPProtoTCP, unix.IPPROTO_TCP},
		{"SOL_TCP", nIPProtoTCP, unix.SOL_TCP},
		{"NETLINK_ROUTE", nNetlinkRoute, unix.NETLINK_ROUTE},
		{"MSG_FASTOPEN", nMsgFastopen, unix.MSG_FASTOPEN},
		{"TCP_FASTOPEN_CONNECT", nTCPFastopenCo, unix.TCP_FASTOPEN_CONNECT},
		{"EACCES", uint64(EACCES), uint64(unix.EACCES)},
		{"SECCOMP_RET_USER_NOTIF", retUserNotif, unix.SECCOMP_RET_USER_NOTIF},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, x/sys/unix says %#x", c.name, c.got, c.want)
		}
	}
}

func checkFSSysnums(t *testing.T, arch string, want map[string]int) {
	t.Helper()
	if len(want) != len(fsSysnums[arch]) {
		t.Errorf("%s: %d numbers checked, table has %d", arch, len(want), len(fsSysnums[arch]))
	}
	for name, n := range want {
		if got := fsSysnums[arch][name]; got != n {
			t.Errorf("%s: %s = %d, x/sys/unix says %d", arch, name, got, n)
		}
	}
}

func TestFSConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"O_WRONLY", oWronly, unix.O_WRONLY},
		{"O_RDWR", oRdwr, unix.O_RDWR},
		{"O_CREAT", oCreat, unix.O_CREAT},
		{"O_TRUNC", oTrunc, unix.O_TRUNC},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, x/sys/unix says %#x", c.name, c.got, c.want)
		}
	}
}
