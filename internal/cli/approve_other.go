//go:build !linux

package cli

import (
	"errors"
	"os"
)

// keyMode: questions at the terminal are asked on Linux only.
func keyMode(tty *os.File) (restore func(), err error) {
	return nil, errors.New("asking at the terminal is not implemented on this platform")
}

func drainInput(tty *os.File) {}
