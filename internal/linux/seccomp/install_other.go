//go:build !linux

package seccomp

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/net/bpf"
)

// Install fails: seccomp filters exist only on Linux.
func Install(prog []bpf.RawInstruction) error {
	return fmt.Errorf("install seccomp filter: %w: seccomp is Linux-only, this is %s", errors.ErrUnsupported, runtime.GOOS)
}
