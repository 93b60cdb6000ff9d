//go:build linux

package sandbox_test

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/policy"
	"github.com/moat-sandbox/moat/sandbox"
)

// TestMain lets this test binary serve as the sandbox's init stage.
func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(m.Run())
}

// fixture is a workspace and a fake home outside the sandbox's private /tmp, so
// that what the sandbox does to them shows on the host.
type fixture struct {
	root, ws, home, token string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(base, ".moat-runtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	// A state dir of its own: placeholders stay while any run of the same user
	// lives, and other packages' tests run moat at the same time.
	runtime := filepath.Join(root, "runtime")
	if err := os.Mkdir(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", runtime)
	f := &fixture{root: root, ws: filepath.Join(root, "ws"), home: filepath.Join(root, "home"),
		token: "TOKEN-" + filepath.Base(root)}
	for _, d := range []string{f.ws, filepath.Join(f.home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.home, ".ssh", "id_rsa"), []byte(f.token), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// run runs script under sh in the sandbox, with the workspace writable and ~/.ssh
// hidden, and returns its combined output and error.
func (f *fixture) run(t *testing.T, script string) (string, error) {
	t.Helper()
	pol, err := policy.Compile(nil, policy.Flags{DenyRead: []string{filepath.Join(f.home, ".ssh")}},
		policy.Env{Cwd: f.ws, Home: f.home})
	if err != nil {
		t.Fatal(err)
	}
	cmd := sandbox.Command(pol, "sh", "-c", script)
	cmd.Env = append(os.Environ(), "HOME="+f.home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Kill()
		t.Fatal("sandbox did not finish in 60s")
	}
	return out.String(), err
}

func (f *fixture) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(f.ws, name))
	return err == nil
}

func (f *fixture) lootHasToken(t *testing.T) bool {
	t.Helper()
	found := false
	filepath.Walk(f.ws, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(f.token)) {
				found = true
			}
		}
		return nil
	})
	return found
}

func TestWritesOnlyInWorkspace(t *testing.T) {
	f := newFixture(t)
	hostTmp := filepath.Join(os.TempDir(), "moat-runtest-"+filepath.Base(f.root))
	defer os.Remove(hostTmp)
	out, err := f.run(t, `echo ok > allowed; echo x > "$HOME/evil"; echo x > `+hostTmp+`; echo x > /dev/shm/moat-evil; f=$(mktemp) && echo x > "$f" && echo tmp-ok`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "allowed")); string(b) != "ok\n" {
		t.Fatalf("control: workspace write did not land on the host (%q)\n%s", b, out)
	}
	if !strings.Contains(out, "tmp-ok") {
		t.Fatalf("mktemp inside failed:\n%s", out)
	}
	for _, p := range []string{filepath.Join(f.home, "evil"), hostTmp, "/dev/shm/moat-evil"} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("sandbox wrote %s on the host", p)
		}
	}
}

func TestSecretsStayHidden(t *testing.T) {
	f := newFixture(t)
	// A symlink the repository already carried, pointing at the secret.
	if err := os.Symlink(filepath.Join(f.home, ".ssh", "id_rsa"), filepath.Join(f.ws, "carried")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.home, "public"), []byte("PUBLIC-"+f.token[6:]), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := f.run(t, `
		k="$HOME/.ssh/id_rsa"
		cat "$k" > loot1; cat carried > loot2
		ln -s "$k" made; cat made > loot3
		ln "$k" hard 2>/dev/null; cat hard > loot4
		cat /proc/self/root"$k" > loot5; cat /proc/1/root"$k" > loot6
		unshare -Urm sh -c "umount $HOME/.ssh; cat $k" > loot7
		cat "$HOME/public" > control
		true`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "control")); !strings.HasPrefix(string(b), "PUBLIC-") {
		t.Fatalf("control: readable file was not read (%q)\n%s", b, out)
	}
	if f.lootHasToken(t) {
		t.Fatalf("the secret reached the workspace:\n%s", out)
	}
}

func TestProtectedPaths(t *testing.T) {
	f := newFixture(t)
	git := func(args ...string) {
		c := exec.Command("git", append([]string{"-C", f.ws}, args...)...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	git("init", "-q")
	hook := filepath.Join(f.ws, ".git", "hooks", "pre-commit")
	os.Remove(hook)
	cfg, _ := os.ReadFile(filepath.Join(f.ws, ".git", "config"))
	out, err := f.run(t, `
		export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
		echo 'touch /tmp/pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
		echo '[core] fsmonitor = evil' >> .git/config
		mkdir -p .vscode && echo '{}' > .vscode/tasks.json
		echo evil > .envrc; echo '{}' > .mcp.json
		mv .git .gitold; mkdir -p .git/hooks && echo evil > .git/hooks/post-checkout
		echo code > main.txt && git add main.txt && git commit -qm first && git checkout -qb feature && echo committed`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "committed") {
		t.Fatalf("control: git add/commit/checkout -b failed inside:\n%s", out)
	}
	if log, err := exec.Command("git", "-C", f.ws, "log", "--oneline", "feature").Output(); err != nil || !strings.Contains(string(log), "first") {
		t.Fatalf("control: the commit is not in the host repo: %v %s", err, log)
	}
	if _, err := os.Lstat(hook); err == nil {
		t.Errorf(".git/hooks/pre-commit was planted")
	}
	if now, _ := os.ReadFile(filepath.Join(f.ws, ".git", "config")); !bytes.Equal(now, cfg) {
		t.Errorf(".git/config changed:\n%s", now)
	}
	for _, name := range []string{".vscode", ".envrc", ".mcp.json", ".gitold", ".git/hooks/post-checkout"} {
		if f.exists(name) {
			t.Errorf("%s exists on the host after the run (planted, or a placeholder left behind)", name)
		}
	}
}

func TestDaemonsDieWithTheSandbox(t *testing.T) {
	f := newFixture(t)
	out, err := f.run(t, `setsid sh -c 'while :; do echo beat >> beat; sleep 0.1; done' </dev/null >/dev/null 2>&1 & sleep 0.3`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	before, err := os.Stat(filepath.Join(f.ws, "beat"))
	if err != nil {
		t.Fatalf("control: the daemon never ran: %v", err)
	}
	time.Sleep(800 * time.Millisecond)
	after, _ := os.Stat(filepath.Join(f.ws, "beat"))
	if after.Size() != before.Size() {
		t.Fatalf("a daemon outlived the sandbox: beat grew from %d to %d bytes", before.Size(), after.Size())
	}
}

func TestInheritedDescriptorsAreClosed(t *testing.T) {
	f := newFixture(t)
	// An fd this process holds without close-on-exec, as a careless caller would.
	fd, err := syscall.Open(filepath.Join(f.home, ".ssh", "id_rsa"), syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	out, err := f.run(t, `for n in 3 4 5 6 7 8 9 10 11 12; do cat /proc/self/fd/$n >> loot 2>/dev/null; done; ls -l /proc/self/fd > fds; true`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if !f.exists("fds") {
		t.Fatalf("control: nothing ran:\n%s", out)
	}
	if f.lootHasToken(t) {
		t.Fatalf("an inherited descriptor (fd %d) reached the sandbox", fd)
	}
}

func TestExitStatus(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.ws, "noexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		script string
		code   int
	}{{"exit 0", 0}, {"exit 3", 3}, {"kill -9 $$", 137}} {
		_, err := f.run(t, tc.script)
		code := 0
		var ee *sandbox.ExitError
		if errors.As(err, &ee) {
			code = ee.Code
		} else if err != nil {
			t.Fatalf("%q: %v", tc.script, err)
		}
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d", tc.script, code, tc.code)
		}
	}
	pol, _ := policy.Compile(nil, policy.Flags{}, policy.Env{Cwd: f.ws, Home: f.home})
	for name, notFound := range map[string]bool{"no-such-command-moat": true, "./noexec": false} {
		err := sandbox.Command(pol, name).Run()
		var xe *sandbox.ExecError
		if !errors.As(err, &xe) || xe.NotFound() != notFound {
			t.Errorf("%s: got %v, want an ExecError with NotFound()=%v", name, err, notFound)
		}
	}
}

// TestUnixSockets: a host socket is unreachable unless network.allowUnixSockets lists
// it, and a listed one is reachable even inside a hidden runtime dir. Judged by the
// host listeners' accept counts.
func TestUnixSockets(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed: it is the connecting client inside")
	}
	f := newFixture(t)
	runtime := filepath.Join(f.root, "runtime")
	if err := os.MkdirAll(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	accepted := map[string]*int32{}
	listen := func(path string) {
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		n := new(int32)
		accepted[path] = n
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				atomic.AddInt32(n, 1)
				c.Close()
			}
		}()
	}
	denied := filepath.Join(f.home, "denied.sock")
	allowedHome := filepath.Join(f.home, "allowed.sock")
	allowedRuntime := filepath.Join(runtime, "bus")
	for _, p := range []string{denied, allowedHome, allowedRuntime} {
		listen(p)
	}
	s, err := policy.Parse("settings.json", []byte(`{"filesystem": {"allowWrite": ["`+f.ws+`"]},
		"network": {"allowUnixSockets": ["`+allowedHome+`", "`+allowedRuntime+`"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Compile(s, policy.Flags{}, policy.Env{Cwd: f.ws, Home: f.home})
	if err != nil {
		t.Fatal(err)
	}
	script := `import socket, sys
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(p); print(p, "OK")
    except OSError as e:
        print(p, e)
`
	cmd := sandbox.Command(pol, "python3", "-c", script, denied, allowedHome, allowedRuntime)
	t.Setenv("XDG_RUNTIME_DIR", runtime) // the supervisor hides its runtime dir
	cmd.Env = append(os.Environ(), "HOME="+f.home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && (atomic.LoadInt32(accepted[allowedHome]) == 0 || atomic.LoadInt32(accepted[allowedRuntime]) == 0) {
		time.Sleep(10 * time.Millisecond)
	}
	for p, want := range map[string]int32{denied: 0, allowedHome: 1, allowedRuntime: 1} {
		if got := atomic.LoadInt32(accepted[p]); got != want {
			t.Errorf("host listener %s accepted %d connection(s) from the sandbox, want %d\ninside:\n%s", p, got, want, out.String())
		}
	}
}

// TestDenyWriteMissing: a denyWrite path that doesn't exist yet can't be created,
// and its placeholder is gone from the host after the run.
func TestDenyWriteMissing(t *testing.T) {
	f := newFixture(t)
	if err := os.MkdirAll(filepath.Join(f.ws, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	deny := []string{filepath.Join(f.ws, "conf", "settings.json"), filepath.Join(f.ws, "hooks"), filepath.Join(f.ws, "NOTES.md")}
	pol, err := policy.Compile(nil, policy.Flags{DenyWrite: deny}, policy.Env{Cwd: f.ws, Home: f.home})
	if err != nil {
		t.Fatal(err)
	}
	cmd := sandbox.Command(pol, "sh", "-c", `cat conf/settings.json; echo '{"hooks":1}' > conf/settings.json; mkdir -p hooks/x; echo pwn > NOTES.md; echo ok > normal`)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run()
	if got, _ := os.ReadFile(filepath.Join(f.ws, "normal")); string(got) != "ok\n" {
		t.Fatalf("control: a workspace write did not land:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "{}") {
		t.Errorf("the JSON placeholder did not read as {}:\n%s", out.String())
	}
	for _, p := range deny {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists on the host after the run (created inside, or a placeholder left behind)", p)
		}
	}
}

// TestHostLoopbackPort: a host loopback port the policy lists by literal is
// reachable from the sandbox's own 127.0.0.1 without a proxy; another is not.
// Judged by the host listeners' accept counts.
func TestHostLoopbackPort(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed: it is the connecting client inside")
	}
	f := newFixture(t)
	accepted := func() (int, *int32) {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		n := new(int32)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				atomic.AddInt32(n, 1)
				c.Close()
			}
		}()
		return l.Addr().(*net.TCPAddr).Port, n
	}
	allowed, nAllowed := accepted()
	other, nOther := accepted()
	pol, err := policy.Compile(nil, policy.Flags{AllowNet: []string{"127.0.0.1:" + strconv.Itoa(allowed)}}, policy.Env{Cwd: f.ws, Home: f.home})
	if err != nil {
		t.Fatal(err)
	}
	script := `import socket, sys
for p in sys.argv[1:]:
    try:
        socket.create_connection(("127.0.0.1", int(p)), timeout=5).close(); print(p, "OK")
    except OSError as e:
        print(p, e)
`
	cmd := sandbox.Command(pol, "python3", "-c", script, strconv.Itoa(allowed), strconv.Itoa(other))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && atomic.LoadInt32(nAllowed) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if got := atomic.LoadInt32(nAllowed); got != 1 {
		t.Errorf("the listed host port accepted %d connections, want 1\ninside:\n%s", got, out.String())
	}
	if got := atomic.LoadInt32(nOther); got != 0 {
		t.Errorf("an unlisted host loopback port accepted %d connections\ninside:\n%s", got, out.String())
	}
}

// TestProtectedPathInUnwritableDir: a writable root this user can't write in
// gets no placeholders for its missing protected paths when the directory is
// another user's (another user's repository under a writable /tmp), and the run
// starts: the command, with the user's uid, can't create them either. When the
// directory is the user's own, the command could chmod it and then create
// them, so the run is refused. Judged on the host: no .vscode in either.
func TestProtectedPathInUnwritableDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes in any directory: the case arises for other users (CI runs this as one)")
	}
	f := newFixture(t)
	run := func(dir string) (string, error) {
		t.Helper()
		pol, err := policy.Compile(nil, policy.Flags{AllowWrite: []string{dir}}, policy.Env{Cwd: f.ws, Home: f.home})
		if err != nil {
			t.Fatal(err)
		}
		cmd := sandbox.Command(pol, "sh", "-c", `chmod 755 `+dir+`; mkdir `+dir+`/.vscode && echo '{}' > `+dir+`/.vscode/tasks.json; echo ok > normal`)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		return out.String(), err
	}

	// Another user's directory: /usr/local, root's and not writable here.
	theirs := "/usr/local"
	if fi, err := os.Stat(theirs); err != nil || syscall.Access(theirs, 0x2) == nil ||
		fi.Sys().(*syscall.Stat_t).Uid == uint32(os.Geteuid()) {
		t.Errorf("%s is missing, writable or this user's: no directory of another user to try", theirs)
	} else {
		out, err := run(theirs)
		if got, _ := os.ReadFile(filepath.Join(f.ws, "normal")); string(got) != "ok\n" {
			t.Errorf("with another user's directory writable by the rules, the run did not start (%v):\n%s", err, out)
		}
		if _, err := os.Lstat(filepath.Join(theirs, ".vscode")); err == nil {
			t.Errorf("%s/.vscode exists on the host after the run:\n%s", theirs, out)
		}
	}

	// The user's own directory, not writable: the sandbox would chmod it.
	mine := filepath.Join(f.ws, "mine")
	if err := os.Mkdir(mine, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(mine, 0o755) })
	out, err := run(mine)
	if _, serr := os.Lstat(filepath.Join(mine, ".vscode", "tasks.json")); serr == nil {
		t.Errorf("the sandbox made its own directory writable and created .vscode/tasks.json on the host:\n%s", out)
	}
	var se *sandbox.SetupError
	if !errors.As(err, &se) {
		t.Errorf("the run in the user's own read-only directory was not refused (%v):\n%s", err, out)
	}
}
