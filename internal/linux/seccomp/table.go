package seccomp

import (
	"fmt"
	"slices"
	"strings"
)

// Errno is the Linux error number a denied call returns (same value on amd64 and arm64).
type Errno uint16

const (
	EPERM  Errno = 1  // operation not permitted: the call is refused
	ENOSYS Errno = 38 // function not implemented: callers fall back as on an older kernel
)

func (e Errno) String() string {
	switch e {
	case EPERM:
		return "EPERM"
	case ENOSYS:
		return "ENOSYS"
	}
	return fmt.Sprintf("errno %d", uint16(e))
}

// Op is how an [ArgMatch] tests a syscall argument.
type Op uint8

const (
	// In matches when the (masked) argument equals one of Values.
	In Op = iota + 1
	// NotIn matches when the (masked) argument equals none of Values.
	NotIn
	// AnyBit matches when the argument has any bit set that is set in one of Values.
	AnyBit
)

func (o Op) String() string {
	switch o {
	case In:
		return "in"
	case NotIn:
		return "not in"
	case AnyBit:
		return "has any bit of"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// ArgMatch tests the low 32 bits of one syscall argument; the high 32 bits are never read.
// That is exact for every argument the table tests: the kernel truncates ioctl requests,
// socket arguments and personality to 32 bits, and keeps every namespace flag of clone and
// unshare in the low word (clone even drops the high word).
type ArgMatch struct {
	Index  int      // argument number, 0 to 5
	Mask   uint32   // In/NotIn only: when non-zero, compare argument&Mask
	Op     Op       // the test
	Values []uint32 // the values (In/NotIn) or flags (AnyBit)
}

func (m ArgMatch) String() string {
	arg := fmt.Sprintf("arg%d", m.Index)
	if m.Mask != 0 {
		arg = fmt.Sprintf("arg%d&%#x", m.Index, m.Mask)
	}
	vals := make([]string, len(m.Values))
	for i, v := range m.Values {
		vals[i] = fmt.Sprintf("%#x", v)
	}
	return fmt.Sprintf("%s %s {%s}", arg, m.Op, strings.Join(vals, ","))
}

// Rule makes calls of one syscall fail with Errno when all of Args match (always, if Args is
// empty). Rules of the same syscall are tried in table order; a call no rule matches is allowed.
type Rule struct {
	Syscall string     // Linux name, as in the kernel's syscall tables
	Args    []ArgMatch // conditions, all of which must hold; none means every call
	Errno   Errno      // returned instead of running the call
	Reason  string     // one line: why the sandboxed command must not make this call
}

func (r Rule) String() string {
	var conds []string
	for _, a := range r.Args {
		conds = append(conds, a.String())
	}
	call := r.Syscall
	if len(conds) > 0 {
		call += "(" + strings.Join(conds, " && ") + ")"
	}
	return fmt.Sprintf("%s -> %s: %s", call, r.Errno, r.Reason)
}

// Rules returns a copy of the deny table, in the order the filter applies it per syscall.
func Rules() []Rule {
	out := make([]Rule, len(table))
	for i, r := range table {
		r.Args = slices.Clone(r.Args)
		for j := range r.Args {
			r.Args[j].Values = slices.Clone(r.Args[j].Values)
		}
		out[i] = r
	}
	return out
}

const whySetid = "a set-user-ID or set-group-ID bit makes a program that runs with its owner's rights: root's, when moat runs as root"

// Linux ABI constants the table needs, spelled out so the generator builds on every GOOS
// (include/uapi; identical on amd64 and arm64; cross-checked against x/sys/unix on Linux).
const (
	afUnix    = 1  // AF_UNIX
	afInet    = 2  // AF_INET
	afInet6   = 10 // AF_INET6
	afNetlink = 16 // AF_NETLINK

	sockTypeMask = 0xf // SOCK_TYPE_MASK: the kernel's view of socket(2)'s type, without flags
	sockRaw      = 3   // SOCK_RAW
	sockPacket   = 10  // SOCK_PACKET: with AF_INET the kernel makes an AF_PACKET socket

	ipprotoMPTCP = 262 // IPPROTO_MPTCP

	cloneNewTime   = 0x00000080 // CLONE_NEWTIME (unshare and clone3 only: it is CSIGNAL for clone)
	cloneNewNS     = 0x00020000 // CLONE_NEWNS
	cloneNewCgroup = 0x02000000 // CLONE_NEWCGROUP
	cloneNewUTS    = 0x04000000 // CLONE_NEWUTS
	cloneNewIPC    = 0x08000000 // CLONE_NEWIPC
	cloneNewUser   = 0x10000000 // CLONE_NEWUSER
	cloneNewPID    = 0x20000000 // CLONE_NEWPID
	cloneNewNet    = 0x40000000 // CLONE_NEWNET

	tiocsti   = 0x5412 // TIOCSTI
	tioclinux = 0x541c // TIOCLINUX
	tiocsetd  = 0x5423 // TIOCSETD

	modeSetid      = 0o6000 // S_ISUID | S_ISGID
	sigcont        = 18     // SIGCONT
	fSetsig        = 10     // F_SETSIG: the signal an fd's I/O readiness sends (O_ASYNC, leases, dnotify)
	prSetPdeathsig = 1      // PR_SET_PDEATHSIG
	cloneCSignal   = 0xff   // CSIGNAL: clone's exit signal, sent to the parent when the child ends

	perLinux = 0          // PER_LINUX
	perQuery = 0xffffffff // personality(0xffffffff) reports the persona without changing it
)

// cloneNamespaces are the namespace flags clone(2) can request.
var cloneNamespaces = []uint32{cloneNewUser, cloneNewNS, cloneNewPID, cloneNewNet, cloneNewIPC, cloneNewUTS, cloneNewCgroup}

// unshareNamespaces adds CLONE_NEWTIME, which unshare(2) accepts.
var unshareNamespaces = append(slices.Clone(cloneNamespaces), cloneNewTime)

// allowedFamilies are the socket families the sandboxed command may create.
var allowedFamilies = []uint32{afUnix, afInet, afInet6, afNetlink}

const (
	whyMount   = "changes the mount table: from a nested namespace it could lift moat's masks"
	whyFamily  = "only unix, inet, inet6 and netlink: AF_PACKET and AF_VSOCK get past the proxy or reach the host; AF_ALG, AF_KEY, AF_TIPC, AF_RDS, AF_CAN, AF_BLUETOOTH, AF_X25, AF_XDP and later families are little-used kernel code with exploit records"
	whyKeyring = "the user's kernel keyrings are shared with processes outside the sandbox and may hold credentials"
	whyModule  = "loads or unloads kernel code"
	whyClock   = "sets the host-wide system clock"
)

// table is the deny list. Everything not listed is allowed: namespaces, Landlock and the
// mount masks do the confining; this filter removes kernel surface those layers don't cover.
var table = []Rule{
	// Other processes.
	{Syscall: "ptrace", Errno: EPERM, Reason: "attaches to and rewrites other processes (and on old kernels a tracer could skip seccomp)"},
	{Syscall: "process_vm_readv", Errno: EPERM, Reason: "reads another process's memory"},
	{Syscall: "process_vm_writev", Errno: EPERM, Reason: "writes another process's memory"},
	{Syscall: "pidfd_getfd", Errno: EPERM, Reason: "copies a file descriptor out of another process"},
	{Syscall: "kcmp", Errno: EPERM, Reason: "inspects other processes' kernel objects; only checkpoint/restore tools need it"},

	// Kernel code and kernel attack surface.
	{Syscall: "kexec_load", Errno: EPERM, Reason: "replaces the running kernel"},
	{Syscall: "kexec_file_load", Errno: EPERM, Reason: "replaces the running kernel"},
	{Syscall: "init_module", Errno: EPERM, Reason: whyModule},
	{Syscall: "finit_module", Errno: EPERM, Reason: whyModule},
	{Syscall: "delete_module", Errno: EPERM, Reason: whyModule},
	{Syscall: "bpf", Errno: EPERM, Reason: "the eBPF verifier and JIT are a leading source of kernel exploits; build tools don't use them"},
	{Syscall: "perf_event_open", Errno: EPERM, Reason: "performance counters leak kernel addresses and timing and have a long exploit record"},
	{Syscall: "userfaultfd", Errno: EPERM, Reason: "lets an exploit stall the kernel mid-copy to win races"},
	{Syscall: "keyctl", Errno: EPERM, Reason: whyKeyring},
	{Syscall: "add_key", Errno: EPERM, Reason: whyKeyring},
	{Syscall: "request_key", Errno: EPERM, Reason: whyKeyring},
	{Syscall: "io_uring_setup", Errno: ENOSYS, Reason: "io_uring does I/O and opens sockets without per-call seccomp checks; ENOSYS makes programs fall back to plain syscalls"},
	{Syscall: "io_uring_enter", Errno: ENOSYS, Reason: "io_uring does I/O without per-call seccomp checks"},
	{Syscall: "io_uring_register", Errno: ENOSYS, Reason: "io_uring does I/O without per-call seccomp checks"},
	{Syscall: "personality", Args: []ArgMatch{{Index: 0, Op: NotIn, Values: []uint32{perLinux, perQuery}}}, Errno: EPERM,
		Reason: "other personas and flags (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO) weaken ASLR/NX and reach legacy kernel paths; PER_LINUX and the query stay allowed"},
	{Syscall: "modify_ldt", Errno: EPERM, Reason: "x86 LDT segments: legacy kernel code with an exploit record, needed only by Wine/DOSEMU"},
	{Syscall: "uselib", Errno: EPERM, Reason: "legacy a.out library loader with an exploit record; gone from modern kernels"},
	{Syscall: "nfsservctl", Errno: EPERM, Reason: "legacy NFS server control; gone from modern kernels"},
	{Syscall: "lookup_dcookie", Errno: EPERM, Reason: "profiling interface that resolves other processes' file paths"},

	// Mounts and namespaces: the sandbox's own are made before the filter is installed.
	{Syscall: "mount", Errno: EPERM, Reason: whyMount},
	{Syscall: "umount2", Errno: EPERM, Reason: "unmounts: from a nested namespace it could uncover what moat's masks hide"},
	{Syscall: "pivot_root", Errno: EPERM, Reason: whyMount},
	{Syscall: "chroot", Errno: EPERM, Reason: "changes the root directory; with a held directory fd a classic escape, and it confuses path checks"},
	{Syscall: "move_mount", Errno: EPERM, Reason: whyMount},
	{Syscall: "open_tree", Errno: EPERM, Reason: "clones mounts (mount API): could re-expose a masked tree elsewhere"},
	{Syscall: "open_tree_attr", Errno: EPERM, Reason: "clones mounts with new attributes (mount API)"},
	{Syscall: "fsopen", Errno: EPERM, Reason: "creates a filesystem context (mount API)"},
	{Syscall: "fsconfig", Errno: EPERM, Reason: "configures a filesystem context (mount API)"},
	{Syscall: "fsmount", Errno: EPERM, Reason: "creates a mount from a filesystem context (mount API)"},
	{Syscall: "fspick", Errno: EPERM, Reason: "reconfigures an existing mount (mount API)"},
	{Syscall: "mount_setattr", Errno: EPERM, Reason: "changes mount attributes such as read-only"},
	{Syscall: "open_by_handle_at", Errno: EPERM, Reason: "opens files by inode handle, bypassing every path-based mask (the 'shocker' escape)"},
	{Syscall: "name_to_handle_at", Errno: EPERM, Reason: "makes the file handles open_by_handle_at consumes"},
	{Syscall: "setns", Errno: EPERM, Reason: "joins another namespace through a namespace fd, leaving the sandbox's"},
	{Syscall: "unshare", Args: []ArgMatch{{Index: 0, Op: AnyBit, Values: unshareNamespaces}}, Errno: EPERM,
		Reason: "new namespaces (a user namespace above all) grant capabilities to unmount masks and reach namespaced kernel code"},
	{Syscall: "clone", Args: []ArgMatch{{Index: 0, Op: AnyBit, Values: cloneNamespaces}}, Errno: EPERM,
		Reason: "new namespaces (a user namespace above all) grant capabilities to unmount masks and reach namespaced kernel code"},
	{Syscall: "clone3", Errno: ENOSYS, Reason: "its flags sit in a struct seccomp can't read; ENOSYS makes glibc and Go fall back to clone, which is checked"},

	// Host-wide state.
	{Syscall: "swapon", Errno: EPERM, Reason: "host swap configuration"},
	{Syscall: "swapoff", Errno: EPERM, Reason: "host swap configuration"},
	{Syscall: "reboot", Errno: EPERM, Reason: "reboots or halts the machine"},
	{Syscall: "syslog", Errno: EPERM, Reason: "reads the kernel log: host activity and kernel addresses"},
	{Syscall: "acct", Errno: EPERM, Reason: "host-wide process accounting"},
	{Syscall: "quotactl", Errno: EPERM, Reason: "filesystem quota administration"},
	{Syscall: "quotactl_fd", Errno: EPERM, Reason: "filesystem quota administration"},
	{Syscall: "iopl", Errno: EPERM, Reason: "raw x86 I/O port access"},
	{Syscall: "ioperm", Errno: EPERM, Reason: "raw x86 I/O port access"},
	{Syscall: "settimeofday", Errno: EPERM, Reason: whyClock},
	{Syscall: "clock_settime", Errno: EPERM, Reason: whyClock},
	{Syscall: "clock_adjtime", Errno: EPERM, Reason: "tunes the host clock; whether a call only reads is in memory seccomp can't see, so all calls are denied"},
	{Syscall: "adjtimex", Errno: EPERM, Reason: "tunes the host clock; whether a call only reads is in memory seccomp can't see, so all calls are denied"},
	{Syscall: "fanotify_init", Errno: EPERM, Reason: "filesystem-wide event monitoring can watch files outside the sandbox"},

	// Terminal.
	{Syscall: "vhangup", Errno: EPERM, Reason: "hangs up the terminal, which belongs to the user's session outside the sandbox"},
	{Syscall: "ioctl", Args: []ArgMatch{{Index: 1, Op: In, Values: []uint32{tiocsti}}}, Errno: EPERM,
		Reason: "TIOCSTI pushes keystrokes into the terminal, for the user's shell to run after the sandbox exits"},
	{Syscall: "ioctl", Args: []ArgMatch{{Index: 1, Op: In, Values: []uint32{tioclinux}}}, Errno: EPERM,
		Reason: "TIOCLINUX can paste the console selection into the terminal's input"},
	{Syscall: "ioctl", Args: []ArgMatch{{Index: 1, Op: In, Values: []uint32{tiocsetd}}}, Errno: EPERM,
		Reason: "TIOCSETD switches the tty line discipline into rarely used kernel code (n_gsm, n_hdlc) with an exploit record"},

	// Set-user-ID and set-group-ID bits: the command, run by root, could leave a
	// setuid-root program in the workspace for any local user to run (in the direct
	// mode, on any file root owns); run by a user, a setgid program of the user's
	// groups. Making one (chmod, or a mode at creation) is refused.
	{Syscall: "chmod", Args: []ArgMatch{{Index: 1, Op: AnyBit, Values: []uint32{modeSetid}}}, Errno: EPERM, Reason: whySetid},
	{Syscall: "fchmod", Args: []ArgMatch{{Index: 1, Op: AnyBit, Values: []uint32{modeSetid}}}, Errno: EPERM, Reason: whySetid},
	{Syscall: "fchmodat", Args: []ArgMatch{{Index: 2, Op: AnyBit, Values: []uint32{modeSetid}}}, Errno: EPERM, Reason: whySetid},
	{Syscall: "fchmodat2", Args: []ArgMatch{{Index: 2, Op: AnyBit, Values: []uint32{modeSetid}}}, Errno: EPERM, Reason: whySetid},
	{Syscall: "open", Args: []ArgMatch{{Index: 2, Op: AnyBit, Values: []uint32{modeSetid}}}, Errno: EPERM, Reason: whySetid},
	{Syscall: "openat", Args: []ArgMatch{{Index: 3, Op: AnyBit, Values: []uint32{modeSetid}}}, Errno: EPERM, Reason: whySetid},
	{Syscall: "creat", Args: []ArgMatch{{Index: 1, Op: AnyBit, Values: []uint32{modeSetid}}}, Errno: EPERM, Reason: whySetid},
	{Syscall: "mknod", Args: []ArgMatch{{Index: 1, Op: AnyBit, Values: []uint32{modeSetid}}}, Errno: EPERM, Reason: whySetid},
	{Syscall: "mknodat", Args: []ArgMatch{{Index: 2, Op: AnyBit, Values: []uint32{modeSetid}}}, Errno: EPERM, Reason: whySetid},

	// Network.
	{Syscall: "socket", Args: []ArgMatch{{Index: 0, Op: NotIn, Values: allowedFamilies}}, Errno: EPERM, Reason: whyFamily},
	{Syscall: "socket", Args: []ArgMatch{{Index: 0, Op: In, Values: []uint32{afInet, afInet6}}, {Index: 2, Op: In, Values: []uint32{ipprotoMPTCP}}}, Errno: EPERM,
		Reason: "MPTCP sockets get past Landlock's TCP port rules"},
	{Syscall: "socket", Args: []ArgMatch{{Index: 0, Op: In, Values: []uint32{afInet, afInet6}}, {Index: 1, Mask: sockTypeMask, Op: In, Values: []uint32{sockRaw, sockPacket}}}, Errno: EPERM,
		Reason: "raw IP sockets and (AF_INET, SOCK_PACKET), which the kernel turns into AF_PACKET, get past Landlock's TCP rules"},
	{Syscall: "socketpair", Args: []ArgMatch{{Index: 0, Op: NotIn, Values: allowedFamilies}}, Errno: EPERM, Reason: whyFamily},
}
