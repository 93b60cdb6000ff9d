//go:build !linux

package probe

import (
	"fmt"
	"os"
	"runtime"
)

// Detect reports every feature missing: moat's sandbox is built from Linux kernel features.
func Detect() Report {
	r := Report{
		Kernel: runtime.GOOS,
		Arch:   runtime.GOARCH,
		User:   fmt.Sprintf("uid %d", os.Geteuid()),
		Root:   os.Geteuid() == 0,
	}
	for _, name := range []string{UserNS, MountNS, PIDNS, NetNS, IPCNS, UTSNS, Landlock, Seccomp,
		SeccompNotify, CgroupV2, MountSetattr, Pidfd, PidfdGetfd, TIOCSTI, MPTCP} {
		r.Features = append(r.Features, Feature{
			Name:     name,
			Status:   Missing,
			Detail:   "not Linux",
			Meaning:  "moat's sandbox needs Linux",
			Fix:      "run moat on Linux (a VM or WSL 2 will do)",
			Required: true,
		})
	}
	r.Mode = RunMode{Name: ModeNone, Detail: "moat's sandbox needs Linux"}
	return r
}
