package probe

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Detect probes this host. It takes about a millisecond, most of it creating (and at
// once dropping) a set of namespaces in a child process, and changes nothing: every
// other check is a read of /proc or /sys or a syscall made to fail before it acts.
func Detect() Report {
	r := Report{
		Kernel: kernel(),
		Arch:   runtime.GOARCH,
		User:   userName(),
		Root:   os.Geteuid() == 0,
	}
	r.Features = append(r.Features, namespaces(r.Root)...)

	ll, abi := landlock()
	r.LandlockABI = abi
	sc := seccomp()
	r.Features = append(r.Features, ll, sc, seccompNotify(), cgroupV2(), mountSetattr(), pidfd(), pidfdGetfd(),
		tiocsti(sc.Status == Available), mptcp(sc.Status == Available))
	r.Mode = r.mode()
	return r
}

func kernel() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
}

func userName() string {
	uid := os.Geteuid()
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("%s (uid %d)", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}

// sysctl returns the trimmed content of a /proc/sys file, or "" if it can't be read
// (which on these files means the kernel doesn't have the knob).
func sysctl(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// procStatus returns the value of field in /proc/self/status, or "".
func procStatus(field string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// nsTable lists the namespaces moat creates inside its user namespace.
var nsTable = []struct {
	name     string
	flag     uintptr
	max      string // the per-user limit under /proc/sys/user
	config   string // the kernel option that builds it
	required bool
	meaning  string
}{
	{MountNS, unix.CLONE_NEWNS, "max_mnt_namespaces", "", true,
		"no private mount table: secrets can't be masked, the root can't be made read-only, /tmp and /dev/shm can't be private"},
	{PIDNS, unix.CLONE_NEWPID, "max_pid_namespaces", "CONFIG_PID_NS", true,
		"the sandbox sees and can signal your other processes, and what it starts in the background outlives moat"},
	{NetNS, unix.CLONE_NEWNET, "max_net_namespaces", "CONFIG_NET_NS", true,
		"no empty network namespace: commands reach the network directly and the proxy's allow list can't be enforced"},
	{IPCNS, unix.CLONE_NEWIPC, "max_ipc_namespaces", "CONFIG_IPC_NS", false,
		"the sandbox shares System V IPC objects and POSIX message queues with the host"},
	{UTSNS, unix.CLONE_NEWUTS, "max_uts_namespaces", "CONFIG_UTS_NS", false,
		"the sandbox can't have its own hostname"},
}

// nsProbePath is the program the namespace probe's child executes. /dev/null is a device,
// so execve fails with ENOTDIR; by then clone with the namespace flags and the writes of
// the child's uid and gid maps have succeeded, and no program runs in the namespaces.
// Go's os.StartProcess reports an execve failure as its error and reaps the child.
//
// The obvious cheaper probe, unshare(CLONE_NEWUSER) on a locked OS thread, doesn't work:
// the kernel refuses it with EINVAL in any multithreaded process, and Go's are.
const nsProbePath = "/dev/null/moat-namespace-probe"

// tryNamespaces creates a child in a new user namespace, mapped to the caller's ids as
// moat maps them, plus the namespaces in flags. It returns the errno that stopped it.
func tryNamespaces(flags uintptr) error {
	p, err := os.StartProcess(nsProbePath, []string{"moat-namespace-probe"}, &os.ProcAttr{
		Sys: &syscall.SysProcAttr{
			Cloneflags:  unix.CLONE_NEWUSER | flags,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
		},
	})
	if err == nil {
		_ = p.Kill()
		_, _ = p.Wait()
		return fmt.Errorf("probe: bug: %s was executed", nsProbePath)
	}
	if errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// namespaces reports user namespaces and each namespace moat creates inside one.
func namespaces(root bool) []Feature {
	var all uintptr
	for _, ns := range nsTable {
		all |= ns.flag
	}
	userErr := tryNamespaces(all)
	nsErr := make([]error, len(nsTable))
	if userErr != nil {
		// Find out which one failed.
		userErr = tryNamespaces(0)
		if userErr == nil {
			for i, ns := range nsTable {
				nsErr[i] = tryNamespaces(ns.flag)
			}
		}
	}

	knobs := usernsKnobs()
	user := Feature{Name: UserNS, Required: true}
	if userErr != nil {
		user.Detail, user.Fix = usernsWhy(userErr, root)
		user.Meaning = "moat can't create any namespace: no mount masks or read-only root, no pid or network isolation"
	} else {
		user.Status = Available
		user.Detail = "created with a uid map"
		if k := knobs.values(); k != "" {
			user.Detail += "; " + k
		}
		if root && knobs.blocksUsers() {
			user.Detail += " (root is exempt; these block other users)"
		}
	}

	out := []Feature{user}
	failed := 0
	aaDenied := !root && knobs.apparmor == "1"
	for i, ns := range nsTable {
		f := Feature{Name: ns.name, Required: ns.required}
		switch err := nsErr[i]; {
		case userErr != nil:
			f.Detail = "not tried: needs a user namespace"
			f.Meaning = ns.meaning
			f.Fix = "make user namespaces available (see above)"
		case err == nil:
			f.Status = Available
			f.Detail = "created inside a user namespace"
		default:
			failed++
			f.Meaning = ns.meaning
			f.Detail = "creating one inside a user namespace failed: " + err.Error()
			switch {
			case errors.Is(err, unix.ENOSPC) && sysctl("/proc/sys/user/"+ns.max) != "0" && nestedUserNS():
				f.Detail += "; " + nestedWhy
				f.Fix = nestedFix
			case errors.Is(err, unix.ENOSPC):
				f.Detail += fmt.Sprintf("; user.%s=%s", ns.max, sysctl("/proc/sys/user/"+ns.max))
				f.Fix = fmt.Sprintf("sysctl -w user.%s=15000 (persist: echo user.%s=15000 > /etc/sysctl.d/90-moat.conf)", ns.max, ns.max)
			case errors.Is(err, unix.EINVAL) && ns.config != "":
				f.Detail += " (kernel built without " + ns.config + "?)"
				f.Fix = "use a kernel built with " + ns.config + "=y (every distribution kernel is)"
			case errors.Is(err, unix.EPERM) && aaDenied:
				f.Detail += "; kernel.apparmor_restrict_unprivileged_userns=1 gives the user namespace no capabilities"
				f.Fix = apparmorFix()
			case errors.Is(err, unix.EPERM):
				f.Detail += "; " + filteredWhy()
				f.Fix = "run moat outside the container or sandbox, or allow namespace creation in its seccomp/LSM profile"
			}
		}
		out = append(out, f)
	}
	if userErr == nil && failed == len(nsTable) {
		// A user namespace that can't create anything is of no use to moat.
		out[0].Status = Partial
		out[0].Detail = "created, but no namespace can be created inside it"
		out[0].Meaning = "the user namespace has no capabilities: moat can't build its sandbox in it"
		out[0].Fix = out[1].Fix
	}
	return out
}

// usernsSwitches holds the sysctls that can forbid unprivileged user namespaces.
type usernsSwitches struct {
	max      string // /proc/sys/user/max_user_namespaces
	debian   string // /proc/sys/kernel/unprivileged_userns_clone (Debian, older Ubuntu)
	apparmor string // /proc/sys/kernel/apparmor_restrict_unprivileged_userns (Ubuntu 23.10+)
}

func usernsKnobs() usernsSwitches {
	return usernsSwitches{
		max:      sysctl("/proc/sys/user/max_user_namespaces"),
		debian:   sysctl("/proc/sys/kernel/unprivileged_userns_clone"),
		apparmor: sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
	}
}

// values lists the switches the kernel has, as sysctl names.
func (k usernsSwitches) values() string {
	var s []string
	if k.max != "" {
		s = append(s, "user.max_user_namespaces="+k.max)
	}
	if k.debian != "" {
		s = append(s, "kernel.unprivileged_userns_clone="+k.debian)
	}
	if k.apparmor != "" {
		s = append(s, "kernel.apparmor_restrict_unprivileged_userns="+k.apparmor)
	}
	return strings.Join(s, ", ")
}

// blocksUsers says whether a switch stops unprivileged users, whom root doesn't speak for.
func (k usernsSwitches) blocksUsers() bool {
	return k.max == "0" || k.debian == "0" || k.apparmor == "1"
}

// usernsWhy explains why a user namespace couldn't be created and how to fix it.
func usernsWhy(err error, root bool) (detail, fix string) {
	k := usernsKnobs()
	detail = "creating one failed: " + err.Error()
	if v := k.values(); v != "" {
		detail += "; " + v
	}
	var fixes []string
	switch {
	case errors.Is(err, unix.EINVAL):
		detail += " (kernel built without CONFIG_USER_NS?)"
		fixes = append(fixes, "use a kernel built with CONFIG_USER_NS=y (every distribution kernel is)")
	case (errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EUSERS)) && k.max != "0" && nestedUserNS():
		detail += "; " + nestedWhy
		fixes = append(fixes, nestedFix)
	case errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EUSERS) || k.max == "0":
		fixes = append(fixes, "sysctl -w user.max_user_namespaces=15000 (persist: echo user.max_user_namespaces=15000 > /etc/sysctl.d/90-moat.conf)")
	}
	if !root && k.debian == "0" {
		fixes = append(fixes, "sysctl -w kernel.unprivileged_userns_clone=1 (persist: echo kernel.unprivileged_userns_clone=1 > /etc/sysctl.d/90-moat.conf)")
	}
	if !root && k.apparmor == "1" {
		fixes = append(fixes, apparmorFix())
	}
	if len(fixes) == 0 && errors.Is(err, unix.EPERM) {
		detail += "; " + filteredWhy()
		fixes = append(fixes, "run moat outside the container or sandbox, or allow namespace creation in its seccomp/LSM profile (docker: --security-opt seccomp=unconfined --security-opt apparmor=unconfined)")
	}
	if len(fixes) == 0 {
		fixes = append(fixes, "no known switch explains it: check dmesg and your LSM's log (SELinux, AppArmor)")
	}
	return detail, strings.Join(fixes, "\n")
}

// nestedUserNS reports whether this process runs in a user namespace other than the
// initial one, whose uid_map maps every id to itself.
func nestedUserNS() bool {
	m := strings.Fields(sysctl("/proc/self/uid_map"))
	return len(m) > 0 && !slices.Equal(m, []string{"0", "0", "4294967295"})
}

const (
	nestedWhy = "this process runs in a nested user namespace (a container or sandbox, e.g. bwrap --disable-userns) whose creator limits further nesting"
	nestedFix = "run moat outside the container or sandbox, or configure it to allow nested user namespaces"
)

// filteredWhy guesses what denied a namespace although no sysctl forbids it.
func filteredWhy() string {
	if procStatus("Seccomp") == "2" {
		return "this process runs under a seccomp filter (a container or another sandbox?) that may deny it"
	}
	if nestedUserNS() {
		return "this process runs in a nested user namespace (a container or sandbox?) whose creator may deny it"
	}
	return "no sysctl forbids it, so an LSM (SELinux, AppArmor) or a container runtime likely does"
}

// apparmorFix is Ubuntu 24.04's way to let one program create user namespaces.
func apparmorFix() string {
	exe, err := os.Executable()
	if err != nil {
		exe = "/usr/local/bin/moat"
	}
	return "allow moat in AppArmor (Ubuntu 23.10+), as root:\n" +
		"  printf 'abi <abi/4.0>,\\ninclude <tunables/global>\\nprofile moat " + exe + " flags=(unconfined) {\\n  userns,\\n}\\n' > /etc/apparmor.d/moat\n" +
		"  apparmor_parser -r /etc/apparmor.d/moat\n" +
		"or, for every program: sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
}

// landlock asks the kernel for its Landlock ABI version.
func landlock() (Feature, int) {
	f := Feature{Name: Landlock, Required: true}
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		f.Meaning = "no Landlock layer: file and port access inside the sandbox is limited by the mounts and the network namespace alone"
		f.Detail = "landlock_create_ruleset: " + errno.Error()
		switch errno {
		case unix.EOPNOTSUPP:
			lsm := sysctl("/sys/kernel/security/lsm")
			f.Detail += " (built into the kernel but not enabled at boot"
			if lsm != "" {
				f.Detail += "; active LSMs: " + lsm
			}
			f.Detail += ")"
			list := "landlock," + lsm
			if lsm == "" {
				list = "landlock,<the list in /sys/kernel/security/lsm>"
			}
			f.Fix = "boot with lsm=" + list + ": add it to GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub, reboot"
		case unix.ENOSYS:
			f.Detail += " (kernel older than 5.13 or built without CONFIG_SECURITY_LANDLOCK, or a seccomp filter hides it)"
			f.Fix = "use Linux " + landlockKernel(LandlockFullABI) + " or newer built with CONFIG_SECURITY_LANDLOCK=y"
		}
		return f, 0
	}
	n := int(abi)
	f.Detail = landlockDetail(n)
	if n < LandlockFullABI {
		f.Status = Partial
		f.Meaning = landlockLost(n)
		f.Fix = "use Linux " + landlockKernel(LandlockFullABI) + " or newer (Landlock ABI " + strconv.Itoa(LandlockFullABI) + ")"
	} else {
		f.Status = Available
	}
	return f, n
}

// seccomp checks that the kernel accepts seccomp filters: PR_SET_SECCOMP with a NULL
// program fails with EFAULT when filter mode exists and EINVAL when it doesn't, before
// anything is installed.
func seccomp() Feature {
	f := Feature{Name: Seccomp, Required: true}
	mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	if err == nil {
		err = unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, 0, 0, 0)
		if errors.Is(err, unix.EFAULT) {
			err = nil
		}
	}
	if err != nil {
		f.Detail = "seccomp filter mode: " + err.Error()
		f.Meaning = "no syscall filter: io_uring, bpf, ptrace, TIOCSTI, MPTCP, new namespaces and the mount API stay open to the sandbox"
		f.Fix = "use a kernel built with CONFIG_SECCOMP_FILTER=y (every distribution kernel is)"
		return f
	}
	f.Status = Available
	switch mode {
	case 0:
		f.Detail = "filter mode supported; this process is not filtered"
	case 2:
		f.Detail = "filter mode supported; this process is already filtered (filters stack)"
	default:
		f.Detail = fmt.Sprintf("filter mode supported; this process is in seccomp mode %d", mode)
	}
	return f
}

// listenerFlags are the flags the direct mode installs its broker filter with
// (internal/linux/seccomp.InstallListener); the newest, WAIT_KILLABLE_RECV, came in
// Linux 5.19, after everything else the broker uses (CONTINUE, ADDFD with SEND).
const listenerFlags = unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH |
	unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV

// seccompNotify reads the kernel's list of seccomp return actions and checks the
// listener flags the direct mode needs: seccomp(SECCOMP_SET_MODE_FILTER) with a NULL
// program checks the flags (EINVAL) before it reads the program (EFAULT), so nothing
// is installed.
func seccompNotify() Feature {
	f := Feature{Name: SeccompNotify, DirectMode: true}
	f.Meaning = "no direct mode: where user namespaces are unavailable, moat run can't run at all"
	avail := sysctl("/proc/sys/kernel/seccomp/actions_avail")
	switch {
	case avail == "":
		f.Detail = "/proc/sys/kernel/seccomp/actions_avail unreadable"
	case !slices.Contains(strings.Fields(avail), "user_notif"):
		f.Detail = "actions_avail: " + avail
	default:
		_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, listenerFlags, 0)
		if errno == unix.EFAULT {
			f.Status = Available
			f.Detail = "user_notif is in kernel.seccomp.actions_avail; the listener flags the direct mode uses are accepted"
			f.Meaning = ""
			return f
		}
		f.Status = Partial
		f.Detail = "user_notif is in kernel.seccomp.actions_avail, but seccomp refuses the listener flags the direct mode uses (TSYNC_ESRCH, WAIT_KILLABLE_RECV): " + errno.Error()
		f.Fix = "use Linux 5.19 or newer"
		return f
	}
	f.Fix = "use Linux 5.19 or newer built with CONFIG_SECCOMP_FILTER=y"
	return f
}

// pidfdGetfd takes a copy of one of this process's own descriptors with pidfd_getfd and
// reads its own memory with process_vm_readv: the direct mode's broker does both to the
// sandboxed process (a container's seccomp profile may deny them).
func pidfdGetfd() Feature {
	f := Feature{Name: PidfdGetfd, DirectMode: true}
	fail := func(what string, err error) Feature {
		f.Detail = what + ": " + err.Error()
		f.Meaning = "no direct mode: where user namespaces are unavailable, moat run can't run at all"
		if errors.Is(err, unix.ENOSYS) {
			f.Fix = "use Linux 5.6 or newer"
		} else {
			f.Fix = "run moat outside the container or sandbox, or allow " + what + " in its seccomp profile"
		}
		return f
	}
	pfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return fail("pidfd_open", err)
	}
	defer unix.Close(pfd)
	fd, err := unix.PidfdGetfd(pfd, pfd, 0)
	if err != nil {
		return fail("pidfd_getfd", err)
	}
	unix.Close(fd)
	if err := readOwnMemory(); err != nil {
		return fail("process_vm_readv", err)
	}
	f.Status = Available
	f.Detail = "pidfd_getfd and process_vm_readv work"
	return f
}

// cgroupV2 checks for a unified cgroup hierarchy whose memory, pids and cpu controllers
// moat could use in a child of the current cgroup.
func cgroupV2() Feature {
	f := Feature{Name: CgroupV2}
	const root = "/sys/fs/cgroup"
	fixBoot := "boot with systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all: add them to GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub, reboot"
	meaning := "no memory, process-count or CPU limit for the sandbox as a whole: resource limits fall back to per-process rlimits"
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		f.Detail = root + ": " + err.Error()
		f.Meaning, f.Fix = meaning, "mount cgroup2 on "+root+", or "+fixBoot
		return f
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		f.Meaning, f.Fix = meaning, fixBoot
		var ust unix.Statfs_t
		if unix.Statfs(root+"/unified", &ust) == nil && ust.Type == unix.CGROUP2_SUPER_MAGIC {
			c := sysctl(root + "/unified/cgroup.controllers")
			if c == "" {
				c = "none"
			}
			f.Detail = "hybrid hierarchy: cgroup v2 at " + root + "/unified has controllers: " + c + "; the rest are on v1"
		} else {
			f.Detail = "cgroup v1 only"
		}
		return f
	}
	// Unified: the controllers a child of our cgroup could get, and whether we may create it.
	rel := ""
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for line := range strings.Lines(string(b)) {
			if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
				rel = p
			}
		}
	}
	dir := filepath.Join(root, rel)
	have := strings.Fields(sysctl(dir + "/cgroup.controllers"))
	var lack []string
	for _, c := range []string{"memory", "pids", "cpu"} {
		if !slices.Contains(have, c) {
			lack = append(lack, c)
		}
	}
	f.Detail = fmt.Sprintf("unified at %s; this process's cgroup %s has controllers: %s", root, rel, strings.Join(have, " "))
	writable := unix.Access(dir, unix.W_OK) == nil
	switch {
	case len(lack) > 0:
		f.Status = Partial
		f.Meaning = "no " + strings.Join(lack, ", ") + " limit for the sandbox as a whole: those fall back to per-process rlimits"
		f.Fix = "run moat in a delegated cgroup: systemd-run --user --scope -p Delegate=yes moat run ..."
	case !writable:
		f.Status = Partial
		f.Detail += "; not writable by this user"
		f.Meaning = "moat can't create a cgroup for the sandbox: resource limits fall back to per-process rlimits"
		f.Fix = "run moat in a delegated cgroup: systemd-run --user --scope -p Delegate=yes moat run ..."
	default:
		f.Status = Available
	}
	return f
}

// mountSetattr calls mount_setattr with an all-zero attribute set, which the kernel
// treats as a no-op (or refuses with EPERM without CAP_SYS_ADMIN); only ENOSYS means it
// is missing.
func mountSetattr() Feature {
	f := Feature{Name: MountSetattr}
	err := unix.MountSetattr(-1, "", 0, &unix.MountAttr{})
	switch {
	case err == nil || errors.Is(err, unix.EPERM):
		f.Status = Available
		f.Detail = "syscall present"
		return f
	case errors.Is(err, unix.ENOSYS):
		f.Detail = "mount_setattr: " + err.Error() + " (kernel older than 5.12?)"
	default:
		f.Status = Partial
		f.Detail = "mount_setattr: unexpected " + err.Error()
	}
	f.Meaning = "read-only, nosuid and nodev can't be set on a bind mount and all its submounts in one step (AT_RECURSIVE)"
	f.Fix = "use Linux 5.12 or newer"
	return f
}

// pidfd opens and closes a pidfd for this process.
func pidfd() Feature {
	f := Feature{Name: Pidfd}
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err == nil {
		unix.Close(fd)
		f.Status = Available
		f.Detail = "pidfd_open works"
		return f
	}
	f.Detail = "pidfd_open: " + err.Error()
	f.Meaning = "moat waits for and signals the sandbox by pid, which the kernel may reuse"
	f.Fix = "use Linux 5.3 or newer"
	return f
}

// tiocsti reports whether TIOCSTI keystroke injection is live and whether moat stops it.
func tiocsti(seccompOK bool) Feature {
	f := Feature{Name: TIOCSTI, Required: true}
	v := sysctl("/proc/sys/dev/tty/legacy_tiocsti")
	switch v {
	case "0":
		f.Status = Available
		f.Detail = "dev.tty.legacy_tiocsti=0: the kernel refuses TIOCSTI"
		if seccompOK {
			f.Detail += "; moat's seccomp filter denies it too"
		}
		return f
	case "":
		f.Detail = "no dev.tty.legacy_tiocsti (kernel before 6.2): keystroke injection is live"
	default:
		f.Detail = "dev.tty.legacy_tiocsti=" + v + ": keystroke injection is live in this kernel"
	}
	if seccompOK {
		f.Status = Available
		f.Detail += "; moat's seccomp filter is what stops it"
		return f
	}
	f.Meaning = "a sandboxed command can push keystrokes into your shell with TIOCSTI"
	f.Fix = "sysctl -w dev.tty.legacy_tiocsti=0 (Linux 6.2+), and make seccomp available"
	return f
}

// mptcp reports whether MPTCP sockets, which Landlock's TCP rules miss, can be made.
func mptcp(seccompOK bool) Feature {
	f := Feature{Name: MPTCP}
	v := sysctl("/proc/sys/net/mptcp/enabled")
	switch v {
	case "":
		f.Status = Available
		f.Detail = "kernel without MPTCP"
		return f
	case "0":
		f.Status = Available
		f.Detail = "net.mptcp.enabled=0"
		return f
	}
	f.Detail = "net.mptcp.enabled=" + v + ": MPTCP sockets get past Landlock's TCP rules"
	if seccompOK {
		f.Status = Available
		f.Detail += "; moat's seccomp filter denies them"
		return f
	}
	f.Status = Partial
	f.Meaning = "MPTCP sockets escape Landlock's TCP port rules; only the network namespace confines them"
	f.Fix = "sysctl -w net.mptcp.enabled=0"
	return f
}
