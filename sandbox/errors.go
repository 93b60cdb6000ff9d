package sandbox

import (
	"fmt"
	"syscall"
)

// ExitError reports a command that exited with a non-zero status or was killed.
type ExitError struct {
	Code   int            // the exit status; 128+N when killed by signal N
	Signal syscall.Signal // the signal that killed it, or 0
}

func (e *ExitError) Error() string {
	if e.Signal != 0 {
		return fmt.Sprintf("command killed by signal %d (%v)", int(e.Signal), e.Signal)
	}
	return fmt.Sprintf("command exited with status %d", e.Code)
}

// ExecError reports a command that could not be started in the sandbox.
type ExecError struct {
	Name  string
	Err   error
	Errno syscall.Errno
}

func (e *ExecError) Error() string { return fmt.Sprintf("run %s: %v", e.Name, e.Err) }
func (e *ExecError) Unwrap() error { return e.Err }

// NotFound reports whether the command does not exist in the sandbox.
func (e *ExecError) NotFound() bool { return e.Errno == syscall.ENOENT }

// Hint says what to do about it.
func (e *ExecError) Hint() string {
	if e.NotFound() {
		return "check the command's name and PATH; the sandbox sees the host's filesystem minus what the policy hides"
	}
	return "the file exists but can't be executed in the sandbox: check its mode, or whether the policy hides it"
}

// SetupError reports a sandbox layer that could not be applied; the command did not
// run.
type SetupError struct {
	Stage    string // "mount", "landlock", "seccomp", ...
	Err      error
	HintText string
}

func (e *SetupError) Error() string { return fmt.Sprintf("sandbox %s: %v", e.Stage, e.Err) }
func (e *SetupError) Unwrap() error { return e.Err }
func (e *SetupError) Hint() string  { return e.HintText }
