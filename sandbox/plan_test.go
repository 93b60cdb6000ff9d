package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/spec"
	"github.com/moat-sandbox/moat/policy"
)

// TestPlan checks the mount steps the planner emits for rule combinations, on a
// real tree. Kernel enforcement of these steps is tested in test/escape.
func TestPlan(t *testing.T) {
	// Outside /tmp: the sandbox's /tmp is private, so rules below it need no steps.
	base, err := os.UserHomeDir()
	must(t, err)
	root, err := os.MkdirTemp(base, ".moat-plantest-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	ws := filepath.Join(root, "ws")
	home := filepath.Join(root, "home")
	for _, d := range []string{"ws/src", "ws/.git/hooks", "ws/.vscode", "ws/sub", "home/secret/public/deeper"} {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	for _, f := range []string{"ws/.env", "ws/sub/.env", "ws/.git/config", "ws/prod.json", "home/secret/key", "ws/.envrc-target"} {
		must(t, os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644))
	}
	must(t, os.Symlink(filepath.Join(home, "secret", "key"), filepath.Join(ws, "keylink")))
	rule := func(p string) policy.Rule { return policy.Rule{Path: p, Origin: "test"} }

	tests := []struct {
		name string
		pol  policy.Policy
		want []string // "op path" steps that must appear, in this relative order
		not  []string // "op path" steps that must not appear
	}{{
		name: "workspace writable, secret hidden",
		pol:  policy.Policy{AllowWrite: []policy.Rule{rule(ws)}, DenyRead: []policy.Rule{rule(filepath.Join(home, "secret"))}},
		want: []string{"tmpfs /tmp", "bind-rw " + ws, "mask-dir " + home + "/secret"},
	}, {
		name: "allowRead re-opens, deeper denyRead stays denied",
		pol: policy.Policy{
			DenyRead:  []policy.Rule{rule(filepath.Join(home, "secret")), rule(filepath.Join(home, "secret/public/deeper"))},
			AllowRead: []policy.Rule{rule(filepath.Join(home, "secret/public"))},
		},
		want: []string{"mask-dir " + home + "/secret", "bind-ro " + home + "/secret/public", "mask-dir " + home + "/secret/public/deeper"},
	}, {
		name: "deny wins a tie",
		pol:  policy.Policy{DenyRead: []policy.Rule{rule(filepath.Join(home, "secret"))}, AllowRead: []policy.Rule{rule(filepath.Join(home, "secret"))}},
		want: []string{"mask-dir " + home + "/secret"},
		not:  []string{"bind-ro " + home + "/secret"},
	}, {
		name: "denyWrite inside writable, and it wins over a deeper allowWrite",
		pol: policy.Policy{
			AllowWrite: []policy.Rule{rule(ws), rule(filepath.Join(ws, "sub"))},
			DenyWrite:  []policy.Rule{rule(filepath.Join(ws, "prod.json")), rule(filepath.Join(ws, "sub"))},
		},
		want: []string{"bind-rw " + ws, "bind-ro " + ws + "/prod.json", "bind-ro " + ws + "/sub"},
		not:  []string{"bind-rw " + ws + "/sub"},
	}, {
		name: "denyRead inside writable workspace",
		pol:  policy.Policy{AllowWrite: []policy.Rule{rule(ws)}, DenyRead: []policy.Rule{rule(filepath.Join(ws, ".env"))}},
		want: []string{"bind-rw " + ws, "mask-file " + ws + "/.env"},
	}, {
		name: "glob deny matches every .env",
		pol:  policy.Policy{AllowWrite: []policy.Rule{rule(ws)}, DenyRead: []policy.Rule{{Path: ws + "/**/.env", Glob: true, Origin: "test"}}},
		want: []string{"mask-file " + ws + "/.env", "mask-file " + ws + "/sub/.env"},
		not:  []string{"mask-file " + ws + "/prod.json"},
	}, {
		name: "deny on a symlink covers the link and its target",
		pol:  policy.Policy{AllowWrite: []policy.Rule{rule(ws)}, DenyRead: []policy.Rule{rule(filepath.Join(ws, "keylink"))}},
		want: []string{"mask-file " + ws + "/keylink", "mask-file " + home + "/secret/key"},
	}, {
		name: "protected paths read-only, .git pinned",
		pol: policy.Policy{AllowWrite: []policy.Rule{rule(ws)}, Protected: []policy.Protected{
			{Name: ".git/hooks", Dir: true, Where: policy.WhereWorkspace, Reason: "r"},
			{Name: ".git/config", Where: policy.WhereWorkspace, Reason: "r"},
			{Name: ".vscode", Dir: true, Where: policy.WhereWorkspace, Reason: "r"},
		}},
		want: []string{"bind-rw " + ws, "bind-rw " + ws + "/.git", "bind-ro " + ws + "/.git/config", "bind-ro " + ws + "/.git/hooks"},
	}, {
		name: "protected paths of a read-only tree need nothing",
		pol:  policy.Policy{Protected: []policy.Protected{{Name: ".vscode", Dir: true, Where: policy.WhereWorkspace, Reason: "r"}}},
		not:  []string{"bind-ro " + ws + "/.vscode"},
	}, {
		name: "rules under the private /tmp need no step unless they re-open",
		pol:  policy.Policy{DenyRead: []policy.Rule{rule(tmpDir(t) + "/secret")}},
		not:  []string{"mask-file " + tmpDir(t) + "/secret"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pol := tc.pol
			pol.Cwd, pol.Home = ws, home
			p, err := newPlan(&pol, planOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range p.mounts {
				got = append(got, string(m.Op)+" "+m.Path)
			}
			last := -1
			for _, w := range tc.want {
				i := indexOf(got, w)
				if i < 0 {
					t.Fatalf("missing step %q in\n%s", w, strings.Join(got, "\n"))
				}
				if i < last {
					t.Fatalf("step %q out of order in\n%s", w, strings.Join(got, "\n"))
				}
				last = i
			}
			for _, n := range tc.not {
				if indexOf(got, n) >= 0 {
					t.Fatalf("unexpected step %q in\n%s", n, strings.Join(got, "\n"))
				}
			}
			for _, m := range p.mounts {
				if (m.Op == spec.OpBindRW || m.Op == spec.OpBindRO) && m.Source == "" {
					t.Fatalf("bind without source: %+v", m)
				}
			}
		})
	}
}

func TestEnvSockets(t *testing.T) {
	got := envSocketPaths([]string{
		"SSH_AUTH_SOCK=/tmp/ssh-x/agent.1", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1/bus,guid=1",
		"DOCKER_HOST=unix:///var/run/docker.sock", "DOCKER_HOST2=unix:///nope", "SSH_AUTH_SOCK=relative",
	})
	want := "/tmp/ssh-x/agent.1 /run/user/1/bus /var/run/docker.sock relative"
	if strings.Join(got, " ") != want {
		t.Fatalf("envSocketPaths = %v, want %s", got, want)
	}
}

// tmpDir makes a directory with a file "secret" under the host's /tmp.
func tmpDir(t *testing.T) string {
	d := filepath.Join(os.TempDir(), "moat-plantest-tmp")
	must(t, os.MkdirAll(d, 0o755))
	must(t, os.WriteFile(filepath.Join(d, "secret"), []byte("x"), 0o644))
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
