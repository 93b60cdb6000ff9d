//go:build !linux

// Package userns0 runs commands, for tests, in a user namespace that can't create user
// namespaces; it is Linux-only.
package userns0

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
)

var errLinux = fmt.Errorf("%w: user namespaces are Linux-only, this is %s", errors.ErrUnsupported, runtime.GOOS)

// Command fails: user namespaces are Linux-only.
func Command(name string, args ...string) (*exec.Cmd, error) { return nil, errLinux }

// CommandAsRoot fails: user namespaces are Linux-only.
func CommandAsRoot(name string, args ...string) (*exec.Cmd, error) { return nil, errLinux }

// Available fails: user namespaces are Linux-only.
func Available() error { return errLinux }
