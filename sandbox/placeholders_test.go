package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moat-sandbox/moat/policy"
)

// TestPlaceholdersOfAnEndedRun: a run that ends without releasing its placeholders
// (killed, or failed after planning) leaves them recorded, and the next run to
// end removes them. They are recorded before they are made: made and unrecorded,
// no run would remove them, and the next runs would take them for the user's.
func TestPlaceholdersOfAnEndedRun(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	ws := t.TempDir()
	pol := policy.Policy{Cwd: ws, Home: t.TempDir(), AllowWrite: []policy.Rule{{Path: ws, Origin: "test"}},
		Protected: []policy.Protected{{Name: ".vscode", Dir: true, Where: policy.WhereWorkspace, Reason: "r"}}}
	vscode := filepath.Join(ws, ".vscode")

	run := func() *placeholders {
		ph, err := lockPlaceholders()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := newPlan(&pol, planOptions{createPlaceholders: true, record: ph.record}); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(vscode); err != nil || !fi.IsDir() {
			t.Fatalf("no placeholder at %s: %v", vscode, err)
		}
		return ph
	}
	killed := run()
	// What the kernel does when the process dies: its descriptors close, its lock goes.
	killed.list.Close()
	killed.lock.Close()
	if _, err := os.Stat(vscode); err != nil {
		t.Fatal("control: the placeholder went with the killed run")
	}

	next := run()
	next.release()
	if _, err := os.Lstat(vscode); !os.IsNotExist(err) {
		t.Errorf("the killed run's placeholder is still there after the next run ended (%v)", err)
	}
}

// The state dir in /tmp is named by the uid the parent namespace sees, so that a user's
// runs inside `unshare -r` (uid 0 there) don't collide with the real root's /tmp/moat-0.
func TestMapUID(t *testing.T) {
	for _, c := range []struct {
		uidMap    string
		uid, want int
	}{
		{"         0          0 4294967295\n", 1001, 1001}, // the initial namespace
		{"         0       1001          1\n", 0, 1001},    // unshare -r as uid 1001
		{"      1001       1001          1\n", 1001, 1001},
		{"         0     100000      65536\n", 1000, 101000}, // a container's range
		{"         0     100000      65536\n", 70000, 70000}, // unmapped: left as it is
		{"", 5, 5},
		{"garbage\n0 7 1\n", 0, 7},
	} {
		if got := mapUID(c.uidMap, c.uid); got != c.want {
			t.Errorf("mapUID(%q, %d) = %d, want %d", c.uidMap, c.uid, got, c.want)
		}
	}
}
