//go:build linux

package sandbox_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/linux/fusemask"
	"github.com/moat-sandbox/moat/policy"
	"github.com/moat-sandbox/moat/sandbox"
)

// fsRun is one sandboxed run of a script with file events collected.
type fsRun struct {
	out, debug string
	err        error
	events     []sandbox.FileEvent
}

// runFS runs script under sh in f's workspace with the default policy plus flags,
// collecting file events; during, when set, runs while the sandbox does.
func (f *fixture) runFS(t *testing.T, flags policy.Flags, script string, setup func(*sandbox.Cmd), during func(*sandbox.Cmd)) fsRun {
	t.Helper()
	pol, err := policy.Compile(nil, flags, policy.Env{Cwd: f.ws, Home: f.home})
	if err != nil {
		t.Fatal(err)
	}
	cmd := sandbox.Command(pol, "sh", "-c", script)
	cmd.Env = append(os.Environ(), "HOME="+f.home, "LC_ALL=C")
	var out, debug bytes.Buffer
	var mu sync.Mutex
	var r fsRun
	cmd.Stdout, cmd.Stderr, cmd.Debug = &out, &out, &debug
	cmd.FileEvents = func(ev sandbox.FileEvent) {
		mu.Lock()
		r.events = append(r.events, ev)
		mu.Unlock()
	}
	if setup != nil {
		setup(cmd)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start: %v\n%s", err, debug.String())
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if during != nil {
		during(cmd)
	}
	select {
	case r.err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Kill()
		t.Fatal("sandbox did not finish in 60s")
	}
	r.out, r.debug = out.String(), debug.String()
	return r
}

// needFUSE skips a test of the FUSE masks where this user can't open the device
// (a 0600 /dev/fuse, as some CI hosts have; desktop distributions make it 0666).
func needFUSE(t *testing.T) {
	t.Helper()
	if err := fusemask.Check(); err != nil {
		t.Skipf("FUSE masks unavailable to this user, so moat falls back to plain masks (TestPlainMasksFallback): %v", err)
	}
}

// secretFiles puts canaries where the default policy hides them: ~/.ssh/id_rsa (the
// fixture's token), ~/.netrc and the workspace's .env.
func (f *fixture) secretFiles(t *testing.T) {
	t.Helper()
	for _, p := range []string{filepath.Join(f.home, ".netrc"), filepath.Join(f.ws, ".env")} {
		if err := os.WriteFile(p, []byte(f.token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// probeScript reads, lists and stats the hidden paths, writing what it saw to stdout;
// the FUSE and plain masks must give it the same output.
const probeScript = `
for p in "$HOME/.ssh/id_rsa" "$HOME/.netrc" .env; do
	if c=$(cat "$p" 2>&1); then echo "read $p: ok, ${#c} bytes: $c"; else echo "read $p: $c"; fi
done
echo "list ~/.ssh: [$(ls -A "$HOME/.ssh" 2>&1)]"
stat -c '%n %s %a %F %u' "$HOME/.netrc" .env
stat -c '%n %a %F %u' "$HOME/.ssh"
echo x > .env 2>/dev/null || echo "write .env refused"
[ -e "$HOME/.ssh/config" ] || echo "no ~/.ssh/config"
`

func TestFileEvents(t *testing.T) {
	needFUSE(t)
	f := newFixture(t)
	f.secretFiles(t)
	r := f.runFS(t, policy.Flags{}, probeScript, nil, nil)
	if r.err != nil {
		t.Fatalf("run: %v\n%s", r.err, r.out)
	}
	if !strings.Contains(r.debug, "FUSE masks cover") {
		t.Fatalf("the FUSE masks were not used:\n%s", r.debug)
	}
	// The command sees what the plain masks show: no ~/.ssh/id_rsa, empty files, an
	// empty directory.
	for _, want := range []string{
		"read " + f.home + "/.ssh/id_rsa: cat: " + f.home + "/.ssh/id_rsa: No such file or directory",
		"read " + f.home + "/.netrc: ok, 0 bytes: \n",
		"read .env: ok, 0 bytes: \n",
		"list ~/.ssh: []",
		".env 0 444 regular empty file",
		"/.ssh 755 directory",
		"write .env refused",
		"no ~/.ssh/config",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("output lacks %q:\n%s", want, r.out)
		}
	}
	type key struct{ op, path string }
	got := map[key]sandbox.FileEvent{}
	for _, ev := range r.events {
		got[key{ev.Op, ev.Path}] = ev
	}
	ssh := filepath.Join(f.home, ".ssh")
	for _, want := range []sandbox.FileEvent{
		{Op: "read", Path: filepath.Join(ssh, "id_rsa"), Hidden: ssh, Rule: "credential store (~/.ssh"},
		{Op: "read", Path: filepath.Join(ssh, "config"), Hidden: ssh, Rule: "credential store (~/.ssh"},
		{Op: "list", Path: ssh, Hidden: ssh, Rule: "credential store (~/.ssh"},
		{Op: "read", Path: filepath.Join(f.home, ".netrc"), Hidden: filepath.Join(f.home, ".netrc"), Rule: "credential store (~/.netrc"},
		{Op: "read", Path: filepath.Join(f.ws, ".env"), Hidden: filepath.Join(f.ws, ".env"), Rule: "workspace secrets"},
	} {
		ev, ok := got[key{want.Op, want.Path}]
		switch {
		case !ok:
			t.Errorf("no %s event for %s; events: %+v", want.Op, want.Path, r.events)
		case ev.Kind != "fs" || ev.Action != "deny" || ev.Hidden != want.Hidden || !strings.Contains(ev.Rule, want.Rule) || ev.Time.IsZero():
			t.Errorf("event %+v, want hidden %s and a rule with %q", ev, want.Hidden, want.Rule)
		}
	}
	if ev := got[key{"read", filepath.Join(ssh, "id_rsa")}]; !strings.Contains(ev.Hint, "--allow-read "+filepath.Join(ssh, "id_rsa")) {
		t.Errorf("hint %q doesn't say how to allow the file", ev.Hint)
	}
	if len(got) != len(r.events) {
		t.Errorf("repeated events: %+v", r.events)
	}
	for _, s := range []string{r.out, r.debug, fmtEvents(r.events)} {
		if strings.Contains(s, f.token) {
			t.Fatalf("a canary leaked:\n%s", s)
		}
	}
}

// TestPlainMasksFallback: where the FUSE device can't be opened, the same paths are
// hidden the same way, no file event is reported, and the debug output says why.
func TestPlainMasksFallback(t *testing.T) {
	f := newFixture(t)
	f.secretFiles(t)
	plain := f.runFS(t, policy.Flags{}, probeScript, sandbox.UsePlainMasks, nil)
	if plain.err != nil {
		t.Fatalf("run: %v\n%s", plain.err, plain.out)
	}
	if !strings.Contains(plain.debug, "filesystem denial events unavailable: open /nonexistent/moat-test-fuse: no such file or directory") {
		t.Errorf("debug output doesn't say why there are no file events:\n%s", plain.debug)
	}
	if len(plain.events) != 0 {
		t.Errorf("file events without FUSE: %+v", plain.events)
	}
	if strings.Contains(plain.out, f.token) {
		t.Fatalf("a canary leaked:\n%s", plain.out)
	}
	if !strings.Contains(plain.out, "list ~/.ssh: []") || !strings.Contains(plain.out, "read .env: ok, 0 bytes") {
		t.Fatalf("plain masks:\n%s", plain.out)
	}
	if fusemask.Check() != nil {
		return
	}
	served := f.runFS(t, policy.Flags{}, probeScript, nil, nil)
	// Init's debug lines count the mount steps, which host sockets bound meanwhile
	// change; the command's own output must be the same.
	if commandOutput(served.out) != commandOutput(plain.out) {
		t.Errorf("the command sees the FUSE masks differently from the plain ones:\n--- plain:\n%s\n--- FUSE:\n%s", plain.out, served.out)
	}
}

// TestFUSEServerGone: when the supervisor stops serving the masks mid-run, every
// access to them fails; nothing of the hidden files shows, and a path re-opened
// inside a hidden directory stays readable.
func TestFUSEServerGone(t *testing.T) {
	needFUSE(t)
	f := newFixture(t)
	f.secretFiles(t)
	kh := filepath.Join(f.home, ".ssh", "known_hosts")
	if err := os.WriteFile(kh, []byte("KNOWN-HOSTS\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `
cat "$HOME/.ssh/known_hosts" .env; ls -A "$HOME/.ssh"; echo before-stop
touch ready
i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
echo after-stop
cat "$HOME/.ssh/id_rsa" "$HOME/.ssh/other" .env "$HOME/.netrc"; ls -A "$HOME/.ssh"; cat "$HOME/.ssh/known_hosts"
echo end`
	stopped := false
	r := f.runFS(t, policy.Flags{AllowRead: []string{kh}}, script, nil, func(c *sandbox.Cmd) {
		for i := 0; i < 600 && !f.exists("ready"); i++ {
			time.Sleep(50 * time.Millisecond)
		}
		stopped = sandbox.StopFUSE(c)
		os.WriteFile(filepath.Join(f.ws, "go"), nil, 0o644)
	})
	if !stopped {
		t.Fatalf("no FUSE server to stop:\n%s\n%s", r.out, r.debug)
	}
	before, after, ok := strings.Cut(r.out, "after-stop\n")
	if !ok || !strings.Contains(before, "KNOWN-HOSTS\nknown_hosts\nbefore-stop") || !strings.Contains(after, "end") {
		t.Fatalf("control: the script did not run through:\n%s", r.out)
	}
	if strings.Count(after, "Transport endpoint is not connected") < 5 {
		t.Errorf("accesses to the masks did not all fail with ENOTCONN once the server was gone:\n%s", after)
	}
	if !strings.Contains(after, "KNOWN-HOSTS") {
		t.Errorf("the re-opened known_hosts is gone with the server:\n%s", after)
	}
	if strings.Contains(r.out, f.token) {
		t.Fatalf("a canary leaked:\n%s", r.out)
	}
}

// TestFileEventsBounded: a command that looks up names in a hidden directory in a
// loop gets a bounded number of events, and a count of the rest.
func TestFileEventsBounded(t *testing.T) {
	needFUSE(t)
	f := newFixture(t)
	f.secretFiles(t)
	const n = 3000
	r := f.runFS(t, policy.Flags{}, `i=0; while [ $i -lt 3000 ]; do [ -e "$HOME/.ssh/k$i" ]; [ -e "$HOME/.ssh/k0" ]; i=$((i+1)); done; cat .env; echo done`, nil, nil)
	if r.err != nil || !strings.Contains(r.out, "done") {
		t.Fatalf("run: %v\n%s", r.err, r.out)
	}
	ssh := filepath.Join(f.home, ".ssh")
	var inSSH, env int
	var count *sandbox.FileEvent
	for i, ev := range r.events {
		switch {
		case ev.Count > 0:
			count = &r.events[i]
		case ev.Hidden == ssh:
			inSSH++
		case ev.Path == filepath.Join(f.ws, ".env"):
			env++
		}
	}
	if inSSH != fusemask.MaxPerHidden || env != 1 {
		t.Fatalf("%d events below ~/.ssh for %d distinct lookups (want %d) and %d for .env (want 1)", inSSH, n, fusemask.MaxPerHidden, env)
	}
	// Each loop looks up k0 again, a repeat of a reported lookup, which is dropped.
	if want := n - fusemask.MaxPerHidden; count == nil || count.Hidden != ssh || count.Count != want || count.Path != "" ||
		!strings.HasPrefix(count.Detail, fmt.Sprint(want)+" more accesses to "+ssh) || count != &r.events[len(r.events)-1] {
		t.Errorf("count event %+v, want the last, counting %d more in %s", count, want, ssh)
	}
}

func commandOutput(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(line, "moat: debug: ") {
			b.WriteString(line)
		}
	}
	return b.String()
}

func fmtEvents(evs []sandbox.FileEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.Path + " " + ev.Rule + " " + ev.Hint + " " + ev.Detail + "\n")
	}
	return b.String()
}
