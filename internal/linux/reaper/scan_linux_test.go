package reaper

import (
	"os/exec"
	"slices"
	"testing"
)

// TestChildrenByScan checks the /proc/PID/stat fallback against /proc/self/task/*/children.
func TestChildrenByScan(t *testing.T) {
	var want []int
	for range 3 {
		c := exec.Command("sleep", "100")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		want = append(want, c.Process.Pid)
	}
	slices.Sort(want)
	fromTask, err := Children()
	if err != nil {
		t.Fatal(err)
	}
	fromScan, err := childrenByScan()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(fromTask)
	slices.Sort(fromScan)
	for _, got := range [][]int{fromTask, fromScan} {
		for _, pid := range want {
			if !slices.Contains(got, pid) {
				t.Errorf("child %d missing from %v", pid, got)
			}
		}
	}
	if !slices.Equal(fromTask, fromScan) {
		t.Errorf("task children %v, scan %v", fromTask, fromScan)
	}
	if ppid, ok := parentOf(want[0]); !ok || ppid <= 0 {
		t.Errorf("parentOf(%d) = %d, %v", want[0], ppid, ok)
	}
}
