package direct

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/spec"
)

func mkTree(t *testing.T, root string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(root, f)
		if strings.HasSuffix(f, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type planCase struct {
	name   string
	files  []string
	mounts func(root string) []spec.Mount
	// zone, guarded and listable, relative to root
	zone, listable []string
	pinned, start  []string
}

func testSpec(root string, mounts []spec.Mount) *Spec {
	return &Spec{Spec: spec.Spec{Mounts: append([]spec.Mount{{Op: spec.OpBindRO, Path: root, Dir: true}}, mounts...)}}
}

func TestPlan(t *testing.T) {
	abi, err := landlockABI()
	if err != nil {
		t.Skip(err)
	}
	for _, tc := range []planCase{
		{
			name:  "workspace with protected git dirs, a denied file and a denied home dir",
			files: []string{"home/.ssh/key", "home/notes", "home/w/.git/hooks/x", "home/w/.git/config", "home/w/.git/HEAD", "home/w/.git/objects/", "home/w/.env", "home/w/src/a", "home/w/README", "home/w/link"},
			mounts: func(r string) []spec.Mount {
				w := filepath.Join(r, "home/w")
				return []spec.Mount{
					{Op: spec.OpMaskDir, Path: filepath.Join(r, "home/.ssh")},
					{Op: spec.OpBindRW, Path: w},
					{Op: spec.OpMaskFile, Path: filepath.Join(w, ".env")},
					{Op: spec.OpBindRO, Path: filepath.Join(w, ".git/hooks")},
					{Op: spec.OpBindRO, Path: filepath.Join(w, ".git/config")},
				}
			},
			zone:     []string{"home/w", "home/w/.git"},
			listable: []string{"home/.ssh"},
			pinned:   []string{"home/w/.git", "home/w/.env", "home/w/.git/hooks", "home/w/.git/config"},
			start:    []string{"home/w/README", "home/w/src", "home/w/.git/HEAD", "home/w/.git/objects"},
		},
		{
			name:  "plain writable workspace: no zone at all",
			files: []string{"w/src/a", "w/README"},
			mounts: func(r string) []spec.Mount {
				return []spec.Mount{{Op: spec.OpBindRW, Path: filepath.Join(r, "w")}}
			},
		},
		{
			name:  "a protected name that doesn't exist makes its parent a zone and is reserved",
			files: []string{"w/src/a"},
			mounts: func(r string) []spec.Mount {
				return []spec.Mount{
					{Op: spec.OpBindRW, Path: filepath.Join(r, "w")},
					{Op: spec.OpBindRO, Path: filepath.Join(r, "w/.claude/settings.json")},
				}
			},
			zone:  []string{"w"},
			start: []string{"w/src"},
		},
		{
			name:  "a denied symlink constrains nothing",
			files: []string{"w/src/a", "secret"},
			mounts: func(r string) []spec.Mount {
				os.Symlink(filepath.Join(r, "secret"), filepath.Join(r, "w/link"))
				return []spec.Mount{
					{Op: spec.OpBindRW, Path: filepath.Join(r, "w")},
					{Op: spec.OpMaskFile, Path: filepath.Join(r, "w/link")},
					{Op: spec.OpMaskFile, Path: filepath.Join(r, "secret")},
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			mkTree(t, root, tc.files...)
			s := testSpec(root, tc.mounts(root))
			plan, err := NewPlan(s, abi)
			if err != nil {
				t.Fatal(err)
			}
			rel := func(paths []string) []string {
				var out []string
				for _, p := range paths {
					if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
						out = append(out, r)
					}
				}
				slices.Sort(out)
				return out
			}
			if got := rel(plan.Zone); !slices.Equal(got, tc.zone) {
				t.Errorf("zone %v, want %v", got, tc.zone)
			}
			if got := rel(plan.Listable); !slices.Equal(got, tc.listable) {
				t.Errorf("listable %v, want %v", got, tc.listable)
			}
			for _, p := range tc.pinned {
				if !plan.Pinned[fileID(t, filepath.Join(root, p))] {
					t.Errorf("%s is not pinned", p)
				}
			}
			for _, p := range tc.start {
				id := fileID(t, filepath.Join(root, p))
				if !plan.Start[id] || plan.Pinned[id] {
					t.Errorf("%s: start %v pinned %v, want a start entry, not pinned", p, plan.Start[id], plan.Pinned[id])
				}
			}
			checkRights(t, root, s, plan, abi)
		})
	}
}

func fileID(t *testing.T, path string) FileID {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return idOf(&st)
}

// checkRights walks the tree and compares, for every path, what the rules grant (the union
// over its ancestors, as Landlock computes it) with what the policy wants: never more,
// and less only where the plan says so (a guarded directory's lost rights; listing in a
// denied directory).
func checkRights(t *testing.T, root string, s *Spec, plan *Plan, abi int) {
	t.Helper()
	pl := &planner{handled: handledFS(abi), nodes: nodesOf(s)}
	for p, n := range pl.nodes {
		pl.nodes[p] = node{n.rights & pl.handled, n.reason}
	}
	byPath := map[string]uint64{}
	for _, r := range plan.Rules {
		byPath[r.Path] |= r.Access
	}
	guarded := map[string]uint64{}
	for _, g := range plan.Guarded {
		guarded[g.Path] = g.Lost
	}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		var granted uint64
		for _, a := range ancestors(path) {
			granted |= byPath[a]
		}
		want, _ := pl.want(path)
		mask := pl.handled
		if !d.IsDir() {
			mask &= fileRights
		}
		granted &= mask
		want &= mask
		extra := granted &^ want
		for _, l := range plan.Listable {
			if path == l || strings.HasPrefix(path, l+"/") {
				extra &^= llsys.AccessFSReadDir
			}
		}
		if extra != 0 {
			t.Errorf("%s: granted %#x beyond the policy's %#x", path, extra, want)
		}
		missing := want &^ granted &^ guarded[path]
		if missing != 0 {
			t.Errorf("%s: lacks %#x the policy gives it, and isn't a guarded directory", path, missing)
		}
		return nil
	})
}

func ancestors(path string) []string {
	out := []string{path}
	for path != "/" {
		path = filepath.Dir(path)
		out = append(out, path)
	}
	return out
}

func TestPlanRejectsRelativePaths(t *testing.T) {
	abi, err := landlockABI()
	if err != nil {
		t.Skip(err)
	}
	s := &Spec{Spec: spec.Spec{Mounts: []spec.Mount{{Op: spec.OpBindRW, Path: "work/../x"}}}}
	if _, err := NewPlan(s, abi); err == nil {
		t.Error("a relative mount path was accepted")
	}
}
