//go:build !linux

// Package reaper makes a process the reaper of everything it starts; it is Linux-only.
package reaper

import (
	"errors"
	"fmt"
	"runtime"
)

var errLinux = fmt.Errorf("%w: child subreapers are Linux-only, this is %s", errors.ErrUnsupported, runtime.GOOS)

// Become fails: child subreapers are Linux-only.
func Become() error { return errLinux }

// KillAll fails: child subreapers are Linux-only.
func KillAll() (int, error) { return 0, errLinux }

// Children fails: child subreapers are Linux-only.
func Children() ([]int, error) { return nil, errLinux }
