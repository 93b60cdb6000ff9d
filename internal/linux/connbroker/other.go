//go:build !linux

package connbroker

import (
	"errors"
	"fmt"
	"runtime"
)

// Broker is Linux-only.
type Broker struct{}

// New fails: seccomp user notification is Linux-only.
func New(p Policy) (*Broker, error) {
	return nil, fmt.Errorf("%w: the connection broker is Linux-only, this is %s", errors.ErrUnsupported, runtime.GOOS)
}
