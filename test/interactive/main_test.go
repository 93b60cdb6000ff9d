// Package interactive_test runs a real "moat run" on a pseudo-terminal, as a user at
// a terminal would, and judges by what the terminal shows (the pty master's output),
// the terminal's own state (termios, window size) and moat's exit status. Deadlines
// only guard against hangs; nothing is timed.
//
// The tests build moat once (or use $MOAT_BIN) and run as root or as any other user:
//
//	go test ./test/interactive/ -v
//	go test -c -o /tmp/interactive.test ./test/interactive && MOAT_BIN=/tmp/moat su moattest -c '/tmp/interactive.test -test.v'
package interactive_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/moat-sandbox/moat/internal/linux/probe"
	"github.com/moat-sandbox/moat/internal/testmoat"
)

var (
	moatBin string // the moat binary under test
	baseDir string // every test's workspace and home live under it
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	var cleanup func()
	var err error
	baseDir, moatBin, cleanup, err = testmoat.Setup("interactive", "MOAT_INTERACTIVE_DIR", "MOAT_INTERACTIVE_KEEP")
	defer cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

var (
	probeOnce sync.Once
	lacking   []string // what moat run can't start without and this host lacks
)

// needSandbox skips the test, naming what is missing and why, unless this host has
// the kernel features moat run can't start without.
func needSandbox(t *testing.T) {
	t.Helper()
	probeOnce.Do(func() {
		for _, f := range probe.Detect().Lacking() {
			if f.Required && (f.Status == probe.Missing || f.Name == probe.UserNS) {
				lacking = append(lacking, fmt.Sprintf("%s (%s: %s)", f.Name, f.Status, f.Detail))
			}
		}
	})
	if len(lacking) > 0 {
		t.Skip("moat run can't start on this host, which lacks " + strings.Join(lacking, ", "))
	}
}

// workspace makes a workspace and a home directory next to it for one test and
// returns the workspace and the environment of every command the test runs. It
// skips the test where moat run can't start.
func workspace(t *testing.T) (ws string, env []string) {
	t.Helper()
	needSandbox(t)
	name := t.Name()[strings.LastIndex(t.Name(), "/")+1:]
	if len(name) > 20 {
		name = name[:20]
	}
	root, err := os.MkdirTemp(baseDir, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	for _, d := range []string{ws, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return ws, []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"TERM=xterm",
		"LC_ALL=C",
		// The same REPL on every Python: 3.13's new one draws differently.
		"PYTHON_BASIC_REPL=1",
		"PYTHONDONTWRITEBYTECODE=1",
	}
}
