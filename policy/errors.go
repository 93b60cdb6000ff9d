package policy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors. Every error from Parse and Compile is an *Error whose Err wraps
// exactly one of these, so callers can test the class with errors.Is. LoadFile's
// read errors wrap the fs error instead (errors.Is(err, fs.ErrNotExist)).
var (
	ErrSyntax      = errors.New("invalid JSONC")
	ErrUnknownKey  = errors.New("unknown key")
	ErrDuplicate   = errors.New("duplicate key")
	ErrType        = errors.New("wrong type")
	ErrValue       = errors.New("invalid value")
	ErrPath        = errors.New("invalid path")
	ErrDomain      = errors.New("invalid domain pattern")
	ErrUnsupported = errors.New("not supported by moat")
	ErrConflict    = errors.New("conflicting settings")
	ErrEnv         = errors.New("invalid environment")
	ErrProfile     = errors.New("invalid profile")
	ErrUntrusted   = errors.New("untrusted project setting")
)

// Error is a settings or flag error with where it was found and what to do about it.
// Error() reads like "settings.json:12:5: filesystem.denyRead[2]: path "a\x00" contains
// a NUL byte"; the CLI prints Hint() on a line of its own.
type Error struct {
	File      string // settings file name as given to Parse; empty for flags and env
	Line, Col int    // 1-based; 0 when unknown (flags, env)
	Key       string // key path such as filesystem.denyRead[2], or a flag such as --deny-read
	Err       error  // wraps one of the Err* sentinels
	HintText  string // what the user can do; may be empty
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
			if e.Col > 0 {
				b.WriteString(":" + strconv.Itoa(e.Col))
			}
		}
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	if e.Err == nil {
		b.WriteString("unknown error") // a bug in this package if ever printed
	} else {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Hint says what to do about the error; empty when there is nothing useful to say.
func (e *Error) Hint() string { return e.HintText }

// detail is a message that unwraps to a sentinel without repeating its text.
type detail struct {
	kind error
	msg  string
}

func (d *detail) Error() string { return d.msg }
func (d *detail) Unwrap() error { return d.kind }

func errf(kind error, format string, args ...any) error {
	return &detail{kind: kind, msg: fmt.Sprintf(format, args...)}
}
