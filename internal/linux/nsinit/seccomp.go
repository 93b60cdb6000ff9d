//go:build linux

package nsinit

import (
	"runtime"

	"golang.org/x/net/bpf"

	"github.com/moat-sandbox/moat/internal/linux/seccomp"
)

// seccompProgram builds moat's syscall filter. It needs no spec: init builds it
// while it waits for one.
func seccompProgram() ([]bpf.RawInstruction, error) {
	return seccomp.Program(runtime.GOARCH)
}

// applySeccomp installs prog on every thread of init; the command inherits it.
func applySeccomp(prog []bpf.RawInstruction) error {
	return seccomp.Install(prog)
}
