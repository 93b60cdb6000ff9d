package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/moat-sandbox/moat/policy"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadGitConfig(t *testing.T) {
	dir := t.TempDir()
	home, _ := os.UserHomeDir()
	for _, tc := range []struct {
		name, config string
		hooks        []string
		includes     []string
	}{
		{"none", "[core]\n\tbare = false\n", nil, nil},
		{"relative hooksPath is under the work tree", "[core]\n\thooksPath = .githooks\n", []string{"/wt/.githooks"}, nil},
		{"case-insensitive section and key", "[CORE]\n\tHooksPath = hooks2\n", []string{"/wt/hooks2"}, nil},
		{"quoted with comment", "[core]\n\thooksPath = \"my hooks\" # team hooks\n", []string{"/wt/my hooks"}, nil},
		{"every value counts", "[core]\nhooksPath = a\n[core]\nhooksPath = /abs/b\n", []string{"/wt/a", "/abs/b"}, nil},
		{"byte order mark", "\xef\xbb\xbf[core]\n\thooksPath = bom\n", []string{"/wt/bom"}, nil},
		{"continued line", "[core]\n\thooksPath = .git\\\nhooks2\n", []string{"/wt/.githooks2"}, nil},
		{"hooksPath in another section is not it", "[alias]\n\thooksPath = x\n", nil, nil},
		{"tilde", "[core]\nhooksPath = ~/hooks\n", []string{filepath.Join(home, "hooks")}, nil},
		{"include relative to the config's dir", "[include]\n\tpath = ../shared.cfg\n", nil, []string{filepath.Join(filepath.Dir(dir), "shared.cfg")}},
		{"includeIf", "[includeIf \"gitdir:~/work/\"]\n\tpath = /etc/work.cfg\n", nil, []string{"/etc/work.cfg"}},
		{"commented out", "[core]\n# hooksPath = x\n; hooksPath = y\n", nil, nil},
		{"section header with key on the same line", "[core] hooksPath = inline\n", []string{"/wt/inline"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(dir, "config")
			write(t, cfg, tc.config)
			hooks, inc := readGitConfig(cfg, "/wt", 0)
			if !slices.Equal(hooks, tc.hooks) || !slices.Equal(inc, tc.includes) {
				t.Errorf("got hooksPath %q includes %q, want %q %q", hooks, inc, tc.hooks, tc.includes)
			}
		})
	}
	t.Run("included file sets hooksPath", func(t *testing.T) {
		write(t, filepath.Join(dir, "inc.cfg"), "[core]\nhooksPath = from-include\n")
		write(t, filepath.Join(dir, "config"), "[include]\npath = inc.cfg\n")
		hooks, inc := readGitConfig(filepath.Join(dir, "config"), "/wt", 0)
		if !slices.Equal(hooks, []string{"/wt/from-include"}) || len(inc) != 1 {
			t.Errorf("got %q %q", hooks, inc)
		}
	})
	t.Run("includeIf that may not apply, with another hooksPath", func(t *testing.T) {
		write(t, filepath.Join(dir, "other.cfg"), "[core]\nhooksPath = /elsewhere/hooks\n")
		write(t, filepath.Join(dir, "config"), "[core]\nhooksPath = .githooks\n[includeIf \"gitdir:/nowhere/\"]\npath = other.cfg\n")
		hooks, _ := readGitConfig(filepath.Join(dir, "config"), "/wt", 0)
		if !slices.Equal(hooks, []string{"/wt/.githooks", "/elsewhere/hooks"}) {
			t.Errorf("got %q, want both values", hooks)
		}
	})
	t.Run("include loop ends", func(t *testing.T) {
		write(t, filepath.Join(dir, "config"), "[include]\npath = config\n")
		_, inc := readGitConfig(filepath.Join(dir, "config"), "/wt", 0)
		if len(inc) == 0 || len(inc) > 12 {
			t.Errorf("got %d includes", len(inc))
		}
	})
}

func TestGitControlFiles(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(ws, ".git", "config"), "[core]\nhooksPath = .githooks\n")
	write(t, filepath.Join(ws, ".git", "modules", "a", "b", "HEAD"), "x\n")
	write(t, filepath.Join(ws, ".git", "modules", "a", "b", "modules", "c", "HEAD"), "x\n")
	write(t, filepath.Join(ws, ".git", "worktrees", "wt1", "commondir"), "../..\n")
	// A linked worktree elsewhere points back with a gitfile.
	other := t.TempDir()
	write(t, filepath.Join(other, ".git"), "gitdir: "+filepath.Join(ws, ".git", "worktrees", "wt1")+"\n")

	paths := func(files []gitFile) []string {
		var out []string
		for _, f := range files {
			out = append(out, f.path)
		}
		return out
	}
	got := paths(gitControlFiles(ws))
	g := filepath.Join(ws, ".git")
	for _, want := range []string{
		g + "/commondir", g + "/hooks", g + "/config", ws + "/.githooks",
		g + "/worktrees/wt1/commondir",
		g + "/modules/a/b/hooks", g + "/modules/a/b/config", g + "/modules/a/b/commondir",
		g + "/modules/a/b/modules/c/hooks",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %s in %q", want, got)
		}
	}
	// The worktree's files: its admin dir's commondir, and the main repository's
	// config and hooks, which it uses.
	got = paths(gitControlFiles(other))
	for _, want := range []string{g + "/worktrees/wt1/commondir", g + "/hooks", g + "/config"} {
		if !slices.Contains(got, want) {
			t.Errorf("worktree: missing %s in %q", want, got)
		}
	}
	if files := gitControlFiles(t.TempDir()); files != nil {
		t.Errorf("a directory without .git has control files: %v", files)
	}
}

func TestScanNested(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{"a/.git", "a/b/c/.git", "a/b/c/d/.git", "node_modules/x/.git", "src/.vscode", ".git"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	table := map[string]policy.Protected{".vscode": {Name: ".vscode", Dir: true}}
	repos, _, found := scanNested(nil, ws, 3, table)
	if want := []string{ws + "/a", ws + "/a/b/c"}; !slices.Equal(repos, want) {
		t.Errorf("repos %q, want %q (depth 3; node_modules skipped; the root itself is not nested)", repos, want)
	}
	if _, ok := found[ws+"/src/.vscode"]; !ok || len(found) != 1 {
		t.Errorf("found %v, want src/.vscode only", found)
	}
	if repos, _, _ := scanNested(nil, ws, 0, table); len(repos) != 0 {
		t.Errorf("depth 0 found %q", repos)
	}
}
