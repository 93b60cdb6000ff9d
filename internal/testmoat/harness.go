package testmoat

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Dirs are one test's host directories for a moat run: a root the sandbox can read
// but not write, and in it the workspace moat runs in, the home the sandbox gets
// as HOME, and a private XDG_RUNTIME_DIR (moat keeps its placeholder record there,
// so runs of other tests and users don't share it).
type Dirs struct {
	Root, WS, Home, XDG string
}

// NewDirs makes Dirs under base, named after the test (cut to maxName bytes:
// unix socket paths must fit in 108).
func NewDirs(t *testing.T, base string, maxName int) Dirs {
	t.Helper()
	name := t.Name()[strings.LastIndex(t.Name(), "/")+1:]
	if len(name) > maxName {
		name = name[:maxName]
	}
	root, err := os.MkdirTemp(base, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	d := Dirs{Root: root, WS: filepath.Join(root, "ws"), Home: filepath.Join(root, "home"), XDG: filepath.Join(root, "xdg")}
	Mkdir(t, d.WS)
	Mkdir(t, d.Home)
	if err := os.Mkdir(d.XDG, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// ExitStatus is a finished command's exit status as a shell reports it (128+N for
// a death by signal N), or -1 when it didn't run.
func ExitStatus(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return -1
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return -1
	}
	return cmd.ProcessState.ExitCode()
}

// Token returns a fresh random marker; finding it somewhere proves a read.
func Token(kind string) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "MOAT-" + kind + "-" + hex.EncodeToString(b[:])
}

// Mkdir makes dir and its parents, mode 0755.
func Mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// ReadFile returns a host file's content, or "" when it doesn't exist.
func ReadFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// Exists reports whether path exists on the host, without following a final symlink.
func Exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// SettingsFlags writes settings (JSON) to a new file in dir and returns the flags that
// pass it to moat run; none when settings is empty.
func SettingsFlags(t *testing.T, dir, settings string) []string {
	t.Helper()
	if settings == "" {
		return nil
	}
	f, err := os.CreateTemp(dir, "settings-*.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(settings); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", f.Name()}
}

// WaitFor polls cond until it holds or d passes: synchronisation with the sandbox,
// never a verdict on timing.
func WaitFor(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

// KeyValues parses "key value" lines into a map.
func KeyValues(s string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
			m[k] = v
		}
	}
	return m
}
