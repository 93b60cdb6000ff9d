package escape_test

import (
	"github.com/moat-sandbox/moat/internal/testmoat"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testEveryday: ordinary development work succeeds in the sandbox and its results
// land on the host (git is covered by protected_paths/existing).
func testEveryday(t *testing.T) {
	b := newBox(t)
	hello := b.tool("hello.c")
	script := `set -e
python3 -c 'print(sum(range(10)))' > py
d=$(mktemp -d) && echo x > "$d/f" && cat "$d/f" > mkd && rm -r "$d"
printf 'b\na\nc\n' | sort | tr a-z A-Z > sorted
seq 1 1000 | awk '{s+=$1} END {print s}' > sum
mkdir -p build/out && cp py build/out/ && mv build/out/py build/out/py2 && rm -r build/out && echo gone > built
`
	wantCC := false
	if _, err := exec.LookPath("cc"); err == nil {
		wantCC = true
		script += "cc -o hello " + shq(hello) + " && ./hello > cc.out\n"
	} else {
		t.Log("no cc on this host: the compile-and-run check is skipped")
	}
	r := b.run(opts{script: script})
	if r.code != 0 {
		t.Errorf("everyday script failed inside the sandbox:\n%s", r)
	}
	for name, want := range map[string]string{
		"py": "45\n", "mkd": "x\n", "sorted": "A\nB\nC\n", "sum": "500500\n", "built": "gone\n",
	} {
		if got := testmoat.ReadFile(t, filepath.Join(b.ws, name)); got != want {
			t.Errorf("%s on the host: %q, want %q", name, got, want)
		}
	}
	if wantCC {
		if got := testmoat.ReadFile(t, filepath.Join(b.ws, "cc.out")); !strings.Contains(got, "hello from c 42") {
			t.Errorf("a C program compiled and run inside printed %q on the host:\n%s", got, r)
		}
	}
}
