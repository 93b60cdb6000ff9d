package direct_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/linux/connbroker"
	"github.com/moat-sandbox/moat/internal/linux/direct"
	"github.com/moat-sandbox/moat/internal/spec"
	"github.com/moat-sandbox/moat/internal/testmoat"
)

// The tests run the real direct mode: the test binary is re-executed as its supervisor
// and exec stages (TestMain dispatches them, as the CLI does), and the command is a bash
// script that attacks. Verdicts come from the host: the files the script tried to change
// or fill with secrets, the test's listeners, /proc.

func TestMain(m *testing.M) {
	if a := os.Getenv(attackEnv); a != "" {
		os.Exit(attack(a))
	}
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case direct.MainArg:
			direct.Main()
		case direct.ExecArg:
			direct.ExecMain()
		}
	}
	os.Exit(m.Run())
}

// fixture is a home directory with secrets and a git workspace, as the planner would see
// them, with the mount plan the planner makes for them.
type fixture struct {
	root, home, work string
	secret           string
	mounts           []spec.Mount
	writable         []string
}

const secret = "TOP-SECRET-7f3a"

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "home", "work")}
	write(t, filepath.Join(f.home, ".ssh", "id_ed25519"), secret+" ssh key\n")
	write(t, filepath.Join(f.home, ".bashrc"), "# rc\n")
	write(t, filepath.Join(f.home, "notes.txt"), "notes\n")
	write(t, filepath.Join(f.work, "README"), "readme\n")
	write(t, filepath.Join(f.work, ".env"), secret+" dotenv\n")
	write(t, filepath.Join(f.work, "src", "main.go"), "package main\n")
	write(t, filepath.Join(f.work, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(f.work, ".git", "config"), "[core]\n")
	write(t, filepath.Join(f.work, ".git", "hooks", "pre-commit.sample"), "#!/bin/sh\n")
	os.MkdirAll(filepath.Join(f.work, ".git", "objects"), 0o755)
	// Placeholders the planner makes for missing protected names.
	for _, ph := range []string{".vscode", ".envrc", ".mcp.json"} {
		os.MkdirAll(filepath.Join(f.work, ph), 0o700)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f.mounts = []spec.Mount{
		{Op: spec.OpBindRO, Path: root, Source: root, Reason: "test fixture readable", Dir: true},
		{Op: spec.OpMaskDir, Path: filepath.Join(f.home, ".ssh"), Reason: "denyRead ~/.ssh", Dir: true},
		{Op: spec.OpBindRW, Path: f.work, Source: f.work, Reason: "workspace", Dir: true},
		{Op: spec.OpMaskFile, Path: filepath.Join(f.work, ".env"), Reason: "denyRead .env"},
		{Op: spec.OpBindRO, Path: filepath.Join(f.work, ".git", "hooks"), Source: filepath.Join(f.work, ".git", "hooks"), Reason: "protected: hooks", Dir: true},
		{Op: spec.OpBindRO, Path: filepath.Join(f.work, ".git", "config"), Source: filepath.Join(f.work, ".git", "config"), Reason: "protected: git config"},
		{Op: spec.OpPlaceholder, Path: filepath.Join(f.work, ".vscode"), Reason: "protected: .vscode (placeholder)", Dir: true},
		{Op: spec.OpPlaceholder, Path: filepath.Join(f.work, ".envrc"), Reason: "protected: .envrc (placeholder)", Dir: true},
		{Op: spec.OpPlaceholder, Path: filepath.Join(f.work, ".mcp.json"), Reason: "protected: .mcp.json (placeholder)", Dir: true},
		// A protected name with no placeholder: the entry broker must refuse to make it.
		{Op: spec.OpBindRO, Path: filepath.Join(f.work, ".claude", "settings.json"), Reason: "protected: .claude, no placeholder"},
		// The test binary, which some tests run inside as the attacker.
		{Op: spec.OpBindRO, Path: filepath.Dir(exe), Source: filepath.Dir(exe), Reason: "test binary", Dir: true},
	}
	f.writable = []string{f.work}
	return f
}

// outcome is one sandbox run.
type outcome struct {
	res            spec.Result
	stdout, stderr string
	events         []connbroker.Event
}

func (f *fixture) run(t testing.TB, net connbroker.Policy, script string) outcome {
	t.Helper()
	return f.runArgv(t, net, []string{"bash", "-c", script}, nil)
}

func (f *fixture) runArgv(t testing.TB, net connbroker.Policy, argv, env []string) outcome {
	t.Helper()
	s := &direct.Spec{
		Spec: spec.Spec{
			Argv:     argv,
			Env:      append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + f.home, "W=" + f.work, "R=" + f.root}, env...),
			Dir:      f.work,
			Mounts:   f.mounts,
			Writable: f.writable,
		},
		Net: net,
	}
	var stdout, stderr bytes.Buffer
	var mu sync.Mutex
	var o outcome
	p, err := direct.Start(s, nil, &stdout, &stderr, func(e connbroker.Event) {
		mu.Lock()
		o.events = append(o.events, e)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			p.Kill()
		}
	}()
	o.res, err = p.Wait()
	close(done)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, stderr.String())
	}
	if o.res.Stage != "" {
		t.Fatalf("sandbox failed at %s: %s (%s)\nstderr: %s", o.res.Stage, o.res.Error, o.res.Hint, stderr.String())
	}
	o.stdout, o.stderr = stdout.String(), stderr.String()
	return o
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestSecrets: denied files stay unreadable, directly, through a symlink the command
// makes, a hard link, a rename and /proc/self/root. Evidence: what lands in files the
// command may write.
func TestSecrets(t *testing.T) {
	f := newFixture(t)
	o := f.run(t, connbroker.Policy{}, `
cd "$W/src"
cat "$HOME/.ssh/id_ed25519" > loot1 2>/dev/null
ln -s "$HOME/.ssh/id_ed25519" link1; cat link1 > loot2 2>/dev/null
ln -s ../.env link2; cat link2 > loot3 2>/dev/null
cat "$W/.env" > loot4 2>/dev/null
ln "$HOME/.ssh/id_ed25519" hard1 2>/dev/null; cat hard1 > loot5 2>/dev/null
ln "$W/.env" hard2 2>/dev/null; cat hard2 > loot6 2>/dev/null
cat "/proc/self/root$HOME/.ssh/id_ed25519" > loot7 2>/dev/null
mv "$W/.env" "$W/src/env-moved" 2>/dev/null; cat "$W/src/env-moved" > loot8 2>/dev/null
cp "$W/.env" loot9 2>/dev/null
ls "$HOME/.ssh" > listing 2>&1
cat "$HOME/notes.txt" > control1
cat "$W/README" > control2
exit 0
`)
	_ = o
	src := filepath.Join(f.work, "src")
	for i := 1; i <= 9; i++ {
		if got := read(t, filepath.Join(src, "loot"+strconv.Itoa(i))); strings.Contains(got, secret) {
			t.Errorf("loot%d holds the secret: %q", i, got)
		}
	}
	for _, name := range []string{"hard1", "hard2", "env-moved"} {
		if exists(filepath.Join(src, name)) {
			t.Errorf("%s was created", name)
		}
	}
	if got := read(t, filepath.Join(f.work, ".env")); !strings.Contains(got, secret) {
		t.Errorf(".env changed: %q", got)
	}
	if got := read(t, filepath.Join(src, "control1")); got != "notes\n" {
		t.Errorf("control: reading ~/notes.txt gave %q", got)
	}
	if got := read(t, filepath.Join(src, "control2")); got != "readme\n" {
		t.Errorf("control: reading the workspace README gave %q", got)
	}
	t.Logf("listing the denied dir (names are visible, by design): %q", read(t, filepath.Join(src, "listing")))
}

// TestProtected: the protected paths inside the writable workspace stay as they were,
// against writes, creation, renames of them and of their parents.
func TestProtected(t *testing.T) {
	f := newFixture(t)
	g := filepath.Join(f.work, ".git")
	o := f.run(t, connbroker.Policy{}, `
cd "$W"
echo evil > .git/hooks/pre-commit
echo evil >> .git/hooks/pre-commit.sample
echo evil >> .git/config
printf '[core]\n\thooksPath = /tmp/evil\n' > .git/config
mv .git/hooks .git/hooks-old
mv .git/config .git/config-old
mv .git .git-old && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit
rm -rf .vscode; mkdir .vscode; echo evil > .vscode/tasks.json
echo evil > .vscode/tasks.json
ln -s /tmp/evil .git/hooks/post-checkout
echo evil > .envrc
echo evil > .mcp.json
rmdir .envrc; mv .mcp.json mcp-old
mkdir .claude; echo evil > .claude/settings.json; ln -s /tmp .claude
mv src .claude
ln .git/config src/cfg && echo evil >> src/cfg
ln -s ../.git/hooks/pre-push src/pp; echo evil > src/pp
echo evil > "$HOME/.bashrc"
echo evil > "$HOME/newfile"
echo evil > /tmp/moat-direct-test-escape
echo control > src/control.txt
echo control >> README
mkdir -p src/newdir && echo control > src/newdir/file
exit 0
`)
	t.Logf("stderr: %s", o.stderr)
	for _, p := range []string{
		filepath.Join(g, "hooks", "pre-commit"), filepath.Join(g, "hooks-old"), filepath.Join(g, "config-old"),
		filepath.Join(f.work, ".git-old"), filepath.Join(f.work, ".vscode", "tasks.json"), filepath.Join(g, "hooks", "post-checkout"),
		filepath.Join(f.work, ".envrc", "x"), filepath.Join(f.work, "mcp-old"), filepath.Join(f.work, ".claude"), filepath.Join(f.work, "src", "cfg"),
		filepath.Join(g, "hooks", "pre-push"), filepath.Join(f.home, "newfile"), "/tmp/moat-direct-test-escape",
	} {
		if exists(p) {
			t.Errorf("%s was created", p)
			os.RemoveAll(p)
		}
	}
	for p, want := range map[string]string{
		filepath.Join(g, "config"):                     "[core]\n",
		filepath.Join(g, "hooks", "pre-commit.sample"): "#!/bin/sh\n",
		filepath.Join(f.home, ".bashrc"):               "# rc\n",
		filepath.Join(f.work, "src", "control.txt"):    "control\n",
		filepath.Join(f.work, "README"):                "readme\ncontrol\n",
		filepath.Join(f.work, "src", "newdir", "file"): "control\n",
	} {
		if got := read(t, p); got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
	for _, ph := range []string{".vscode", ".envrc", ".mcp.json"} {
		fi, err := os.Stat(filepath.Join(f.work, ph))
		if err != nil || !fi.IsDir() {
			t.Errorf("placeholder %s: %v", ph, err)
		}
		if ents, _ := os.ReadDir(filepath.Join(f.work, ph)); len(ents) != 0 {
			t.Errorf("placeholder %s has entries: %v", ph, ents)
		}
	}
}

// TestTempAndHostTmp: TMPDIR is private and writable; the host's /tmp is neither
// readable nor writable.
func TestTempAndHostTmp(t *testing.T) {
	f := newFixture(t)
	hostTmp, err := os.CreateTemp("", "moat-direct-host-")
	if err != nil {
		t.Fatal(err)
	}
	hostTmp.WriteString(secret + " host tmp\n")
	hostTmp.Close()
	os.Chmod(hostTmp.Name(), 0o644)
	defer os.Remove(hostTmp.Name())
	o := f.run(t, connbroker.Policy{}, `
echo "tmpdir=$TMPDIR"
t=$(mktemp) && echo hi > "$t" && cat "$t" && echo "mktemp=$t"
mkdir -p "$TMPDIR/locked/inner" && touch "$TMPDIR/locked/inner/f" && chmod 000 "$TMPDIR/locked/inner" "$TMPDIR/locked"
cat `+hostTmp.Name()+` > "$W/src/loot" 2>/dev/null
echo x > `+hostTmp.Name()+`.new
`)
	if !strings.Contains(o.stdout, "hi\nmktemp=") {
		t.Errorf("mktemp in the private temp dir failed: %s %s", o.stdout, o.stderr)
	}
	var tmpdir string
	for _, l := range strings.Split(o.stdout, "\n") {
		if v, ok := strings.CutPrefix(l, "tmpdir="); ok {
			tmpdir = v
		}
	}
	if tmpdir == "" || tmpdir == os.TempDir() {
		t.Errorf("TMPDIR = %q", tmpdir)
	} else if exists(tmpdir) {
		t.Errorf("the private temp dir %s outlived the run", tmpdir)
	}
	if got := read(t, filepath.Join(f.work, "src", "loot")); strings.Contains(got, secret) {
		t.Errorf("read the host's /tmp: %q", got)
	}
	if exists(hostTmp.Name() + ".new") {
		os.Remove(hostTmp.Name() + ".new")
		t.Error("wrote the host's /tmp")
	}
}

// TestProcesses: no signals to, ptrace of, or /proc/PID/environ of host processes; only
// descriptors 0-2; daemons die with the command; exit statuses pass through.
func TestProcesses(t *testing.T) {
	f := newFixture(t)
	marker := strconv.Itoa(800000000 + os.Getpid())
	host := exec.Command("sleep", "1000")
	host.Env = []string{"MOAT_SECRET_ENV=" + secret}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { host.Process.Kill(); host.Wait() }()
	hp := strconv.Itoa(host.Process.Pid)
	o := f.run(t, connbroker.Policy{}, `
kill -TERM `+hp+` 2>/dev/null && echo signalled
kill -9 $PPID 2>/dev/null && echo killed-supervisor
cat /proc/`+hp+`/environ > "$W/src/environ" 2>/dev/null
ls /proc/self/fd | tr '\n' ' ' > "$W/src/fds"; echo
grep -E '^Cap(Eff|Prm|Amb|Bnd|Inh):' /proc/self/status > "$W/src/caps"
grep -E '^Cap(Eff|Prm):' /proc/$PPID/status > "$W/src/supervisor-caps"
unshare -U true 2>/dev/null && echo nested-userns
setsid sleep `+marker+` </dev/null >/dev/null 2>&1 &
( sleep `+marker+` & ) 
nohup sleep `+marker+` >/dev/null 2>&1 &
sleep 0.2
exit 7
`)
	if o.res.ExitCode != 7 {
		t.Errorf("exit code %d, want 7", o.res.ExitCode)
	}
	for _, bad := range []string{"signalled", "killed-supervisor", "nested-userns"} {
		if strings.Contains(o.stdout, bad) {
			t.Errorf("the command reports %q", bad)
		}
	}
	if err := host.Process.Signal(os.Signal(nil)); err != nil && !strings.Contains(err.Error(), "unsupported") {
		t.Logf("signal probe: %v", err)
	}
	if b, _ := os.ReadFile("/proc/" + hp + "/stat"); len(b) == 0 {
		t.Error("the host process is gone")
	}
	if got := read(t, filepath.Join(f.work, "src", "environ")); strings.Contains(got, secret) {
		t.Errorf("read a host process's environment: %q", got)
	}
	if got := strings.TrimSpace(read(t, filepath.Join(f.work, "src", "fds"))); got != "0 1 2 3" {
		t.Errorf("descriptors inside: %q, want 0 1 2 and ls's own 3", got)
	}
	if left := withMarker(marker); len(left) > 0 {
		t.Errorf("background processes outlived the run: %v", left)
	}
	for _, name := range []string{"caps", "supervisor-caps"} {
		for _, l := range strings.Split(strings.TrimSpace(read(t, filepath.Join(f.work, "src", name))), "\n") {
			if strings.HasPrefix(l, "CapBnd:") && os.Geteuid() != 0 {
				continue // only a process with CAP_SETPCAP can empty it; no_new_privs makes it moot
			}
			if !strings.HasSuffix(l, "0000000000000000") {
				t.Errorf("%s: %s", name, l)
			}
		}
	}
	o = f.run(t, connbroker.Policy{}, `kill -TERM $$`)
	if o.res.ExitCode != 128+15 || o.res.Signal != 15 {
		t.Errorf("killed by SIGTERM: exit %d signal %d", o.res.ExitCode, o.res.Signal)
	}
}

func withMarker(marker string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, []byte(marker)) {
			out = append(out, e.Name()+":"+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// TestNetwork: only the proxy stand-in is reachable, by TCP; judged by listener logs.
func TestNetwork(t *testing.T) {
	f := newFixture(t)
	proxy, forbidden := testmoat.Serve(t, "tcp4", "127.0.0.1:0"), testmoat.Serve(t, "tcp4", "127.0.0.1:0")
	o := f.run(t, connbroker.Policy{TCP: []netip.AddrPort{netip.MustParseAddrPort(proxy.Addr())}}, fmt.Sprintf(`
echo via-proxy > /dev/tcp/%s/%s && echo proxy-ok
echo leak > /dev/tcp/%s/%s 2>/dev/null && echo leak-ok
echo leak-udp > /dev/udp/%s/%s 2>/dev/null && echo udp-ok
curl -s --max-time 2 http://%s/ >/dev/null 2>&1 && echo curl-ok
exit 0
`, proxy.Host(), proxy.Port(), forbidden.Host(), forbidden.Port(), forbidden.Host(), forbidden.Port(), forbidden.Addr()))
	time.Sleep(100 * time.Millisecond)
	if !strings.Contains(o.stdout, "proxy-ok") || !contains(proxy.Lines(), "via-proxy") {
		t.Errorf("the proxy stand-in wasn't reached: %q; it got %q; stderr %s", o.stdout, proxy.Lines(), o.stderr)
	}
	if n := len(forbidden.Lines()); n > 0 || strings.Contains(o.stdout, "leak-ok") || strings.Contains(o.stdout, "curl-ok") {
		t.Errorf("reached the forbidden listener: %q / %q", forbidden.Lines(), o.stdout)
	}
	blocked := false
	for _, e := range o.events {
		if !e.Allowed && e.Addr == forbidden.Addr() {
			blocked = true
		}
	}
	if !blocked {
		t.Errorf("no blocked-connect event for %s: %v", forbidden.Addr(), o.events)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestSupervisorGone: when the supervisor goes away (its control pipe closes), the
// sandbox ends and nothing it started survives.
func TestSupervisorGone(t *testing.T) {
	f := newFixture(t)
	marker := strconv.Itoa(700000000 + os.Getpid())
	s := &direct.Spec{Spec: spec.Spec{
		Argv:   []string{"bash", "-c", "setsid sleep " + marker + " </dev/null >/dev/null 2>&1 & echo started; sleep " + marker},
		Env:    []string{"PATH=/usr/bin:/bin"},
		Dir:    f.work,
		Mounts: f.mounts,
	}}
	var out bytes.Buffer
	p, err := direct.Start(s, nil, &out, os.Stderr, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Judged by the count the loop last saw: a second count can catch the daemon
	// between setsid's fork and its exit (setsid forks when it leads its group).
	deadline := time.Now().Add(10 * time.Second)
	n := 0
	for n = len(withMarker(marker)); n < 2 && time.Now().Before(deadline); n = len(withMarker(marker)) {
		time.Sleep(10 * time.Millisecond)
	}
	if n < 2 {
		t.Fatalf("only %d sandboxed processes started", n)
	}
	p.Kill()
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Signal != 9 {
		t.Errorf("result %+v, want the command killed by SIGKILL", res)
	}
	if left := withMarker(marker); len(left) > 0 {
		t.Errorf("processes outlived the supervisor: %v", left)
	}
}

// TestExecFailures: a missing or non-executable command is reported with its errno, for
// the supervisor's 127 and 126.
func TestExecFailures(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		argv  []string
		errno int
	}{
		{[]string{"no-such-command-moat"}, 2},                       // ENOENT: 127
		{[]string{filepath.Join(f.work, "README")}, 13},             // EACCES: 126
		{[]string{filepath.Join(f.home, ".ssh", "id_ed25519")}, 13}, // not executable (and denied)
	} {
		s := &direct.Spec{Spec: spec.Spec{Argv: tc.argv, Env: []string{"PATH=/usr/bin:/bin"}, Dir: f.work, Mounts: f.mounts}}
		p, err := direct.Start(s, nil, os.Stdout, os.Stderr, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if res.Stage != "exec" || res.Errno != tc.errno {
			t.Errorf("%v: %+v, want stage exec, errno %d", tc.argv, res, tc.errno)
		}
	}
}

// TestSignalForwarding: signals the supervisor forwards reach the command, which Landlock's
// scoping doesn't stop (the supervisor stage is outside the domain).
func TestSignalForwarding(t *testing.T) {
	f := newFixture(t)
	s := &direct.Spec{Spec: spec.Spec{Argv: []string{"bash", "-c", "trap 'echo got-usr1' USR1; echo ready; while :; do sleep 0.05; done"}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: f.work, Mounts: f.mounts}}
	r, w, _ := os.Pipe()
	p, err := direct.Start(s, nil, w, os.Stderr, nil)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, _ := r.Read(buf); !strings.Contains(string(buf[:n]), "ready") {
		t.Fatalf("no ready: %q", buf[:n])
	}
	p.Signal(syscall.SIGUSR1)
	n, _ := r.Read(buf)
	if !strings.Contains(string(buf[:n]), "got-usr1") {
		t.Errorf("SIGUSR1 didn't arrive: %q", buf[:n])
	}
	p.Signal(syscall.SIGTERM)
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 128+15 {
		t.Errorf("after SIGTERM: %+v", res)
	}
}
