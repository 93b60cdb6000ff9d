//go:build linux

package nsinit

import (
	"runtime"

	"github.com/moat-sandbox/moat/internal/linux/seccomp"
)

// applySeccomp installs moat's syscall filter on every thread of init; the command
// inherits it.
func applySeccomp() error {
	prog, err := seccomp.Program(runtime.GOARCH)
	if err != nil {
		return err
	}
	return seccomp.Install(prog)
}
