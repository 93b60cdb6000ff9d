//go:build linux

package nsinit

import (
	"os/exec"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestTaskStopped follows a real process through SIGSTOP, SIGCONT and its end, as
// the freeze reads it from /proc.
func TestTaskStopped(t *testing.T) {
	cmd := exec.Command("sleep", "100")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep to run:", err)
	}
	defer cmd.Process.Kill()
	pid := strconv.Itoa(cmd.Process.Pid)
	waitFor := func(want bool, what string) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); taskStopped(pid, pid) != want; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: taskStopped = %v, want %v", what, !want, want)
			}
		}
	}
	waitFor(false, "sleeping")
	if err := unix.Kill(cmd.Process.Pid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(true, "after SIGSTOP")
	if err := unix.Kill(cmd.Process.Pid, unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if taskStopped(pid, pid) {
		t.Errorf("still stopped right after SIGCONT returned: ownStop relies on that")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !taskStopped(pid, pid) {
		t.Errorf("a reaped process counts as running")
	}
}
