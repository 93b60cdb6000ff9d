//go:build linux

package nsinit

import (
	"runtime"

	"golang.org/x/net/bpf"

	"github.com/moat-sandbox/moat/internal/linux/seccomp"
)

// seccompProgram returns moat's syscall filter, compiled at development time
// (seccomp.Program). It needs no spec: init gets it while it waits for one.
func seccompProgram() ([]bpf.RawInstruction, error) {
	return seccomp.Program(runtime.GOARCH)
}

// applySeccomp installs prog on every thread of init; the command inherits it.
func applySeccomp(prog []bpf.RawInstruction) error {
	return seccomp.Install(prog)
}
