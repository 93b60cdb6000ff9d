// Package userns0 runs commands, for tests, on a simulated host without user namespaces:
// inside a fresh user namespace whose user.max_user_namespaces is 0, so nothing in it can
// create another, as the caller's own uid and with no capabilities (Ubuntu 24.04's
// AppArmor restriction and container runtimes' seccomp profiles look the same from inside:
// creating a user namespace fails).
//
// A test binary that imports it re-executes itself through [Command]; the package's init
// function notices and does the setup before any test code runs:
//
//	cmd, err := userns0.Command("unshare", "-U", "true")
//	if err != nil {
//		t.Skip(err)
//	}
//	out, err := cmd.CombinedOutput() // fails: No space left on device
package userns0

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linux/privs"
)

// envKey carries the command to run into the re-executed binary.
const envKey = "MOAT_USERNS0_EXEC"

type request struct {
	Path string   `json:"path"`
	Args []string `json:"args"`
	// KeepCaps leaves the namespace's capabilities to the command (CommandAsRoot).
	KeepCaps bool `json:"keepCaps,omitempty"`
}

func init() {
	v, ok := os.LookupEnv(envKey)
	if !ok {
		return
	}
	os.Unsetenv(envKey)
	if err := enter(v); err != nil {
		fmt.Fprintf(os.Stderr, "userns0: %v\n", err)
		os.Exit(125)
	}
}

// enter runs in the new user namespace, as its creator with the capabilities the parent
// passed as ambient ones: it forbids further user namespaces, drops every capability for
// good and executes the command. Package init runs on the main thread, which it keeps.
func enter(v string) error {
	var r request
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return err
	}
	if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0\n"), 0); err != nil {
		return fmt.Errorf("set user.max_user_namespaces=0 in the new user namespace: %w", err)
	}
	// An empty bounding set means no later execve grants a capability: not to uid 0 (the
	// caller's root, mapped to itself), not through file capabilities.
	if !r.KeepCaps {
		if err := privs.DropCapabilities(); err != nil {
			return err
		}
	}
	return syscall.Exec(r.Path, r.Args, os.Environ())
}

// Command returns a command that runs name (looked up in PATH) with args in a new user
// namespace where user.max_user_namespaces is 0, with the caller's uid and gid (mapped to
// themselves) and no capabilities. It works as root and as an unprivileged user, wherever
// that user can create a user namespace; it fails if name isn't found.
func Command(name string, args ...string) (*exec.Cmd, error) {
	uid, gid := os.Geteuid(), os.Getegid()
	return command(request{}, name, args, &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		// A non-zero uid keeps no capability across execve without these; init uses
		// them to write the sysctl and empty the bounding set, then drops them.
		AmbientCaps: []uintptr{unix.CAP_SYS_RESOURCE, unix.CAP_SETPCAP},
	})
}

// CommandAsRoot is Command the way `unshare -r sh -c 'echo 0 >
// /proc/sys/user/max_user_namespaces; ...'` does it: the caller's uid and gid are 0 in the
// new namespace, and the command keeps every capability there (none over the host's
// files, mounts or network, which belong to the parent namespace).
func CommandAsRoot(name string, args ...string) (*exec.Cmd, error) {
	return command(request{KeepCaps: true}, name, args, &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
	})
}

func command(r request, name string, args []string, attr *syscall.SysProcAttr) (*exec.Cmd, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, err
	}
	r.Path, r.Args = path, append([]string{name}, args...)
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{name}
	cmd.Env = append(os.Environ(), envKey+"="+string(b))
	cmd.SysProcAttr = attr
	return cmd, nil
}

// Available reports why Command can't work on this host (nil if it can): it runs /bin/true
// through it.
func Available() error {
	cmd, err := Command("true")
	if err != nil {
		return err
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("a user namespace with max_user_namespaces=0 can't be made here: %v %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
