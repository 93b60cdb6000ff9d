// Package direct is moat's mode without namespaces, for hosts where a user namespace
// can't be created (Ubuntu 24.04's AppArmor restriction, containers that forbid them): the
// same policy, enforced by Landlock, seccomp and a supervising process instead of mounts
// and namespaces. This note says what each mechanism answers, what it guarantees, what it
// doesn't, and how the supervisor plugs it in.
//
// # Processes and descriptors
//
// moat run (the supervisor) re-executes itself with [MainArg]: the supervisor stage
// ("stage A", [Main]). It is not sandboxed. It
//
//   - becomes a child subreaper (internal/linux/reaper) before it starts anything;
//   - computes the Landlock plan ([NewPlan]) and builds the ruleset;
//   - starts the exec stage ("stage B", [ExecArg], [ExecMain]) with a unix socket (fd 3)
//     and the ruleset (fd 4);
//   - receives the broker filter's seccomp listener from B and serves it: the network
//     broker (internal/linux/connbroker) and the entry broker (entries_linux.go);
//   - forwards signals, waits for the command, then kills every descendant left, and
//     reports a spec.Result.
//
// Stage B drops every capability (the bounding set too when it has any, so root regains
// nothing at exec), sets no_new_privs, enforces the Landlock ruleset on all threads,
// installs moat's deny filter (seccomp.Program) and the broker filter
// (seccomp.BrokerProgram, with a listener), sends the listener to A, closes it, and execs
// the command. Only descriptors 0, 1 and 2 reach the command: A marks everything above
// its own pipes close-on-exec, B closes everything above its two.
//
// The wire between the supervisor and A is the namespace init's: fd 3 carries one JSON
// [Spec] line and then one byte per signal to forward (closing it kills the sandbox), fd 4
// receives one JSON spec.Result; fd 5 adds JSON connbroker.Event lines, one per decided
// connect or listen ("blocked connect to 1.2.3.4:443 by process 1234: not the proxy"). A's
// environment is empty; the command's comes from the Spec, with TMPDIR, TMP, TEMP and
// TEMPDIR pointing at the private temp dir. [Start] does all of this for the supervisor
// (and makes and removes the temp dir if the Spec names none); sandbox.Init dispatches
// MainArg to Main and ExecArg to ExecMain, as it does launch.InitArg, and
// sandbox/direct_linux.go falls back to this mode when the kernel refuses the
// namespace init's clone, building the Spec from the same plan.
//
// # Filesystem: Landlock, granted around
//
// Threat: reading denied paths (~/.ssh, .env), writing outside the writable roots, writing
// or creating protected paths inside them (.git/hooks, .git/config, .vscode, .envrc),
// directly or through symlinks, hard links and renames.
//
// The planner's mount steps become rights per path, the deepest step deciding (bind-rw:
// read and write; bind-ro and placeholder: read; mask-dir, mask-file, tmpfs: nothing),
// plus a built-in list: /tmp, /var/tmp, /run, /var/run, /dev/shm and /dev/mqueue get
// nothing (the private temp dir gets everything), /dev gets only listing, and only
// /dev/null, zero, full, random, urandom, tty, ptmx and the terminal of the standard
// streams are usable devices (so another terminal of the user can be neither read nor
// written). Landlock rights are inherited by everything beneath the path they are granted
// on, so where something beneath a directory must have fewer rights than the directory,
// [NewPlan] grants the directory only the rights common to its whole subtree and grants
// the rest on each existing entry that neither is nor leads to the restricted path:
// "granting around". Such a directory is guarded ([Plan.Guarded]). Rules are added with
// O_PATH|O_NOFOLLOW: never on a symlink's target. TestPlan checks, for every path of a
// test tree, that the rules give it no right the policy doesn't and lack none it does,
// except a guarded directory's own lost rights.
//
// Enforced, for what exists when the sandbox starts, and tested against real attacks
// (direct_linux_test.go, workspace_linux_test.go): denied files and directories are
// unreadable by any path, including a symlink the command makes (Landlock checks the
// object reached), a hard link (refused: a link may not gain rights, EXDEV) and
// /proc/self/root; protected paths can't be written, replaced, renamed, removed, or
// created where missing (the planner's placeholders, and names the plan reserves); a
// rename of a protected path's parent (mv .git .git-old) is refused; nothing outside the
// writable roots and the private temp dir can be written; the host's /tmp is neither
// readable nor writable.
//
// Not enforced, by Landlock's design:
//
//   - Listing. READ_DIR granted on a directory covers its whole subtree, so listing ~
//     or the workspace means the names (not the content) inside a denied directory are
//     listable too ([Plan.Listable]), as are the names in /tmp and /run. Refusing to list
//     ~, / and the workspace would break ls everywhere.
//   - Files that appear later in a guarded directory that isn't writable (a host process
//     creating ~/new while the sandbox runs) are unreadable: there is no rule for them.
//   - Executing a file made during the run directly in a read-guarded writable
//     directory (a workspace root holding a denied .env) is refused: Landlock's execute
//     right can't be granted there, and exec can't be done on the process's behalf.
//   - Host processes' /proc/PID/cmdline, status and the like stay readable (no pid
//     namespace); environ, mem, maps, fd and anything else behind a ptrace check are
//     refused by Landlock's ptrace restriction and the deny filter.
//   - /dev/shm and POSIX message queues don't work (shm_open, sem_open: Python
//     multiprocessing locks): there is no private /dev/shm without a mount namespace.
//
// # Writable guarded directories: the entry broker
//
// The known trap: granting MAKE_REG or REMOVE_FILE on the workspace root grants it in
// .git/hooks beneath it, and an attacker creates .git/hooks/pre-commit. So a guarded
// directory that should be writable (the zone: typically the workspace root and .git)
// gets no make, remove or rename rights from Landlock, and files made in it later get no
// write rights. Everyday work (git commit writes .git/index.lock and renames it, an agent
// writes ./notes.md) needs them, so the broker filter sends open-for-writing, creat,
// mkdir, mknod, symlink, link, rename, unlink, rmdir and truncate to stage A (and, when a
// zone directory also lacks read rights because of a denied file in it, every open), and
// the entry broker decides:
//
//   - A call whose parent directory (resolved by A from the process's working directory
//     or directory descriptor, following symlinks but not /proc magic links) isn't in the
//     zone, or that names an entry the Landlock plan has rules for, or a symlink, is left
//     to the kernel (SECCOMP_USER_NOTIF_FLAG_CONTINUE). The kernel then reads the path
//     again, and the process may have rewritten it; that is safe because Landlock, which
//     grants nothing in the zone, decides whatever it says by then.
//   - Otherwise A does the call itself, once, on the one name it read, through the
//     directory descriptor it resolved: create or open (O_NOFOLLOW, with the process's
//     umask, the descriptor installed with SECCOMP_IOCTL_NOTIF_ADDFD), make a directory
//     (which joins the zone), remove, rename within the zone, hard-link a file made
//     during the run. It never acts on a pinned entry (protected, or leading to something
//     protected), never makes a reserved name, never links an entry that existed at start
//     and never renames across the zone's edge (EXDEV: callers copy instead). Zone
//     directories are known by file handle (name_to_handle_at: inode and generation), so
//     a removed directory's inode number can't be mistaken for one.
//
// TestRaces rewrites the path of open(O_CREAT) and rename from another thread thousands of
// times while the call is in flight, between a name the broker may make and
// .git/hooks/pre-commit, .git/hooks or .git/config: nothing protected is ever made or
// moved. TestGit commits and branches with real git in the sandbox; hooks and config stay
// as they were, on the host. Not supported in the zone: opening a FIFO for writing, binding
// a unix socket (bind it in TMPDIR), O_TMPFILE, writing through a symlink to a file made
// during the run. openat2 is answered ENOSYS (its flags are in memory seccomp can't read);
// callers fall back to openat. Files made by A belong to the user moat runs as, as the
// command's would. Cost: about 80 µs for each call sent to A (BenchmarkOpens: 10000 opens
// and 1000 creations take 0.9 s more in a read-guarded workspace than in a plain one);
// nothing when no writable directory holds a protected or denied path.
//
// # Network: the connection broker
//
// Threat: without a network namespace the command shares the host's network: any TCP or
// UDP address, ICMP, raw sockets, MPTCP (which Landlock's TCP rules miss), TCP fast open
// (a connect hidden in sendto), host unix sockets (ssh-agent, D-Bus, docker.sock),
// abstract unix sockets, listeners that take connections from the network.
//
// The broker filter refuses (EACCES) every inet socket but plain TCP (UDP, ICMP datagram,
// raw, SCTP, MPTCP), unix datagram sockets and pairs (a datagram socket sends to any
// pathname socket with sendmsg, whose address seccomp can't see), netlink other than
// NETLINK_ROUTE, MSG_FASTOPEN in sendto, sendmsg and sendmmsg flags, and
// TCP_FASTOPEN_CONNECT; it sends every connect and listen to A. Landlock also handles TCP
// connect with no port allowed, so the command's own connect could never succeed even if
// one escaped the broker (ABI 4). For a connect, A reads the address once
// (process_vm_readv), checks the notification is still valid, takes the socket with
// pidfd_getfd and, if the address is allowed, connects that socket itself to its own copy
// of the address, then answers with the result (EINPROGRESS for a non-blocking socket:
// the process polls its socket as usual). A racing rewrite of the address changes nothing:
// the kernel never reads it again. TestRace in connbroker rewrites the port from another
// thread 3000 times per run: the forbidden listener gets nothing, while a naive supervisor
// that checks and continues leaks hundreds of connections in the same test.
//
// Allowed: the proxy's TCP address (the proxy listens on host loopback, a port chosen per
// run; tools only speak HTTP_PROXY over TCP, so a unix-socket proxy would need the
// process's socket replaced, which breaks programs that inspect their sockets); pathname
// unix sockets the policy lists (matched by device and inode, so relative paths and
// symlinks work; connected through /proc/self/fd of A's own O_PATH descriptor, so a
// renamed or replaced file changes nothing); and, with Policy.LocalBinding, loopback
// listeners the sandbox made. A makes every listen itself: on loopback only, never on an
// unbound socket (which would take every address), and records the socket's cookie;
// connects to the sandbox's own TCP and unix listeners are allowed when every listener
// that could take the connection (sock_diag) is one of those. Everything else is refused
// (EACCES, or ECONNREFUSED where nothing listens) and reported as an event.
//
// Not enforced or not supported: abstract unix sockets are refused altogether, the
// sandbox's own included (A, outside the Landlock domain, can't connect on the process's
// behalf with Landlock's scoping); a host process could take a loopback port the
// sandbox's listener released in the instant between the check and the connect; peer
// credentials (SO_PEERCRED) show A's pid, which made the connect or the listen; a process
// that makes itself non-dumpable can't have its address read and gets EACCES; seccomp
// allows one listener per process, so moat can't run inside another sandbox that uses one
// (EBUSY).
//
// DNS: UDP is refused, and the command reads the host's resolv.conf. The supervisor sets
// RES_OPTIONS=use-vc, so glibc's resolver asks over TCP, and the broker connects a TCP
// connect to one of resolv.conf's nameservers (port 53) to moat's DNS stub instead
// (Policy.DNS, Policy.DNSStub), which answers only the names the policy allows. The
// process's address is never used, so nothing reaches the nameserver. Resolvers that
// speak only UDP (dig without +tcp, Go's own) fail.
//
// # Processes
//
// Threat: signals to, ptrace of, /proc/PID/mem or environ of host processes; a setsid or
// double-forked daemon that outlives the sandbox.
//
// Landlock scoping (ABI 6) confines signals and abstract unix sockets to the sandbox (A,
// outside the domain, can still signal the command); Landlock's ptrace restriction and the
// deny filter stop ptrace and every ptrace-checked /proc file of outside processes; the
// deny filter also denies new namespaces, the mount API, io_uring, TIOCSTI. The reaper:
// A is a child subreaper, so every orphan of the command re-parents to it, and when the
// command exits A sends SIGKILL to each of its children and reaps, round after round,
// until wait4 says it has none; a child's pid can't be reused before it is reaped, so no
// other process is ever signalled. internal/linux/reaper's tests leave setsid, nohup,
// subshell and double-forked daemons and a fork-and-exit chain racing the loop, and check
// with pidfds and /proc that nothing survives. If the supervisor dies, A's control pipe
// closes and it kills the sandbox the same way.
//
// Not enforced: on kernels with Landlock ABI below 6 (Ubuntu 24.04's 6.8 kernel has ABI 4)
// there is no signal scoping: the command can signal every process of the user, A
// included, and killing A would orphan the sandbox to the host's init (calls sent to A then
// fail with ENOSYS, so nothing opens up, but daemons survive). Main refuses to run there
// unless Spec.AllowUnscopedSignals is set (moat.allowUnscopedSignals), and moat's note
// then names the gap. A fork bomb
// is limited only by RLIMIT_NPROC: without a cgroup the reaper can only outrun it.
//
// # Testing on hosts without user namespaces
//
// internal/linux/userns0 runs a command in a user namespace whose
// user.max_user_namespaces is 0, as the caller's own uid with no capabilities: unshare -U
// fails there and probe.Detect reports user namespaces missing; CommandAsRoot is the same
// as `unshare -r` leaves a user (uid 0 there, with that namespace's capabilities).
// TestUnderUserns0 runs this package's escape tests and controls again inside the first;
// test/escape's TestDirectMode runs the escape suite through moat run in both. moat run
// --direct (sandbox.Cmd.Direct) takes this mode where namespaces work, which
// test/network's TestDirectMode uses to run the whole network suite in it.
package direct
