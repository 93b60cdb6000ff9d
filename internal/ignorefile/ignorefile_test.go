package ignorefile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestGitignoreSpec checks the examples of gitignore(5) and the rules they
// illustrate. path ending in "/" is a directory; Ignored checks parents first,
// as git does.
func TestGitignoreSpec(t *testing.T) {
	tests := []struct {
		name     string
		patterns string
		path     string
		want     bool
	}{
		{"hello.* matches a file", "hello.*", "hello.c", true},
		{"hello.* matches a directory", "hello.*", "a/hello.d/", true},
		{"hello.* needs the prefix", "hello.*", "ahello.c", false},
		{"frotz/ matches a directory", "frotz/", "frotz/", true},
		{"frotz/ matches a nested directory", "frotz/", "a/frotz/", true},
		{"frotz/ does not match a file", "frotz/", "a/frotz", false},
		{"frotz/ covers what is inside", "frotz/", "frotz/x.c", true},
		{"doc/frotz/ is anchored", "doc/frotz/", "doc/frotz/", true},
		{"doc/frotz/ not below the root", "doc/frotz/", "a/doc/frotz/", false},
		{"doc/frotz anchored by the middle slash", "doc/frotz", "a/doc/frotz", false},
		{"foo/* matches a file", "foo/*", "foo/test.json", true},
		{"foo/* matches a directory", "foo/*", "foo/bar/", true},
		{"foo/* matches through its parent", "foo/*", "foo/bar/hello.c", true},
		{"/bar matches at the root", "/bar", "bar", true},
		{"/bar not below the root", "/bar", "a/bar", false},
		{"bar matches at any depth", "bar", "a/b/bar", true},
		{"**/foo anywhere", "**/foo", "x/y/foo", true},
		{"**/foo at the root", "**/foo", "foo", true},
		{"**/foo/bar directly under foo", "**/foo/bar", "a/foo/bar", true},
		{"**/foo/bar not deeper", "**/foo/bar", "a/foo/x/bar", false},
		{"abc/** inside", "abc/**", "abc/x/y", true},
		{"abc/** not abc itself", "abc/**", "abc/", false},
		{"a/**/b zero dirs", "a/**/b", "a/b", true},
		{"a/**/b one dir", "a/**/b", "a/x/b", true},
		{"a/**/b two dirs", "a/**/b", "a/x/y/b", true},
		{"a/**/b not elsewhere", "a/**/b", "c/a/b", false},
		{"* stops at /", "a/*.c", "a/b/c.c", false},
		{"* within an element", "a/*.c", "a/c.c", true},
		{"? one character", "file?.txt", "file1.txt", true},
		{"? exactly one", "file?.txt", "file.txt", false},
		{"? not a slash", "a?b", "a/b", false},
		{"range", "[a-c].txt", "b.txt", true},
		{"range excludes", "[a-c].txt", "d.txt", false},
		{"negated class", "[!a].txt", "b.txt", true},
		{"negated class excludes", "[!a].txt", "a.txt", false},
		{"caret negation", "[^a].txt", "a.txt", false},
		{"posix class", "[[:digit:]]*.log", "1.log", true},
		{"posix class excludes", "[[:digit:]]*.log", "x.log", false},
		{"unclosed bracket is literal", "a[b", "a[b", true},
		{"escaped #", `\#file`, "#file", true},
		{"comment", "#file", "#file", false},
		{"escaped !", `\!important!.txt`, "!important!.txt", true},
		{"trailing spaces dropped", "foo   ", "foo", true},
		{"escaped trailing space kept", `foo\ `, "foo ", true},
		{"escaped trailing space required", `foo\ `, "foo", false},
		{"escaped star is literal", `a\*b`, "a*b", true},
		{"escaped star not a wildcard", `a\*b`, "axb", false},
		{"negation re-includes", "*.o\n!keep.o", "keep.o", false},
		{"negation leaves the others", "*.o\n!keep.o", "x.o", true},
		{"last match wins", "!x\nx", "x", true},
		{"no re-include below an excluded dir", "build/\n!build/keep", "build/keep", true},
		{"only-foo/bar example: top", "/*\n!/foo\n/foo/*\n!/foo/bar", "top.txt", true},
		{"only-foo/bar example: foo/baz", "/*\n!/foo\n/foo/*\n!/foo/bar", "foo/baz", true},
		{"only-foo/bar example: foo/bar/x", "/*\n!/foo\n/foo/*\n!/foo/bar", "foo/bar/x", false},
		{"blank lines", "\n\n", "x", false},
		{"CRLF line ends", "secret\r\n", "secret", true},
		{"double slash", "a//b", "a/b", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isDir := strings.HasSuffix(tt.path, "/")
			got := Ignored(Parse([]byte(tt.patterns)), strings.TrimSuffix(tt.path, "/"), isDir)
			if got != tt.want {
				t.Errorf("patterns %q, path %q: ignored = %v, want %v", tt.patterns, tt.path, got, tt.want)
			}
		})
	}
}

// TestPatternOnly checks a pattern on its own, without the parent rule.
func TestPatternOnly(t *testing.T) {
	p := Parse([]byte("foo/*"))[0]
	if p.Match("foo/bar/hello.c", false) {
		t.Error(`"foo/*" itself must not match foo/bar/hello.c (only through foo/bar)`)
	}
	if !p.Match("foo/bar", true) {
		t.Error(`"foo/*" must match the directory foo/bar`)
	}
	if q := Parse([]byte("!x")); len(q) != 1 || !q[0].Negate() || q[0].Line != 1 {
		t.Errorf("Parse(!x) = %+v", q)
	}
	if got := Parse([]byte("# c\n\n/\n!\nx\n")); len(got) != 1 || got[0].Line != 5 {
		t.Errorf("lines that match nothing must be skipped, and lines counted: %+v", got)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func rels(root string, ms []Match) []string {
	var out []string
	for _, m := range ms {
		r, _ := filepath.Rel(root, m.Path)
		if m.IsDir {
			r += "/"
		}
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

func TestWalk(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, ".moatignore"), "# secrets\nsecrets/\n*.pem\n!public.pem\n/top-only\n")
	write(t, filepath.Join(root, "secrets/a"), "")
	write(t, filepath.Join(root, "secrets/deep/b"), "")
	write(t, filepath.Join(root, "key.pem"), "")
	write(t, filepath.Join(root, "public.pem"), "")
	write(t, filepath.Join(root, "top-only"), "")
	write(t, filepath.Join(root, "sub/top-only"), "")
	write(t, filepath.Join(root, "sub/other.pem"), "")
	// A deeper file overrides: it re-includes one pem and adds its own rule.
	write(t, filepath.Join(root, "sub/.moatignore"), "!other.pem\nlocal.txt\n")
	write(t, filepath.Join(root, "sub/local.txt"), "")
	write(t, filepath.Join(root, "local.txt"), "")
	// .git is never walked, and a disabled name is not read.
	write(t, filepath.Join(root, ".git/x.pem"), "")
	write(t, filepath.Join(root, ".cursorignore"), "cursor-only\n")
	write(t, filepath.Join(root, "cursor-only"), "")
	// A symlink is matched as itself and never followed.
	outside := t.TempDir()
	write(t, filepath.Join(outside, "x.pem"), "")
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}

	ms, files, err := Walk(root, []string{".moatignore"}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"key.pem", "secrets/", "sub/local.txt", "top-only"}
	if got := rels(root, ms); !reflect.DeepEqual(got, want) {
		t.Errorf("matches = %v, want %v", got, want)
	}
	if len(files) != 2 {
		t.Errorf("read %d ignore files, want 2", len(files))
	}
	for _, m := range ms {
		if m.Path == filepath.Join(root, "key.pem") && m.Origin() != filepath.Join(root, ".moatignore")+":3 *.pem" {
			t.Errorf("origin = %q", m.Origin())
		}
	}

	ms, _, err = Walk(root, []string{".moatignore", ".cursorignore"}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if got := rels(root, ms); !reflect.DeepEqual(got, append([]string{"cursor-only"}, want...)) {
		t.Errorf("with .cursorignore enabled: matches = %v", got)
	}
}

func TestWalkLimitAndOddFiles(t *testing.T) {
	root := t.TempDir()
	for i := 0; i < 20; i++ {
		write(t, filepath.Join(root, "d", strings.Repeat("x", i+1)), "")
	}
	write(t, filepath.Join(root, "d/.moatignore"), "x\n")
	ms, _, err := Walk(root, []string{".moatignore"}, 5)
	if !errors.Is(err, ErrTooMany) {
		t.Fatalf("err = %v, want ErrTooMany", err)
	}
	if len(ms) > 5 {
		t.Errorf("%d matches past the limit", len(ms))
	}

	// A directory named like an ignore file (a protected path's placeholder) is
	// not an ignore file; neither is a missing root.
	root = t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".moatignore"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "x"), "")
	if ms, files, err := Walk(root, []string{".moatignore"}, 100); err != nil || len(ms)+len(files) != 0 {
		t.Errorf("placeholder dir: matches %v files %v err %v", ms, files, err)
	}
	if ms, _, err := Walk(filepath.Join(root, "missing"), []string{".moatignore"}, 100); err != nil || len(ms) != 0 {
		t.Errorf("missing root: %v %v", ms, err)
	}
}
