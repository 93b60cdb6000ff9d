package seccomp

import "errors"

// ErrUnsupportedArch is returned by [Program] for a GOARCH the filter has no syscall table for.
var ErrUnsupportedArch = errors.New("unsupported architecture")

// ErrInvalidRule is returned by [Program] when the rule table is malformed (a bug).
var ErrInvalidRule = errors.New("invalid seccomp rule")
