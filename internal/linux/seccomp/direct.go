package seccomp

// ENOTSUP is what a filesystem without extended attributes answers; ACL and xattr
// tools fall back (cp copies the permission bits instead).
const ENOTSUP Errno = 95

// Linux ABI constants of the direct mode's process table (include/uapi; the same on
// amd64 and arm64).
const (
	prioProcess      = 0 // PRIO_PROCESS
	ioprioWhoProcess = 1 // IOPRIO_WHO_PROCESS
)

// directSysnums are the numbers of the syscalls only directTable names, per architecture
// (arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h; checked
// against x/sys/unix in the Linux tests).
var directSysnums = map[string]map[string]int{
	"amd64": {
		"prlimit64": 302, "setpriority": 141, "ioprio_set": 251,
		"sched_setaffinity": 203, "sched_setscheduler": 144, "sched_setparam": 142, "sched_setattr": 314,
		"setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "setxattrat": 463,
		"removexattr": 197, "lremovexattr": 198, "fremovexattr": 199, "removexattrat": 466,
	},
	"arm64": {
		"prlimit64": 261, "setpriority": 140, "ioprio_set": 30,
		"sched_setaffinity": 122, "sched_setscheduler": 119, "sched_setparam": 118, "sched_setattr": 274,
		"setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "setxattrat": 463,
		"removexattr": 14, "lremovexattr": 15, "fremovexattr": 16, "removexattrat": 466,
	},
}

const (
	whyOtherProcess = "without a pid namespace the process could set this for any process of the user, moat's own supervisor included (a file limit of 1 stops it killing what the command left): only the calling process (0) may be named"
	whyXattr        = "Landlock doesn't cover extended attributes: an ACL would let other users read the user's denied files (~/.ssh) outside the sandbox; without a mount namespace nothing else stops it"
)

// directTable is installed, in the direct mode only, with the network table: calls that
// the namespace mode's pid namespace and read-only mounts contain, and that reach host
// processes and files without them.
var directTable = []Rule{
	{Syscall: "prlimit64", Args: []ArgMatch{{Index: 0, Op: NotIn, Values: []uint32{0}}}, Errno: EPERM, Reason: whyOtherProcess},
	{Syscall: "setpriority", Args: []ArgMatch{{Index: 0, Op: NotIn, Values: []uint32{prioProcess}}}, Errno: EPERM,
		Reason: "PRIO_PGRP and PRIO_USER reach other processes of the user, moat's own included"},
	{Syscall: "setpriority", Args: []ArgMatch{{Index: 1, Op: NotIn, Values: []uint32{0}}}, Errno: EPERM, Reason: whyOtherProcess},
	{Syscall: "ioprio_set", Args: []ArgMatch{{Index: 0, Op: NotIn, Values: []uint32{ioprioWhoProcess}}}, Errno: EPERM,
		Reason: "IOPRIO_WHO_PGRP and IOPRIO_WHO_USER reach other processes of the user, moat's own included"},
	{Syscall: "ioprio_set", Args: []ArgMatch{{Index: 1, Op: NotIn, Values: []uint32{0}}}, Errno: EPERM, Reason: whyOtherProcess},
	{Syscall: "sched_setaffinity", Args: []ArgMatch{{Index: 0, Op: NotIn, Values: []uint32{0}}}, Errno: EPERM, Reason: whyOtherProcess},
	{Syscall: "sched_setscheduler", Args: []ArgMatch{{Index: 0, Op: NotIn, Values: []uint32{0}}}, Errno: EPERM, Reason: whyOtherProcess},
	{Syscall: "sched_setparam", Args: []ArgMatch{{Index: 0, Op: NotIn, Values: []uint32{0}}}, Errno: EPERM, Reason: whyOtherProcess},
	{Syscall: "sched_setattr", Args: []ArgMatch{{Index: 0, Op: NotIn, Values: []uint32{0}}}, Errno: EPERM, Reason: whyOtherProcess},
	{Syscall: "setxattr", Errno: ENOTSUP, Reason: whyXattr},
	{Syscall: "lsetxattr", Errno: ENOTSUP, Reason: whyXattr},
	{Syscall: "fsetxattr", Errno: ENOTSUP, Reason: whyXattr},
	{Syscall: "setxattrat", Errno: ENOTSUP, Reason: whyXattr},
	{Syscall: "removexattr", Errno: ENOTSUP, Reason: whyXattr},
	{Syscall: "lremovexattr", Errno: ENOTSUP, Reason: whyXattr},
	{Syscall: "fremovexattr", Errno: ENOTSUP, Reason: whyXattr},
	{Syscall: "removexattrat", Errno: ENOTSUP, Reason: whyXattr},
}
