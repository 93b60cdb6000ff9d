// Package testmoat holds what moat's test suites share to run the real moat binary:
// building it, and choosing host directories the sandbox sees as the host does.
// It is for tests only.
package testmoat

import (
	"fmt"
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
