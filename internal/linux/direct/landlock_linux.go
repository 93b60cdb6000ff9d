package direct

import (
	"errors"
	"fmt"
	"os"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// LandlockABI returns the kernel's Landlock ABI version, or an error if it has none:
// the supervisor checks it before choosing the direct mode (ABI 6 scopes signals).
func LandlockABI() (int, error) { return landlockABI() }

// landlockABI returns the kernel's Landlock ABI version, or an error if it has none.
func landlockABI() (int, error) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return 0, fmt.Errorf("the kernel has no Landlock (%v)", err)
	}
	return abi, nil
}

// buildRuleset makes a Landlock ruleset holding plan's rules, ready for
// landlock_restrict_self in the stage that execs the command. It also handles TCP connect
// (ABI 4) with no port allowed, so the command's own connect calls can never succeed even
// if one escaped the broker (the broker connects from outside the domain), and scopes
// signals and abstract unix sockets to the sandbox (ABI 6).
func buildRuleset(plan *Plan, abi int) (*os.File, error) {
	attr := llsys.RulesetAttr{HandledAccessFS: handledFS(abi)}
	if abi >= 4 {
		attr.HandledAccessNet = llsys.AccessNetConnectTCP
	}
	if abi >= 6 {
		attr.Scoped = llsys.ScopeAbstractUnixSocket | llsys.ScopeSignal
	}
	fd, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return nil, os.NewSyscallError("landlock_create_ruleset", err)
	}
	rs := os.NewFile(uintptr(fd), "landlock-ruleset")
	for _, r := range plan.Rules {
		// O_NOFOLLOW: a rule is always on the path's own inode, never a link's target.
		pfd, err := unix.Open(r.Path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // gone since the plan was made: nothing to grant
		}
		if err != nil {
			rs.Close()
			return nil, fmt.Errorf("landlock rule for %s: %w", r.Path, err)
		}
		var st unix.Stat_t
		if unix.Fstat(pfd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(pfd)
			continue
		}
		err = llsys.LandlockAddPathBeneathRule(fd, &llsys.PathBeneathAttr{ParentFd: pfd, AllowedAccess: r.Access}, 0)
		unix.Close(pfd)
		if err != nil {
			rs.Close()
			return nil, fmt.Errorf("landlock rule for %s (%#x): %w", r.Path, r.Access, os.NewSyscallError("landlock_add_rule", err))
		}
	}
	return rs, nil
}

// restrict enforces the ruleset on every thread of the calling process, with
// no_new_privs, as go-landlock does on kernels without Landlock's own thread sync.
func restrict(rs *os.File) error {
	if err := llsys.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err)
	}
	if err := llsys.AllThreadsLandlockRestrictSelf(int(rs.Fd()), 0); err != nil {
		return os.NewSyscallError("landlock_restrict_self", err)
	}
	return nil
}
