//go:build linux

package sandbox

import (
	"io"
	"os"

	"github.com/moat-sandbox/moat/internal/linux/launch"
	"github.com/moat-sandbox/moat/internal/linux/nsinit"
	"github.com/moat-sandbox/moat/internal/spec"
)

// Init runs the sandbox's init stage when this process is one, and never returns
// then; otherwise it returns at once. A program that uses this package must call it
// first thing in main: the sandbox re-executes the program's own binary.
func Init() {
	if len(os.Args) > 1 && os.Args[1] == launch.InitArg {
		nsinit.Main()
	}
}

func start(s *spec.Spec, stdin io.Reader, stdout, stderr io.Writer) (process, error) {
	p, err := launch.Start(s, stdin, stdout, stderr)
	if err != nil {
		return nil, &SetupError{Stage: "namespaces", Err: err,
			HintText: "moat needs unprivileged user namespaces; run 'moat doctor' to see why they are unavailable"}
	}
	return p, nil
}
