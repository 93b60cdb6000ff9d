//go:build !linux

package fusemask

import (
	"errors"
	"runtime"
)

// Check reports that there are no FUSE masks on this platform.
func Check() error { return errors.New("moat's FUSE masks are Linux only, not for " + runtime.GOOS) }

// Fix says there is nothing to fix here.
func Fix(error) string { return "" }
