package escape_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/moat-sandbox/moat/internal/testmoat"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testInheritedFDs: descriptors moat's caller held open (to a secret) don't reach
// the command, whatever their number.
func testInheritedFDs(t *testing.T) {
	b := newBox(t)
	secret := testmoat.Token("fd")
	path := filepath.Join(b.root, "secret-fd")
	writeFile(t, path, secret, 0o600)
	var files []*os.File
	for i := 0; i < 6; i++ { // fds 3 to 8: over moat's own pipes and above them
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		files = append(files, f)
	}
	const script = `exec 2>/dev/null
for n in 3 4 5 6 7 8 9 10; do (eval "timeout 2 cat <&$n"); timeout 2 cat /proc/self/fd/$n; done
ls -l /proc/self/fd
echo marker`
	// Inside only: init's own descriptors (on the host, /proc/1 is the host's init).
	const initFDs = "\nfor f in /proc/1/fd/*; do timeout 2 cat \"$f\"; done 2>/dev/null; ls -l /proc/1/fd"

	// Control: the same script outside the sandbox reads the secret from the fds.
	ctl := b.host(b.ws, files, "sh", "-c", script)
	if !strings.Contains(ctl.stdout, secret) {
		t.Fatalf("control: the script did not read the secret through the passed fds outside the sandbox:\n%s", ctl)
	}
	for _, f := range files {
		if _, err := f.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
	}
	r := b.run(opts{extra: files, script: "exec >loot\n" + script + initFDs})
	loot := testmoat.ReadFile(t, filepath.Join(b.ws, "loot"))
	if !strings.Contains(loot, "marker") {
		t.Fatalf("control: the script's output did not reach the loot:\n%s", r)
	}
	if hits := filesContaining(t, b.ws, secret); len(hits) > 0 {
		t.Errorf("an inherited descriptor to a secret reached the command: %v\nloot:\n%s", hits, loot)
	}
}

// hostProc is a process on the host, with a token in its environment.
type hostProc struct {
	cmd  *exec.Cmd
	tok  string
	done chan struct{}
}

func startHostProc(t *testing.T) *hostProc {
	t.Helper()
	p := &hostProc{tok: testmoat.Token("environ"), done: make(chan struct{})}
	p.cmd = exec.Command("sleep", "300")
	p.cmd.Env = []string{"HOST_SECRET=" + p.tok}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	return p
}

func (p *hostProc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return syscall.Kill(p.cmd.Process.Pid, 0) == nil
	}
}

// testHostProcesses: the sandbox can neither signal nor read the user's other
// processes.
func testHostProcesses(t *testing.T) {
	b := newBox(t)
	script := func(pid int) string {
		return fmt.Sprintf(`exec >>loot 2>&1
cat /proc/%[1]d/environ; cat /proc/%[1]d/cmdline; tr '\0' '\n' < /proc/%[1]d/environ
kill -9 %[1]d; kill -TERM %[1]d
python3 -c 'import os, signal; os.kill(%[1]d, signal.SIGKILL)'
grep -l HOST_SECRET /proc/[0-9]*/environ
echo marker`, pid)
	}

	// Control: the same script outside the sandbox reads and kills a host process.
	victim := startHostProc(t)
	ctlDir := filepath.Join(b.root, "control")
	testmoat.Mkdir(t, ctlDir)
	b.host(ctlDir, nil, "sh", "-c", script(victim.cmd.Process.Pid))
	if !strings.Contains(testmoat.ReadFile(t, filepath.Join(ctlDir, "loot")), victim.tok) {
		t.Errorf("control: the script did not read the environ of a host process outside the sandbox")
	}
	if !testmoat.WaitFor(10*time.Second, func() bool { return !victim.alive() }) {
		t.Errorf("control: the script did not kill a host process outside the sandbox")
	}

	target := startHostProc(t)
	r := b.run(opts{script: script(target.cmd.Process.Pid)})
	loot := testmoat.ReadFile(t, filepath.Join(b.ws, "loot"))
	if !strings.Contains(loot, "marker") {
		t.Fatalf("control: the script's output did not reach the loot:\n%s", r)
	}
	if !target.alive() {
		t.Errorf("the sandbox killed host process %d", target.cmd.Process.Pid)
	}
	if hits := filesContaining(t, b.ws, target.tok); len(hits) > 0 {
		t.Errorf("the sandbox read the environment of host process %d: %v", target.cmd.Process.Pid, hits)
	}
}

// procsWith lists host processes whose command line contains marker (pgrep -f).
func procsWith(marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// testSupervision: a daemon the command starts with setsid doesn't outlive moat.
func testSupervision(t *testing.T) {
	b := newBox(t)
	mark := testmoat.Token("daemon")
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	// The marker only appears expanded, in the daemon's own argv: moat's command
	// line holds "$MARK".
	cmd := b.command(ctx, opts{env: []string{"MARK=" + mark}, script: `
setsid sh -c 'while :; do date >> beat; sleep 0.2; done' "$MARK" </dev/null >/dev/null 2>&1 &
nohup sh -c 'while :; do date >> beat2; sleep 0.2; done' "$MARK-nohup" </dev/null >/dev/null 2>&1 &
i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
`})
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Control: the daemons run, and the host sees them, while moat runs.
	beat := filepath.Join(b.ws, "beat")
	seen := testmoat.WaitFor(20*time.Second, func() bool {
		return len(procsWith(mark)) >= 2 && len(testmoat.ReadFile(t, beat)) > 0 && len(testmoat.ReadFile(t, beat+"2")) > 0
	})
	writeFile(t, filepath.Join(b.ws, "go"), "", 0o644)
	err := cmd.Wait()
	if !seen {
		t.Fatalf("control: the daemons never showed up on the host (procs %v, beat %q): %v\n%s", procsWith(mark), testmoat.ReadFile(t, beat), err, out.String())
	}
	size1, size2 := len(testmoat.ReadFile(t, beat)), len(testmoat.ReadFile(t, beat+"2"))
	time.Sleep(1500 * time.Millisecond) // long enough for several beats of a survivor
	if got := procsWith(mark); len(got) > 0 {
		t.Errorf("processes started in the sandbox outlived moat: pids %v", got)
	}
	if n1, n2 := len(testmoat.ReadFile(t, beat)), len(testmoat.ReadFile(t, beat+"2")); n1 != size1 || n2 != size2 {
		t.Errorf("a daemon kept writing after moat exited: beat %d -> %d bytes, beat2 %d -> %d", size1, n1, size2, n2)
	}

	// moat itself killed with SIGKILL (no chance to clean up): the sandbox dies too.
	mark2 := testmoat.Token("orphan")
	cmd2 := b.command(ctx, opts{env: []string{"MARK=" + mark2}, script: `
setsid sh -c 'while :; do date >> beat3; sleep 0.2; done' "$MARK" </dev/null >/dev/null 2>&1 &
while :; do sleep 1; done
`})
	if err := cmd2.Start(); err != nil {
		t.Fatal(err)
	}
	beat3 := filepath.Join(b.ws, "beat3")
	if !testmoat.WaitFor(20*time.Second, func() bool { return len(procsWith(mark2)) >= 1 && len(testmoat.ReadFile(t, beat3)) > 0 }) {
		cmd2.Process.Kill()
		cmd2.Wait()
		t.Fatalf("control: the daemon of the second run never showed up on the host")
	}
	cmd2.Process.Kill()
	cmd2.Wait()
	// The kernel tears the pid namespace down asynchronously: poll (a hang guard, not
	// a timing verdict) before looking for survivors.
	testmoat.WaitFor(10*time.Second, func() bool { return len(procsWith(mark2)) == 0 })
	size3 := len(testmoat.ReadFile(t, beat3))
	time.Sleep(1500 * time.Millisecond)
	if got := procsWith(mark2); len(got) > 0 {
		t.Errorf("processes started in the sandbox outlived a SIGKILLed moat: pids %v", got)
	}
	if n := len(testmoat.ReadFile(t, beat3)); n != size3 {
		t.Errorf("a daemon kept writing after moat was SIGKILLed: beat3 %d -> %d bytes", size3, n)
	}
}

// testExitStatus: moat passes exit statuses, signals and stdin through, and reports
// its own errors as 125.
func testExitStatus(t *testing.T) {
	for _, c := range []struct {
		name string
		o    opts
		want int
	}{
		{"exit_0", opts{script: "exit 0"}, 0},
		{"exit_3", opts{script: "exit 3"}, 3},
		{"killed_by_sigkill", opts{script: "kill -9 $$"}, 137},
		{"missing_command", opts{argv: []string{"moat-no-such-command-" + testmoat.Token("cmd")}}, 127},
		{"not_executable", opts{argv: []string{"./noexec.sh"}}, 126},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newBox(t)
			writeFile(t, filepath.Join(b.ws, "noexec.sh"), "#!/bin/sh\necho hi\n", 0o644)
			if r := b.run(c.o); r.code != c.want {
				t.Errorf("exit %d, want %d:\n%s", r.code, c.want, r)
			}
		})
	}

	t.Run("invalid_config", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		r := b.run(opts{config: "{\n  \"filesystem\": {\"allowWrite\": [\".\"]},\n  \"bogusKey\": true\n}\n", script: "echo ran > ran"})
		if r.code != 125 || !strings.Contains(r.stderr, "moat: error:") || !strings.Contains(r.stderr, "settings-") ||
			!strings.Contains(r.stderr, ".json:3") || !strings.Contains(r.stderr, "bogusKey") {
			t.Errorf("want exit 125 and \"moat: error:\" naming the file, line 3 and the key:\n%s", r)
		}
		if testmoat.Exists(filepath.Join(b.ws, "ran")) {
			t.Errorf("the command ran despite an invalid config")
		}
	})

	t.Run("stdin_passes_through", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		if r := b.run(opts{argv: []string{"cat"}, stdin: strings.NewReader("data\n")}); r.code != 0 || r.stdout != "data\n" {
			t.Errorf("echo data | moat run -- cat:\n%s", r)
		}
	})

	// SIGTERM to moat reaches the command, whose trap runs and whose status is moat's.
	t.Run("sigterm_relayed", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
		defer cancel()
		cmd := b.command(ctx, opts{script: `trap 'echo got > sig; exit 7' TERM; echo ready > ready; while :; do sleep 0.1; done`})
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if !testmoat.WaitFor(20*time.Second, func() bool { return testmoat.Exists(filepath.Join(b.ws, "ready")) }) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the trap script never started:\n%s", out.String())
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(20 * time.Second): // a hang guard: the trap needs a tenth of a second
			cmd.Process.Kill()
			<-done
			t.Fatalf("moat had not exited 20s after SIGTERM (sig=%q): the signal never reached the command\n%s",
				testmoat.ReadFile(t, filepath.Join(b.ws, "sig")), out.String())
		}
		if code := testmoat.ExitStatus(cmd, err); code != 7 {
			t.Errorf("moat exited %d, want 7 (the trap's status): %v\n%s", code, err, out.String())
		}
		if got := testmoat.ReadFile(t, filepath.Join(b.ws, "sig")); got != "got\n" {
			t.Errorf("the command's trap did not run (sig=%q)", got)
		}
	})
}
