//go:build linux

package nsinit

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// configs are go-landlock's presets by ABI version.
var configs = []landlock.Config{landlock.V1, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7}

// applyLandlock restricts every thread of init, and so the command, to reading and
// executing everywhere the mount view shows and writing only beneath writable. It
// also scopes signals and abstract unix sockets to the sandbox (ABI 6+). This is the
// second layer under the mount view; it uses the best ABI the kernel has and fails
// when the kernel has none.
func applyLandlock(writable []string) (int, error) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return 0, fmt.Errorf("the kernel has no Landlock (%v)", err)
	}
	best := configs[min(abi, len(configs)-1)]
	// TCP rules are left unhandled: the empty network namespace is the boundary, and
	// servers on the sandbox's own loopback must work.
	cfg, err := landlock.NewConfig(best.HandledAccessFS)
	if best.Scoped != 0 {
		cfg, err = landlock.NewConfig(best.HandledAccessFS, best.Scoped)
	}
	if err != nil {
		return abi, err
	}
	fs := best.HandledAccessFS
	read := fs & landlock.AccessFSSet(llsys.AccessFSExecute|llsys.AccessFSReadFile|llsys.AccessFSReadDir|llsys.AccessFSIoctlDev)
	dev := read | fs&landlock.AccessFSSet(llsys.AccessFSWriteFile|llsys.AccessFSTruncate)
	rules := []landlock.Rule{
		landlock.PathAccess(read, "/"),
		// /dev/null, /dev/tty and ptys are written to; the tmpfs holds nothing else.
		landlock.PathAccess(dev, "/dev"),
	}
	// A rule on a file may carry file rights only.
	file := fs & landlock.AccessFSSet(llsys.AccessFSExecute|llsys.AccessFSWriteFile|llsys.AccessFSReadFile|llsys.AccessFSTruncate|llsys.AccessFSIoctlDev)
	for _, w := range append([]string{"/dev/shm"}, writable...) {
		var st unix.Stat_t
		if err := unix.Stat(w, &st); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			rules = append(rules, landlock.PathAccess(file, w))
			continue
		}
		rules = append(rules, landlock.PathAccess(fs, w))
	}
	return abi, cfg.Restrict(rules...)
}
