//go:build linux

package nsinit

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// configs are go-landlock's presets by ABI version.
var configs = []landlock.Config{landlock.V1, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7}

// applyLandlock restricts the calling thread, and so the command it forks, to reading
// and executing everywhere the mount view shows and writing only beneath writable. It
// also scopes signals and abstract unix sockets to the sandbox (ABI 6+). This is the
// second layer under the mount view; it uses the best ABI the kernel has and fails
// when the kernel has none.
//
// It restricts only the calling thread, as DropCapabilities empties only its sets:
// init's other threads run init's own code alone, and keep the capabilities this one
// drops. Restricting them too (go-landlock's Restrict before ABI 8) took libpsx's
// stop-the-world signal round to every thread twice, once for no_new_privs and once
// for the domain, which cost more CPU than the rest of init's Landlock setup.
func applyLandlock(writable []string) (int, error) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return 0, fmt.Errorf("the kernel has no Landlock (%v)", err)
	}
	best := configs[min(abi, len(configs)-1)]
	fs := uint64(best.HandledAccessFS)
	// TCP rules are left unhandled: the empty network namespace is the boundary, and
	// servers on the sandbox's own loopback must work.
	attr := llsys.RulesetAttr{HandledAccessFS: fs, Scoped: uint64(best.Scoped)}
	rs, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return abi, os.NewSyscallError("landlock_create_ruleset", err)
	}
	defer unix.Close(rs)
	read := fs & (llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir | llsys.AccessFSIoctlDev)
	if err := addRule(rs, "/", read); err != nil {
		return abi, err
	}
	// /dev/null, /dev/tty and ptys are written to; the tmpfs holds nothing else.
	if err := addRule(rs, "/dev", read|fs&(llsys.AccessFSWriteFile|llsys.AccessFSTruncate)); err != nil {
		return abi, err
	}
	for _, w := range append([]string{"/dev/shm"}, writable...) {
		if err := addRule(rs, w, fs); err != nil {
			return abi, err
		}
	}
	// Without CAP_SYS_ADMIN, which DropCapabilities took, Landlock needs no_new_privs.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return abi, os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err)
	}
	if err := llsys.LandlockRestrictSelf(rs, 0); err != nil {
		return abi, os.NewSyscallError("landlock_restrict_self", err)
	}
	return abi, nil
}

// fileRights are the rights a rule on a file (not a directory) may carry.
const fileRights = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSReadFile | llsys.AccessFSTruncate | llsys.AccessFSIoctlDev

// addRule adds to ruleset rs a rule granting access beneath path, which must
// exist: on a file, only access's file rights.
func addRule(rs int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock rule: %w", &os.PathError{Op: "open", Path: path, Err: err})
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock rule: %w", &os.PathError{Op: "fstat", Path: path, Err: err})
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileRights
	}
	if err := llsys.LandlockAddPathBeneathRule(rs, &llsys.PathBeneathAttr{ParentFd: fd, AllowedAccess: access}, 0); err != nil {
		return fmt.Errorf("landlock rule for %s (%#x): %w", path, access, os.NewSyscallError("landlock_add_rule", err))
	}
	return nil
}
