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
