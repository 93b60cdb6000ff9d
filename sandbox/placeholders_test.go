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

	run := func() *placeholders { return planRun(t, &pol) }
	killed := run()
	killed.die()
	if _, err := os.Stat(vscode); err != nil {
		t.Fatal("control: the placeholder went with the killed run")
	}

	next := run()
	next.release()
	if _, err := os.Lstat(vscode); !os.IsNotExist(err) {
		t.Errorf("the killed run's placeholder is still there after the next run ended (%v)", err)
	}
}

// planRun plans a run of pol as moat run does, placeholders made and held, and
// checks that the .vscode placeholder exists.
func planRun(t *testing.T, pol *policy.Policy) *placeholders {
	t.Helper()
	ph, err := lockPlaceholders()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newPlan(pol, planOptions{createPlaceholders: true, record: ph.record, hold: ph.hold}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(pol.Cwd, ".vscode")); err != nil || !fi.IsDir() {
		t.Fatalf("no placeholder at %s: %v", filepath.Join(pol.Cwd, ".vscode"), err)
	}
	return ph
}

// die is what the kernel does when the process dies: its descriptors close, its
// locks go, and nothing is removed.
func (p *placeholders) die() {
	for _, g := range p.groups {
		if g.list != nil {
			g.list.Close()
		}
		g.lock.Close()
	}
	p.groups = nil
}

// TestPlaceholdersPerDirectory: a run's placeholders go when it ends even while
// a run in another workspace lives, and stay while a run that may cover them
// (one in the same workspace) lives.
func TestPlaceholdersPerDirectory(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	policyIn := func(ws string) *policy.Policy {
		return &policy.Policy{Cwd: ws, Home: t.TempDir(), AllowWrite: []policy.Rule{{Path: ws, Origin: "test"}},
			Protected: []policy.Protected{{Name: ".vscode", Dir: true, Where: policy.WhereWorkspace, Reason: "r"}}}
	}
	a, b := t.TempDir(), t.TempDir()
	inA, inB := filepath.Join(a, ".vscode"), filepath.Join(b, ".vscode")
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }

	runB := planRun(t, policyIn(b))
	runA := planRun(t, policyIn(a))
	runA.release()
	if exists(inA) {
		t.Errorf("the placeholder of the ended run in %s stayed while a run in another workspace lives", a)
	}
	if !exists(inB) {
		t.Fatalf("the live run's placeholder %s went when the other run ended", inB)
	}

	runB2 := planRun(t, policyIn(b)) // a second run in b: it finds b's placeholder and holds it
	runB.release()
	if !exists(inB) {
		t.Errorf("%s went while another run in that workspace lives", inB)
	}
	runB2.release()
	if exists(inB) {
		t.Errorf("%s stayed after the last run in that workspace ended", inB)
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
