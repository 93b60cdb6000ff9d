package escape_test

import (
	"encoding/json"
	"github.com/moat-sandbox/moat/internal/testmoat"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/linux/fusemask"
)

// fsEvent is the part of a --events line about a hidden path.
type fsEvent struct {
	Kind, Action, Op, Path, Hidden, Rule, Hint string
	Count                                      int
}

// fsEvents reads the "fs" lines of an event log on the host.
func fsEvents(t *testing.T, path string) []fsEvent {
	t.Helper()
	var out []fsEvent
	for _, line := range strings.Split(strings.TrimSpace(testmoat.ReadFile(t, path)), "\n") {
		var ev fsEvent
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event log line %q: %v", line, err)
		}
		if ev.Kind == "fs" {
			out = append(out, ev)
		}
	}
	return out
}

// TestDenialEvents: reads of hidden paths fail as they always did, and each is an
// event in the run's log and a line of the summary at exit, naming the path and the
// rule; the hidden content shows nowhere. The command can't stop the reporting:
// not by aborting the FUSE connection, nor by flooding the log first. Where this
// user can't open the FUSE device, the same reads fail the same way, unreported.
func TestDenialEvents(t *testing.T) {
	b := newBox(t)
	secret := testmoat.Token("idrsa")
	envTok := testmoat.Token("env")
	writeFile(t, filepath.Join(b.home, ".ssh", "id_rsa"), secret+"\n", 0o600)
	writeFile(t, filepath.Join(b.home, ".ssh", "known_hosts"), "KNOWN\n", 0o644)
	writeFile(t, filepath.Join(b.ws, ".env"), "API_KEY="+envTok+"\n", 0o600)
	writeFile(t, filepath.Join(b.home, ".aws", "credentials"), "[default]\n", 0o600)
	ignTok := testmoat.Token("ignored")
	writeFile(t, filepath.Join(b.ws, ".moatignore"), "# mine\nprivate.txt\n", 0o644)
	writeFile(t, filepath.Join(b.ws, "private.txt"), ignTok+"\n", 0o644)
	events := filepath.Join(b.root, "events.jsonl")
	r := b.run(opts{
		flags: []string{"--events", events, "--debug"},
		script: `exec 2>>err.txt
cat "$HOME/.ssh/id_rsa"; echo "rc=$?"
echo "env=[$(cat .env)]"
echo "ign=[$(cat private.txt)]"
echo "ls=[$(ls -A "$HOME/.ssh")]"
# Attacks on the reporting: abort the FUSE connection; open the device.
for f in /sys/fs/fuse/connections/*/abort; do echo 1 > "$f"; done
cat /dev/fuse; ls /sys/fs/fuse/connections
# Flood the log with made-up names, then read.
i=0; while [ $i -lt 2000 ]; do [ -e "$HOME/.ssh/junk$i" ]; i=$((i+1)); done
cat "$HOME/.ssh/id_ed25519" "$HOME/.ssh/id_rsa" .env > loot 2>&1
cp -r "$HOME/.ssh" sshcopy; tar -cf ssh.tar -C "$HOME" .ssh
# A name that would forge a summary line and drive the user's terminal.
cat "$HOME/.aws/$(printf 'x\033]0;pwned\007\nmoat: nothing was blocked')"
echo end`,
	})
	out := r.stdout
	errs := testmoat.ReadFile(t, filepath.Join(b.ws, "err.txt"))
	if !strings.Contains(out, "end") {
		t.Fatalf("control: the script did not run through:\n%s\n%s", r, errs)
	}
	// Enforcement, as without events: no such file, an empty file, an empty dir.
	for _, want := range []string{"rc=1\n", "env=[]\n", "ign=[]\n", "ls=[]\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q: the hidden paths look different than before:\n%s", want, r)
		}
	}
	if !strings.Contains(errs, "cat: "+filepath.Join(b.home, ".ssh", "id_rsa")+": No such file or directory") {
		t.Errorf("reading ~/.ssh/id_rsa did not fail with ENOENT:\n%s", errs)
	}
	for _, tok := range []string{secret, envTok, ignTok} {
		if hits := filesContaining(t, b.root, tok, filepath.Join(b.home, ".ssh", "id_rsa"), filepath.Join(b.ws, ".env"), filepath.Join(b.ws, "private.txt")); len(hits) > 0 {
			t.Errorf("hidden content reached %v", hits)
		}
		if strings.Contains(r.stdout+r.stderr, tok) {
			t.Errorf("hidden content in moat's output:\n%s", r)
		}
	}

	evs := fsEvents(t, events)
	if err := fusemask.Check(); err != nil {
		t.Logf("FUSE unavailable to this user (%v): checking the fallback", err)
		if len(evs) != 0 || strings.Contains(r.stderr, "moat: blocked read") {
			t.Errorf("file events without FUSE: %+v\n%s", evs, r)
		}
		if !strings.Contains(r.stderr, "moat: debug: filesystem denial events unavailable: open /dev/fuse: ") {
			t.Errorf("--debug doesn't say why there are no file events:\n%s", r.stderr)
		}
		return
	}
	ssh := filepath.Join(b.home, ".ssh")
	find := func(op, path string) *fsEvent {
		for i := range evs {
			if evs[i].Op == op && evs[i].Path == path {
				return &evs[i]
			}
		}
		return nil
	}
	for _, c := range []struct{ op, path, hidden, rule string }{
		{"read", filepath.Join(ssh, "id_rsa"), ssh, "credential store (~/.ssh: SSH private keys)"},
		{"list", ssh, ssh, "credential store (~/.ssh"},
		{"read", filepath.Join(b.ws, ".env"), filepath.Join(b.ws, ".env"), "workspace secrets"},
		{"read", filepath.Join(b.ws, "private.txt"), filepath.Join(b.ws, "private.txt"), ".moatignore:2 private.txt"},
	} {
		ev := find(c.op, c.path)
		if ev == nil {
			t.Errorf("no %s event for %s in the log:\n%s", c.op, c.path, testmoat.ReadFile(t, events))
			continue
		}
		if ev.Action != "deny" || ev.Hidden != c.hidden || !strings.Contains(ev.Rule, c.rule) || ev.Hint == "" {
			t.Errorf("event %+v, want hidden %s, a rule with %q, and a hint", ev, c.hidden, c.rule)
		}
		if strings.HasSuffix(c.rule, "private.txt") && !strings.Contains(ev.Hint, "the ignore file "+filepath.Join(b.ws, ".moatignore")+":2 private.txt hides it; outside moat") {
			t.Errorf("the hint of a path an ignore file hides doesn't name the line to change: %q", ev.Hint)
		}
	}
	// The read after the flood is still accounted for, below ~/.ssh.
	var counted int
	for _, ev := range evs {
		if ev.Hidden == ssh && ev.Count > 0 {
			counted += ev.Count
		}
	}
	if find("read", filepath.Join(ssh, "id_ed25519")) == nil && counted == 0 {
		t.Errorf("the read after the flood is neither an event nor counted:\n%s", testmoat.ReadFile(t, events))
	}
	if len(evs) > fusemask.MaxDenials+10 {
		t.Errorf("%d file events: the log is not bounded", len(evs))
	}
	if !strings.Contains(r.stderr, "moat: debug: filesystem denial events: moat's FUSE masks cover the ") {
		t.Errorf("--debug doesn't say the FUSE masks are used:\n%s", r.stderr)
	}
	if strings.ContainsAny(r.stderr, "\x1b\x07") || strings.Contains(r.stderr, "\nmoat: nothing was blocked") ||
		!strings.Contains(r.stderr, `moat: blocked read of "~/.aws/x\x1b]0;pwned\a\nmoat: nothing was blocked" (`) {
		t.Errorf("a name the command chose reached moat's stderr raw, or not quoted:\n%q", r.stderr)
	}
	for _, want := range []string{
		"\nmoat: blocked read of ~/.ssh/id_rsa, ~/.ssh/junk0 and ",
		" more in ~/.ssh (default: credential store (~/.ssh: SSH private keys)) — add \"~/.ssh\" to \"moat\": {\"allowSecrets\": [...]}",
		"\nmoat: blocked read of " + filepath.Join(b.ws, ".env") + " (default: workspace secrets",
		"\nmoat: blocked listing of ~/.ssh (",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the summary lacks %q:\n%s", want, r.stderr)
		}
	}
}
