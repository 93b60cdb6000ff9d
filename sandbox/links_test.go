package sandbox

import (
	"os"
	"slices"
	"testing"
)

// TestSymlinksFollowed lists the links resolution passes through, named where
// they are.
func TestSymlinksFollowed(t *testing.T) {
	d := t.TempDir()
	for link, target := range map[string]string{
		"a":     "real",       // relative
		"b":     d + "/a/sub", // absolute, through a
		"c":     "../real/x",  // resolved from the link's own dir, to a missing path
		"loop1": "loop2",      // a loop
		"loop2": "loop1",
	} {
		if err := os.Symlink(target, d+"/"+link); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(d+"/real/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		{d + "/real/sub", nil},
		{d + "/a/sub", []string{d + "/a"}},
		{d + "/b", []string{d + "/b", d + "/a"}},
		{d + "/b/../sub", []string{d + "/b", d + "/a"}},
		{d + "/c", []string{d + "/c"}},
		{d + "/missing/x", nil},
	} {
		if got := symlinksFollowed(tc.path); !slices.Equal(got, tc.want) {
			t.Errorf("symlinksFollowed(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
	if got := symlinksFollowed(d + "/loop1"); len(got) == 0 || len(got) > 41 {
		t.Errorf("symlinksFollowed(loop) = %d links, want it to stop after 40", len(got))
	}
}
