//go:build !linux

package seccomp

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/net/bpf"
)

// InstallListener fails: seccomp filters exist only on Linux.
func InstallListener(prog []bpf.RawInstruction) (*os.File, error) {
	return nil, fmt.Errorf("install seccomp listener filter: %w: seccomp is Linux-only, this is %s", errors.ErrUnsupported, runtime.GOOS)
}
