package direct

import (
	"os"
	"syscall"

	"github.com/moat-sandbox/moat/internal/linux/connbroker"
	"github.com/moat-sandbox/moat/internal/spec"
)

// Spec is everything the direct mode's stages need. The embedded spec.Spec is what the
// namespace init gets, read differently: each mount step becomes Landlock rights for its
// path (bind-rw: read and write; bind-ro and placeholder: read; mask-dir, mask-file and
// tmpfs: nothing), the deepest step deciding, as the deepest mount would.
type Spec struct {
	spec.Spec

	// TempDir is an empty directory, mode 0700, the supervisor made for this run and
	// removes afterwards; TMPDIR, TMP, TEMP and TEMPDIR point at it.
	TempDir string `json:"tempDir"`
	// TempDirMade says Start made TempDir (and Wait removes it). If the supervisor
	// dies first (SIGKILL), the supervisor stage removes it once the sandbox is gone.
	TempDirMade bool `json:"tempDirMade,omitempty"`
	// Devices are device files besides the built-in list (/dev/null, /dev/tty, ...) the
	// command may read and write: the terminal its standard streams are on.
	Devices []string `json:"devices,omitempty"`
	// Net is what the command may connect to.
	Net connbroker.Policy `json:"net"`
	// AllowUnscopedSignals lets the sandbox run on a kernel whose Landlock can't scope
	// signals (ABI < 6): the command can then signal every process of the user, the
	// supervisor included. Without it, Main refuses such a kernel.
	AllowUnscopedSignals bool `json:"allowUnscopedSignals,omitempty"`
	// Session makes Start run the stages, and so the command, in a session of
	// their own, which has no controlling terminal; it is not sent to the stage.
	Session bool `json:"-"`
	// Terminal, when set, is the controlling terminal of that session (a pty's
	// slave): the command runs as its foreground job, and Stopped is called, from
	// Wait, each time the command is stopped by a signal.
	Terminal *os.File             `json:"-"`
	Stopped  func(syscall.Signal) `json:"-"`
}
