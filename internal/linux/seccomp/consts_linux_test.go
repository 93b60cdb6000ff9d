package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestConstants checks the constants the generator spells out against x/sys/unix.
func TestConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"AF_UNIX", afUnix, unix.AF_UNIX},
		{"AF_INET", afInet, unix.AF_INET},
		{"AF_INET6", afInet6, unix.AF_INET6},
		{"AF_NETLINK", afNetlink, unix.AF_NETLINK},
		{"AF_PACKET", afPacket, unix.AF_PACKET},
		{"AF_VSOCK", afVsock, unix.AF_VSOCK},
		{"AF_ALG", afAlg, unix.AF_ALG},
		{"AF_KEY", afKey, unix.AF_KEY},
		{"AF_BLUETOOTH", afBluetooth, unix.AF_BLUETOOTH},
		{"SOCK_RAW", sockRaw, unix.SOCK_RAW},
		{"SOCK_PACKET", sockPacket, unix.SOCK_PACKET},
		{"SOCK_STREAM", sockStream, unix.SOCK_STREAM},
		{"SOCK_DGRAM", sockDgram, unix.SOCK_DGRAM},
		{"SOCK_CLOEXEC", sockCloexec, unix.SOCK_CLOEXEC},
		{"IPPROTO_MPTCP", ipprotoMPTCP, unix.IPPROTO_MPTCP},
		{"IPPROTO_ICMP", ipprotoICMP, unix.IPPROTO_ICMP},
		{"CLONE_NEWTIME", cloneNewTime, unix.CLONE_NEWTIME},
		{"CLONE_NEWNS", cloneNewNS, unix.CLONE_NEWNS},
		{"CLONE_NEWCGROUP", cloneNewCgroup, unix.CLONE_NEWCGROUP},
		{"CLONE_NEWUTS", cloneNewUTS, unix.CLONE_NEWUTS},
		{"CLONE_NEWIPC", cloneNewIPC, unix.CLONE_NEWIPC},
		{"CLONE_NEWUSER", cloneNewUser, unix.CLONE_NEWUSER},
		{"CLONE_NEWPID", cloneNewPID, unix.CLONE_NEWPID},
		{"CLONE_NEWNET", cloneNewNet, unix.CLONE_NEWNET},
		{"CLONE_VM", cloneVM, unix.CLONE_VM},
		{"CLONE_FS", cloneFS, unix.CLONE_FS},
		{"CLONE_FILES", cloneFiles, unix.CLONE_FILES},
		{"CLONE_SIGHAND", cloneSighand, unix.CLONE_SIGHAND},
		{"CLONE_THREAD", cloneThread, unix.CLONE_THREAD},
		{"CLONE_SYSVSEM", cloneSysvsem, unix.CLONE_SYSVSEM},
		{"CLONE_SETTLS", cloneSettls, unix.CLONE_SETTLS},
		{"CLONE_PIDFD", clonePidfd, unix.CLONE_PIDFD},
		{"CLONE_VFORK", cloneVfork, unix.CLONE_VFORK},
		{"CSIGNAL", 0xff, unix.CSIGNAL},
		{"TIOCSTI", tiocsti, unix.TIOCSTI},
		{"TIOCLINUX", tioclinux, unix.TIOCLINUX},
		{"TIOCSETD", tiocsetd, unix.TIOCSETD},
		{"TCGETS", tcgets, unix.TCGETS},
		{"AUDIT_ARCH_X86_64", uint64(arches["amd64"].audit), unix.AUDIT_ARCH_X86_64},
		{"AUDIT_ARCH_AARCH64", uint64(arches["arm64"].audit), unix.AUDIT_ARCH_AARCH64},
		{"AUDIT_ARCH_I386", auditArchI386, unix.AUDIT_ARCH_I386},
		{"AUDIT_ARCH_ARM", auditArchARM, unix.AUDIT_ARCH_ARM},
		{"SECCOMP_RET_KILL_PROCESS", retKillProcess, unix.SECCOMP_RET_KILL_PROCESS},
		{"SECCOMP_RET_ERRNO", retErrno, unix.SECCOMP_RET_ERRNO},
		{"SECCOMP_RET_ALLOW", retAllow, unix.SECCOMP_RET_ALLOW},
		{"EPERM", uint64(EPERM), uint64(unix.EPERM)},
		{"ENOSYS", uint64(ENOSYS), uint64(unix.ENOSYS)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x here, %#x in x/sys/unix", c.name, c.got, c.want)
		}
	}
	// The namespace flags all sit in the low word, which is all the filter reads.
	for _, f := range unshareNamespaces {
		if uint64(f)>>32 != 0 {
			t.Errorf("namespace flag %#x is not in the low 32 bits", f)
		}
	}
}
