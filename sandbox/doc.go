// Package sandbox runs commands in moat's sandbox: a Go agent harness can use it
// directly, and the moat command line is a thin layer over it.
//
// A command runs with its whole process tree inside new user, mount, pid, network,
// ipc and uts namespaces. It sees the host's filesystem read-only, minus what the
// policy hides, with writes allowed only where the policy allows them; the
// mandatory protected paths (.git/hooks, .git/config, .vscode, shell rc files, ...)
// stay read-only even inside a writable workspace. It has a private /tmp, /dev/shm
// and /proc, no network but its own loopback, no capabilities, no_new_privs,
// Landlock as a second filesystem layer, and a seccomp filter against the kernel
// interfaces agents never need. When the command exits, everything it started is
// killed.
//
// # Use
//
// The sandbox re-executes the program's own binary as its init stage, so a program
// that uses this package must call [Init] first thing in main:
//
//	func main() {
//		sandbox.Init() // returns at once unless this process is a sandbox stage
//
//		cwd, _ := os.Getwd()
//		home, _ := os.UserHomeDir()
//		pol, err := policy.Compile(nil, policy.Flags{}, policy.Env{Cwd: cwd, Home: home})
//		if err != nil {
//			log.Fatal(err)
//		}
//		cmd := sandbox.Command(pol, "sh", "-c", "echo hi > out.txt; cat ~/.ssh/id_ed25519")
//		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
//		err = cmd.Run()
//		var exit *sandbox.ExitError
//		switch {
//		case errors.As(err, &exit):
//			fmt.Println("command failed:", exit.Code)
//		case err != nil:
//			log.Fatal(err) // the sandbox could not be built; the command did not run
//		}
//	}
//
// [policy.Compile] with nil settings gives the built-in default: the current
// directory writable, the rest readable. Pass parsed settings ([policy.LoadFile])
// and flags to change it.
//
// # Events
//
// [Cmd.Events] receives each connection and lookup the proxy allows or refuses;
// [Cmd.FileEvents] each access to a hidden path, with the rule that hides it and how
// to allow it. The hidden paths are covered by nodes of a FUSE filesystem that this
// process serves (empty directories and files, which report each access); that
// needs /dev/fuse to be openable by the user, and where it isn't, or in the direct
// mode, the paths are hidden all the same but FileEvents is not called:
//
//	cmd.FileEvents = func(ev sandbox.FileEvent) {
//		log.Printf("blocked %s of %s (%s): %s", ev.Op, ev.Path, ev.Rule, ev.Hint)
//	}
//
// # Hosts without user namespaces
//
// Where the kernel refuses the namespaces (Ubuntu 24.04's AppArmor restriction,
// containers, user.max_user_namespaces=0), [Cmd.Start] runs the command in the
// direct mode instead: no namespaces, the same plan enforced by Landlock, seccomp and
// a supervising stage that makes the command's connects itself (only the proxy, now
// on a host loopback port, and the allowed unix sockets) and kills everything it
// leaves behind. It writes one line to [Cmd.Notice] naming the mode and what it can't
// enforce (moat's README, "Hosts without user namespaces", has the list). With
// Policy.RequireNamespaces on, Start fails with a [*SetupError] instead; on a kernel
// whose Landlock can't scope signals (ABI < 6) it fails unless
// Policy.AllowUnscopedSignals is on.
//
// # Errors
//
// [Cmd.Wait] returns nil when the command exited 0, an [*ExitError] for any other
// status or a fatal signal, an [*ExecError] when the command could not be found or
// executed, and any other error (often a [*SetupError]) when a layer of the sandbox
// could not be applied. moat never runs a command with less protection than asked.
//
// # Limitations
//
//   - Linux only, with unprivileged user namespaces, Landlock, seccomp and the new
//     mount API (kernel 5.12 or later); without user namespaces, the direct mode
//     needs Linux 5.19 and Landlock. Run "moat doctor" to check a host.
//   - Programs built with cgo can't use this package: the init stage changes the
//     credentials of all threads with syscall.AllThreadsSyscall, which needs
//     CGO_ENABLED=0.
//   - Deny rules and protected paths apply to what exists when the sandbox starts;
//     globs are expanded then. A missing protected path whose parent exists is
//     covered by an empty placeholder directory created on the host and removed
//     when the last sandbox using it ends.
//   - Pathname unix sockets are reachable where the filesystem is readable, unless
//     hidden: moat hides /run, /var/run, $XDG_RUNTIME_DIR, the private /tmp, and
//     the sockets named by SSH_AUTH_SOCK, DBUS_SESSION_BUS_ADDRESS and DOCKER_HOST.
package sandbox
