//go:build !linux

package sandbox

import (
	"os"
	"syscall"
)

// jobControl: running the command as the terminal's foreground job is not
// implemented on this platform.
type jobControl struct{}

func (j *jobControl) withTerminal(fn func(tty *os.File) error) error { return errNoTerminal }
func (j *jobControl) done()                                          {}
