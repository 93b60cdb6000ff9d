package seccomp

import (
	"fmt"
	"maps"
	"slices"

	"golang.org/x/net/bpf"
)

// Notify is not an errno: a [Rule] whose Errno is Notify sends the call to the supervisor
// holding the filter's listener (SECCOMP_RET_USER_NOTIF) instead of failing it. The
// supervisor then answers for the kernel, or acts on the process's behalf.
const Notify Errno = 4095

// EACCES is the errno of a network call the direct mode's policy refuses: what Landlock
// answers, and what programs report as "permission denied".
const EACCES Errno = 13

// retUserNotif is SECCOMP_RET_USER_NOTIF.
const retUserNotif = 0x7fc00000

// Linux ABI constants of the network table (include/uapi; the same on amd64 and arm64).
const (
	nSockStream    = 1          // SOCK_STREAM
	nSockDgram     = 2          // SOCK_DGRAM
	nIPProtoTCP    = 6          // IPPROTO_TCP; also SOL_TCP for setsockopt
	nNetlinkRoute  = 0          // NETLINK_ROUTE
	nMsgFastopen   = 0x20000000 // MSG_FASTOPEN
	nTCPFastopenCo = 30         // TCP_FASTOPEN_CONNECT
)

// notifySysnums are the numbers of the syscalls the network table names, per architecture
// (arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h; checked
// against x/sys/unix in the Linux tests).
var notifySysnums = map[string]map[string]int{
	"amd64": {"socket": 41, "connect": 42, "sendto": 44, "sendmsg": 46, "listen": 50, "socketpair": 53, "setsockopt": 54, "sendmmsg": 307},
	"arm64": {"socket": 198, "socketpair": 199, "listen": 201, "connect": 203, "sendto": 206, "setsockopt": 208, "sendmsg": 211, "sendmmsg": 269},
}

const whyBroker = "without a network namespace the process shares the host's network: the supervisor reads the address once and connects the socket itself, so only the proxy (and allowed unix sockets) can be reached, and a racing rewrite of the address changes nothing"

// netTable is the direct mode's network filter, installed on top of the deny table [Program]
// builds (the stricter verdict of the two filters wins). Without a network namespace,
// Landlock's port-only TCP rules are not enough: this table leaves plain TCP and unix
// stream sockets as the only ones a process can make, and sends every connect and listen to
// the supervisor, which decides on a copy of the arguments it read once.
var netTable = []Rule{
	{Syscall: "socket", Args: []ArgMatch{{Index: 0, Op: In, Values: []uint32{afInet, afInet6}}, {Index: 1, Mask: sockTypeMask, Op: NotIn, Values: []uint32{nSockStream}}}, Errno: EACCES,
		Reason: "only TCP: UDP, ICMP datagram, raw, SCTP and other inet socket types reach the network without a connect the supervisor can check"},
	{Syscall: "socket", Args: []ArgMatch{{Index: 0, Op: In, Values: []uint32{afInet, afInet6}}, {Index: 2, Op: NotIn, Values: []uint32{0, nIPProtoTCP}}}, Errno: EACCES,
		Reason: "only TCP: MPTCP (which Landlock's TCP rules miss), SCTP and other stream protocols are refused"},
	{Syscall: "socket", Args: []ArgMatch{{Index: 0, Op: In, Values: []uint32{afUnix}}, {Index: 1, Mask: sockTypeMask, Op: In, Values: []uint32{nSockDgram}}}, Errno: EACCES,
		Reason: "a unix datagram socket sends to any pathname socket with sendmsg, whose address seccomp can't read (journald, syslog, notify sockets of the host)"},
	{Syscall: "socketpair", Args: []ArgMatch{{Index: 0, Op: In, Values: []uint32{afUnix}}, {Index: 1, Mask: sockTypeMask, Op: In, Values: []uint32{nSockDgram}}}, Errno: EACCES,
		Reason: "a connected unix datagram socket can still send to any other pathname socket with sendmsg"},
	{Syscall: "socket", Args: []ArgMatch{{Index: 0, Op: In, Values: []uint32{afNetlink}}, {Index: 2, Op: NotIn, Values: []uint32{nNetlinkRoute}}}, Errno: EACCES,
		Reason: "only NETLINK_ROUTE (interface lists): sock_diag lists the host's sockets, and NETLINK_USERSOCK and others can message host processes"},
	{Syscall: "connect", Errno: Notify, Reason: whyBroker},
	{Syscall: "listen", Errno: Notify,
		Reason: "a listener on a host address takes connections from the network; the supervisor listens on the process's behalf only on loopback, and learns which unix listeners are the sandbox's own"},
	{Syscall: "sendto", Args: []ArgMatch{{Index: 3, Op: AnyBit, Values: []uint32{nMsgFastopen}}}, Errno: EACCES,
		Reason: "MSG_FASTOPEN connects an unconnected TCP socket to the address in the call, without connect()"},
	{Syscall: "sendmsg", Args: []ArgMatch{{Index: 2, Op: AnyBit, Values: []uint32{nMsgFastopen}}}, Errno: EACCES,
		Reason: "MSG_FASTOPEN connects an unconnected TCP socket to msg_name, without connect()"},
	{Syscall: "sendmmsg", Args: []ArgMatch{{Index: 3, Op: AnyBit, Values: []uint32{nMsgFastopen}}}, Errno: EACCES,
		Reason: "MSG_FASTOPEN connects an unconnected TCP socket to msg_name, without connect()"},
	{Syscall: "setsockopt", Args: []ArgMatch{{Index: 1, Op: In, Values: []uint32{nIPProtoTCP}}, {Index: 2, Op: In, Values: []uint32{nTCPFastopenCo}}}, Errno: EACCES,
		Reason: "TCP_FASTOPEN_CONNECT defers the handshake to the first write; refused so that connect stays the only way out"},
}

// NetRules returns a copy of the direct mode's network table. Rules whose Errno is [Notify]
// send the call to the supervisor.
func NetRules() []Rule {
	out := make([]Rule, len(netTable))
	for i, r := range netTable {
		r.Args = slices.Clone(r.Args)
		for j := range r.Args {
			r.Args[j].Values = slices.Clone(r.Args[j].Values)
		}
		out[i] = r
	}
	return out
}

// NetProgram returns the direct mode's network filter for GOARCH arch, to be installed with
// [InstallListener] on top of [Program]'s filter. Like [Program] it kills calls made through
// another architecture's entry point and answers ENOSYS to x32 calls.
func NetProgram(arch string) ([]bpf.RawInstruction, error) {
	return notifyProgram(arch, netTable)
}

// notifyProgram compiles rules whose Errno may be [Notify].
func notifyProgram(arch string, rules []Rule) ([]bpf.RawInstruction, error) {
	info, ok := arches[arch]
	if !ok {
		return nil, fmt.Errorf("seccomp network program for %q: %w", arch, ErrUnsupportedArch)
	}
	nums := maps.Clone(sysnums[arch])
	maps.Copy(nums, notifySysnums[arch])
	maps.Copy(nums, fsSysnums[arch])
	maps.Copy(nums, directSysnums[arch])
	insns, err := compile(info, nums, rules)
	if err != nil {
		return nil, fmt.Errorf("seccomp network program for %s: %w", arch, err)
	}
	// compile returns SECCOMP_RET_ERRNO|errno for a matching rule; the Notify pseudo-errno
	// becomes SECCOMP_RET_USER_NOTIF. No real errno is 4095, so nothing else is rewritten.
	for i, ins := range insns {
		if r, ok := ins.(bpf.RetConstant); ok && r.Val == retErrno|uint32(Notify) {
			insns[i] = bpf.RetConstant{Val: retUserNotif}
		}
	}
	raw, err := bpf.Assemble(insns)
	if err != nil {
		return nil, fmt.Errorf("seccomp network program for %s: assemble: %w (bug)", arch, err)
	}
	return raw, nil
}
