package seccomp

import (
	"errors"
	"maps"
	"testing"

	"golang.org/x/net/bpf"
)

const notify = retUserNotif

func netVM(t testing.TB, arch string) vm {
	t.Helper()
	raw, err := NetProgram(arch)
	if err != nil {
		t.Fatalf("NetProgram(%q): %v", arch, err)
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("NetProgram(%q) has instructions x/net/bpf can't decode", arch)
	}
	return newVM(t, insns)
}

func netNums(arch string) map[string]int {
	nums := maps.Clone(sysnums[arch])
	maps.Copy(nums, notifySysnums[arch])
	maps.Copy(nums, fsSysnums[arch])
	maps.Copy(nums, directSysnums[arch])
	return nums
}

// netNr is nr for the network table's syscalls.
func netNr(t testing.TB, arch, name string) uint32 {
	t.Helper()
	if n, ok := notifySysnums[arch][name]; ok {
		return uint32(n)
	}
	if n, ok := fsSysnums[arch][name]; ok && n != absent {
		return uint32(n)
	}
	return nr(t, arch, name)
}

const (
	afInetT   = 2
	afInet6T  = 10
	afUnixT   = 1
	afNlT     = 16
	sctp      = 132
	nonblock  = 0x800
	solSocket = 1
)

func TestNetVerdicts(t *testing.T) {
	for _, arch := range Arches() {
		m := netVM(t, arch)
		for _, tc := range []verdictCase{
			{name: "tcp socket allowed", syscall: "socket", args: [6]uint64{afInetT, nSockStream, 0}, want: allow},
			{name: "tcp6 socket with IPPROTO_TCP, cloexec, nonblock allowed", syscall: "socket", args: [6]uint64{afInet6T, nSockStream | sockCloexec | nonblock, nIPProtoTCP}, want: allow},
			{name: "udp socket denied", syscall: "socket", args: [6]uint64{afInetT, nSockDgram, 0}, want: deny(EACCES)},
			{name: "udp6 socket nonblock denied", syscall: "socket", args: [6]uint64{afInet6T, nSockDgram | nonblock, 17}, want: deny(EACCES)},
			{name: "icmp datagram (ping) socket denied", syscall: "socket", args: [6]uint64{afInetT, nSockDgram, 1}, want: deny(EACCES)},
			{name: "raw socket denied", syscall: "socket", args: [6]uint64{afInetT, 3, 1}, want: deny(EACCES)},
			{name: "seqpacket (sctp) denied", syscall: "socket", args: [6]uint64{afInetT, 5, sctp}, want: deny(EACCES)},
			{name: "stream sctp denied", syscall: "socket", args: [6]uint64{afInet6T, nSockStream, sctp}, want: deny(EACCES)},
			{name: "mptcp denied", syscall: "socket", args: [6]uint64{afInetT, nSockStream, ipprotoMPTCP}, want: deny(EACCES)},
			{name: "mptcp with garbage high words denied", syscall: "socket", args: [6]uint64{highGarbage | afInetT, nSockStream, highGarbage | ipprotoMPTCP}, want: deny(EACCES)},
			{name: "unix stream allowed", syscall: "socket", args: [6]uint64{afUnixT, nSockStream | sockCloexec, 0}, want: allow},
			{name: "unix seqpacket allowed", syscall: "socket", args: [6]uint64{afUnixT, 5, 0}, want: allow},
			{name: "unix dgram denied", syscall: "socket", args: [6]uint64{afUnixT, nSockDgram | sockCloexec, 0}, want: deny(EACCES)},
			{name: "unix dgram pair denied", syscall: "socketpair", args: [6]uint64{afUnixT, nSockDgram, 0}, want: deny(EACCES)},
			{name: "unix stream pair allowed", syscall: "socketpair", args: [6]uint64{afUnixT, nSockStream | sockCloexec, 0}, want: allow},
			{name: "netlink route allowed", syscall: "socket", args: [6]uint64{afNlT, 3 | sockCloexec, 0}, want: allow},
			{name: "netlink sock_diag denied", syscall: "socket", args: [6]uint64{afNlT, 3, 4}, want: deny(EACCES)},
			{name: "netlink usersock denied", syscall: "socket", args: [6]uint64{afNlT, nSockDgram, 2}, want: deny(EACCES)},
			{name: "connect notifies", syscall: "connect", args: [6]uint64{3, 0x1000, 16}, want: notify},
			{name: "listen notifies", syscall: "listen", args: [6]uint64{3, 128}, want: notify},
			{name: "sendto plain allowed", syscall: "sendto", args: [6]uint64{3, 0x1000, 10, 0, 0, 0}, want: allow},
			{name: "sendto with address allowed (TCP ignores it; UDP and unix dgram can't exist)", syscall: "sendto", args: [6]uint64{3, 0x1000, 10, 0, 0x2000, 16}, want: allow},
			{name: "sendto MSG_FASTOPEN denied", syscall: "sendto", args: [6]uint64{3, 0x1000, 10, nMsgFastopen, 0x2000, 16}, want: deny(EACCES)},
			{name: "sendto MSG_FASTOPEN|MSG_NOSIGNAL denied", syscall: "sendto", args: [6]uint64{3, 0x1000, 10, nMsgFastopen | 0x4000, 0x2000, 16}, want: deny(EACCES)},
			{name: "sendmsg MSG_FASTOPEN denied", syscall: "sendmsg", args: [6]uint64{3, 0x1000, nMsgFastopen}, want: deny(EACCES)},
			{name: "sendmsg MSG_FASTOPEN with garbage high word denied", syscall: "sendmsg", args: [6]uint64{3, 0x1000, highGarbage | nMsgFastopen}, want: deny(EACCES)},
			{name: "sendmsg plain allowed", syscall: "sendmsg", args: [6]uint64{3, 0x1000, 0x4000}, want: allow},
			{name: "sendmmsg MSG_FASTOPEN denied", syscall: "sendmmsg", args: [6]uint64{3, 0x1000, 2, nMsgFastopen}, want: deny(EACCES)},
			{name: "sendmmsg plain allowed", syscall: "sendmmsg", args: [6]uint64{3, 0x1000, 2, 0}, want: allow},
			{name: "TCP_FASTOPEN_CONNECT denied", syscall: "setsockopt", args: [6]uint64{3, nIPProtoTCP, nTCPFastopenCo, 0x1000, 4}, want: deny(EACCES)},
			{name: "TCP_NODELAY allowed", syscall: "setsockopt", args: [6]uint64{3, nIPProtoTCP, 1, 0x1000, 4}, want: allow},
			{name: "SOL_SOCKET option 30 allowed", syscall: "setsockopt", args: [6]uint64{3, solSocket, nTCPFastopenCo, 0x1000, 4}, want: allow},
			{name: "read allowed", syscall: "read", want: allow},
			{name: "ptrace allowed (the deny table's business)", syscall: "ptrace", want: allow},
		} {
			t.Run(arch+"/"+tc.name, func(t *testing.T) {
				c := call{arch: arches[arch].audit, nr: netNr(t, arch, tc.syscall), args: tc.args}
				if got := m.run(t, c); got != tc.want {
					t.Errorf("got %s, want %s", netVerdict(got), netVerdict(tc.want))
				}
			})
		}
		for _, tc := range []struct {
			name string
			c    call
			want uint32
		}{
			{"foreign architecture killed", call{arch: auditArchI386, nr: 102}, kill},
			{"x32 connect ENOSYS", call{arch: arches["amd64"].audit, nr: x32Bit | 42}, deny(ENOSYS)},
		} {
			if arch != "amd64" {
				continue
			}
			if got := m.run(t, tc.c); got != tc.want {
				t.Errorf("%s/%s: got %s, want %s", arch, tc.name, netVerdict(got), netVerdict(tc.want))
			}
		}
	}
}

func netVerdict(v uint32) string {
	if v == notify {
		return "USER_NOTIF"
	}
	return verdictString(v)
}

// TestNetDifferential runs the network program against the reference model of its table,
// with USER_NOTIF read back as the Notify pseudo-errno the model returns.
func TestNetDifferential(t *testing.T) {
	for _, arch := range Arches() {
		raw, err := NetProgram(arch)
		if err != nil {
			t.Fatal(err)
		}
		insns, _ := bpf.Disassemble(raw)
		notifies := 0
		for i, ins := range insns {
			if r, ok := ins.(bpf.RetConstant); ok {
				switch {
				case r.Val == retUserNotif:
					notifies++
					insns[i] = bpf.RetConstant{Val: retErrno | uint32(Notify)}
				case r.Val == retErrno|uint32(Notify):
					t.Errorf("%s: instruction %d returns the Notify pseudo-errno", arch, i)
				}
			}
		}
		if notifies != 1 {
			t.Errorf("%s: %d USER_NOTIF returns, want 1 (shared by connect and listen)", arch, notifies)
		}
		differential(t, arch, arches[arch], netNums(arch), netTable, newVM(t, insns), 600)
	}
}

func TestNetTable(t *testing.T) {
	for _, r := range netTable {
		for _, arch := range Arches() {
			if err := validate(r, netNums(arch)); err != nil {
				t.Errorf("%s: %v", arch, err)
			}
		}
	}
	for _, arch := range Arches() {
		for name, n := range notifySysnums[arch] {
			if old, ok := sysnums[arch][name]; ok && old != n {
				t.Errorf("%s: %s is %d here and %d in sysnums", arch, name, n, old)
			}
		}
	}
	rs := NetRules()
	rs[0].Args[0].Values[0] = 99
	if netTable[0].Args[0].Values[0] == 99 {
		t.Error("NetRules shares Values with the table")
	}
	if _, err := NetProgram("riscv64"); !errors.Is(err, ErrUnsupportedArch) {
		t.Errorf("NetProgram(riscv64) error = %v, want ErrUnsupportedArch", err)
	}
}

func brokerVM(t testing.TB, arch string, fs, reads bool) vm {
	t.Helper()
	raw, err := BrokerProgram(arch, fs, reads)
	if err != nil {
		t.Fatalf("BrokerProgram(%q): %v", arch, err)
	}
	insns, _ := bpf.Disassemble(raw)
	return newVM(t, insns)
}

func TestBrokerVerdicts(t *testing.T) {
	for _, arch := range Arches() {
		plain, writes, reads := brokerVM(t, arch, false, false), brokerVM(t, arch, true, false), brokerVM(t, arch, true, true)
		for _, tc := range []struct {
			name                string
			syscall             string
			args                [6]uint64
			plain, writes, read uint32
		}{
			{"openat read-only", "openat", [6]uint64{0xffffff9c, 0x1000, 0}, allow, allow, notify},
			{"openat O_RDONLY|O_CLOEXEC|O_DIRECTORY", "openat", [6]uint64{0xffffff9c, 0x1000, 0x80000 | 0x10000}, allow, allow, notify},
			{"openat O_WRONLY", "openat", [6]uint64{0xffffff9c, 0x1000, oWronly}, allow, notify, notify},
			{"openat O_RDWR", "openat", [6]uint64{0xffffff9c, 0x1000, oRdwr}, allow, notify, notify},
			{"openat O_CREAT only (read-only create)", "openat", [6]uint64{0xffffff9c, 0x1000, oCreat}, allow, notify, notify},
			{"openat O_TRUNC only", "openat", [6]uint64{0xffffff9c, 0x1000, oTrunc}, allow, notify, notify},
			{"openat O_WRONLY with garbage high word", "openat", [6]uint64{0xffffff9c, 0x1000, highGarbage | oWronly}, allow, notify, notify},
			{"openat2 ENOSYS", "openat2", [6]uint64{0xffffff9c, 0x1000, 0x2000, 24}, allow, deny(ENOSYS), deny(ENOSYS)},
			{"mkdirat", "mkdirat", [6]uint64{0xffffff9c, 0x1000, 0o755}, allow, notify, notify},
			{"unlinkat", "unlinkat", [6]uint64{0xffffff9c, 0x1000, 0}, allow, notify, notify},
			{"renameat2", "renameat2", [6]uint64{0xffffff9c, 0x1000, 0xffffff9c, 0x2000, 0}, allow, notify, notify},
			{"linkat", "linkat", [6]uint64{0xffffff9c, 0x1000, 0xffffff9c, 0x2000, 0}, allow, notify, notify},
			{"symlinkat", "symlinkat", [6]uint64{0x1000, 0xffffff9c, 0x2000}, allow, notify, notify},
			{"mknodat", "mknodat", [6]uint64{0xffffff9c, 0x1000, 0o10644, 0}, allow, notify, notify},
			{"truncate", "truncate", [6]uint64{0x1000, 0}, allow, notify, notify},
			{"connect still notifies", "connect", [6]uint64{3, 0x1000, 16}, notify, notify, notify},
			{"udp still denied", "socket", [6]uint64{afInetT, nSockDgram, 0}, deny(EACCES), deny(EACCES), deny(EACCES)},
			{"read allowed", "read", [6]uint64{}, allow, allow, allow},
		} {
			c := call{arch: arches[arch].audit, nr: netNr(t, arch, tc.syscall), args: tc.args}
			for i, m := range []vm{plain, writes, reads} {
				want := []uint32{tc.plain, tc.writes, tc.read}[i]
				if got := m.run(t, c); got != want {
					t.Errorf("%s/%s (fs=%v reads=%v): got %s, want %s", arch, tc.name, i > 0, i > 1, netVerdict(got), netVerdict(want))
				}
			}
		}
		if arch == "amd64" {
			for _, name := range []string{"open", "creat", "mkdir", "rename", "unlink", "rmdir", "link", "symlink", "mknod", "renameat"} {
				c := call{arch: arches[arch].audit, nr: uint32(fsSysnums[arch][name]), args: [6]uint64{0x1000, oCreat | oWronly, 0x2000}}
				if got := writes.run(t, c); got != notify {
					t.Errorf("amd64 %s: got %s, want USER_NOTIF", name, netVerdict(got))
				}
			}
		}
	}
}

func TestBrokerDifferential(t *testing.T) {
	for _, arch := range Arches() {
		for _, reads := range []bool{false, true} {
			raw, err := BrokerProgram(arch, true, reads)
			if err != nil {
				t.Fatal(err)
			}
			insns, _ := bpf.Disassemble(raw)
			for i, ins := range insns {
				if r, ok := ins.(bpf.RetConstant); ok && r.Val == retUserNotif {
					insns[i] = bpf.RetConstant{Val: retErrno | uint32(Notify)}
				}
			}
			rules := append(append(append([]Rule(nil), netTable...), directTable...), fsTable(reads)...)
			for _, r := range rules {
				if err := validate(r, netNums(arch)); err != nil {
					t.Errorf("%s: %v", arch, err)
				}
			}
			differential(t, arch, arches[arch], netNums(arch), rules, newVM(t, insns), 600)
		}
	}
}

// TestDirectVerdicts: the direct mode's process and xattr rules, by hand.
func TestDirectVerdicts(t *testing.T) {
	for _, arch := range Arches() {
		raw, err := BrokerProgram(arch, false, false)
		if err != nil {
			t.Fatal(err)
		}
		insns, _ := bpf.Disassemble(raw)
		m := newVM(t, insns)
		nums := netNums(arch)
		for _, tc := range []verdictCase{
			{name: "prlimit64 of itself allowed", syscall: "prlimit64", args: [6]uint64{0, 7, 0x1000, 0}, want: allow},
			{name: "prlimit64 of another process denied", syscall: "prlimit64", args: [6]uint64{4242, 7, 0x1000, 0}, want: deny(EPERM)},
			{name: "setpriority of itself allowed", syscall: "setpriority", args: [6]uint64{prioProcess, 0, 10}, want: allow},
			{name: "setpriority of another process denied", syscall: "setpriority", args: [6]uint64{prioProcess, 4242, 10}, want: deny(EPERM)},
			{name: "setpriority of the user denied", syscall: "setpriority", args: [6]uint64{2, 0, 10}, want: deny(EPERM)},
			{name: "ioprio_set of itself allowed", syscall: "ioprio_set", args: [6]uint64{ioprioWhoProcess, 0, 0}, want: allow},
			{name: "ioprio_set of the process group denied", syscall: "ioprio_set", args: [6]uint64{2, 0, 0}, want: deny(EPERM)},
			{name: "sched_setaffinity of another process denied", syscall: "sched_setaffinity", args: [6]uint64{4242, 8, 0x1000}, want: deny(EPERM)},
			{name: "sched_setaffinity of itself allowed", syscall: "sched_setaffinity", args: [6]uint64{0, 8, 0x1000}, want: allow},
			{name: "fsetxattr not supported", syscall: "fsetxattr", args: [6]uint64{3, 0x1000, 0x2000, 4, 0}, want: deny(ENOTSUP)},
			{name: "setxattr not supported", syscall: "setxattr", want: deny(ENOTSUP)},
		} {
			got := m.run(t, call{nr: uint32(nums[tc.syscall]), arch: arches[arch].audit, args: tc.args})
			if got != tc.want {
				t.Errorf("%s: %s: got %s, want %s", arch, tc.name, verdictString(got), verdictString(tc.want))
			}
		}
	}
}
