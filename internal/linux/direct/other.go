//go:build !linux

package direct

import (
	"errors"
	"fmt"
	"runtime"
)

var errLinux = fmt.Errorf("%w: the direct mode is Linux-only, this is %s", errors.ErrUnsupported, runtime.GOOS)

// Main exits: the direct mode is Linux-only.
func Main() { panic(errLinux) }

// ExecMain exits: the direct mode is Linux-only.
func ExecMain() { panic(errLinux) }
