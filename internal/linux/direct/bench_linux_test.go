package direct_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moat-sandbox/moat/internal/linux/connbroker"
	"github.com/moat-sandbox/moat/internal/spec"
)

// BenchmarkOpens times 10000 opens of a file and 1000 file creations in the sandbox, with
// a plain writable workspace (no zone: only Landlock), and with one that holds protected
// and denied paths (a read-guarded zone: every open goes through the entry broker).
func BenchmarkOpens(b *testing.B) {
	script := `import os
for i in range(10000):
    os.close(os.open("README", os.O_RDONLY))
for i in range(1000):
    fd = os.open("f%d" % i, os.O_CREAT | os.O_WRONLY); os.close(fd); os.unlink("f%d" % i)
`
	for _, guarded := range []bool{false, true} {
		name := "plain"
		if guarded {
			name = "guarded"
		}
		b.Run(name, func(b *testing.B) {
			f := newBenchFixture(b, guarded)
			for range b.N {
				f.runArgv(b, connbroker.Policy{}, []string{"/usr/bin/python3", "-c", script}, nil)
			}
		})
	}
}

func newBenchFixture(b *testing.B, guarded bool) *fixture {
	root := b.TempDir()
	f := &fixture{root: root, home: root, work: filepath.Join(root, "work")}
	os.MkdirAll(filepath.Join(f.work, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(f.work, "README"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(f.work, ".env"), []byte("x"), 0o644)
	f.mounts = []spec.Mount{
		{Op: spec.OpBindRO, Path: root, Dir: true},
		{Op: spec.OpBindRW, Path: f.work, Dir: true},
	}
	if guarded {
		f.mounts = append(f.mounts,
			spec.Mount{Op: spec.OpMaskFile, Path: filepath.Join(f.work, ".env")},
			spec.Mount{Op: spec.OpBindRO, Path: filepath.Join(f.work, ".git", "hooks"), Dir: true})
	}
	return f
}
