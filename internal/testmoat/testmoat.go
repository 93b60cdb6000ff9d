// Package testmoat holds what moat's test suites share to run the real moat binary:
// building it, and choosing host directories the sandbox sees as the host does.
// It is for tests only.
package testmoat

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// PrivateInSandbox are host directories the sandbox covers with a fresh tmpfs: a
// test's files must live elsewhere, or the sandbox would not see them and checks of
// what it wrote there would pass for the wrong reason.
var PrivateInSandbox = []string{"/tmp", "/var/tmp", "/run", "/var/run", "/dev/shm"}

// HiddenInSandbox reports whether dir is inside one of PrivateInSandbox.
func HiddenInSandbox(dir string) bool {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	for _, p := range PrivateInSandbox {
		if dir == p || strings.HasPrefix(dir, p+"/") {
			return true
		}
	}
	return false
}

// PickRoot returns a writable host directory the sandbox sees: $envVar if set, else
// the temp dir unless the sandbox hides it, else the home directory.
func PickRoot(envVar string) (string, error) {
	if d := os.Getenv(envVar); d != "" {
		return d, nil
	}
	if tmp := os.TempDir(); !HiddenInSandbox(tmp) {
		return tmp, nil
	}
	home, err := os.UserHomeDir()
	if err == nil && !HiddenInSandbox(home) {
		if f, err := os.CreateTemp(home, ".moat-test-probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return home, nil
		}
	}
	return "", fmt.Errorf("no host directory the sandbox can see: %s is private inside it and the home directory (%q) is not writable; set %s", os.TempDir(), home, envVar)
}

// Build builds moat's command into out, with CGO_ENABLED=0 as moat must be built.
func Build(out string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(gobin, "build", "-o", out, "github.com/moat-sandbox/moat/cmd/moat")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v\n%s", err, b)
	}
	return nil
}

// Setup is the start of a suite's TestMain: it makes the suite's base directory, a
// fresh "moat-NAME-*" directory of mode 0755 under PickRoot(dirEnv), and builds moat
// into it, or takes $MOAT_BIN. cleanup removes the base directory unless $keepEnv is
// set, in which case it says where it is. Errors name the suite.
func Setup(name, dirEnv, keepEnv string) (base, moat string, cleanup func(), err error) {
	cleanup = func() {}
	root, err := PickRoot(dirEnv)
	if err == nil {
		base, err = os.MkdirTemp(root, "moat-"+name+"-")
	}
	if err == nil {
		err = os.Chmod(base, 0o755)
	}
	if err != nil {
		return "", "", cleanup, fmt.Errorf("%s tests: make base dir: %w", name, err)
	}
	if os.Getenv(keepEnv) != "" {
		fmt.Fprintf(os.Stderr, "%s tests: keeping %s\n", name, base)
	} else {
		cleanup = func() { RemoveAll(base) }
	}
	if moat = os.Getenv("MOAT_BIN"); moat != "" {
		if moat, err = filepath.Abs(moat); err != nil {
			cleanup()
			return "", "", func() {}, fmt.Errorf("%s tests: %w", name, err)
		}
		return base, moat, cleanup, nil
	}
	moat = filepath.Join(base, "moat")
	if err := Build(moat); err != nil {
		cleanup()
		return "", "", func() {}, fmt.Errorf("%s tests: build moat (set MOAT_BIN to use a built binary): %w", name, err)
	}
	return base, moat, cleanup, nil
}

// RemoveAll removes dir even where a tool left read-only directories (the Go module
// cache without -modcacherw).
func RemoveAll(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}
