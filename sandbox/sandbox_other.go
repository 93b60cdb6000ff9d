//go:build !linux

package sandbox

import (
	"errors"
	"runtime"

	"github.com/moat-sandbox/moat/internal/spec"
	"github.com/moat-sandbox/moat/proxy"
)

// Init does nothing on this platform.
func Init() {}

func (c *Cmd) start(s *spec.Spec, env []string, srv *proxy.Server) (process, error) {
	return nil, &SetupError{Stage: "platform", Err: errors.New("moat's sandbox is not available on " + runtime.GOOS),
		HintText: "moat runs on Linux today; macOS support (Seatbelt) is planned"}
}

// spawned is the Linux namespace init started before planning; none here.
type spawned struct{}

func (c *Cmd) spawn()       {}
func (c *Cmd) dropSpawned() {}

func checkStdio(...any) error { return nil }
