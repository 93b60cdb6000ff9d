package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/policy"
	"github.com/moat-sandbox/moat/sandbox"
)

func TestFileSummary(t *testing.T) {
	const home = "/home/u"
	pol, err := policy.Compile(nil, policy.Flags{DenyRead: []string{"/data/private"}}, policy.Env{Cwd: "/work", Home: home})
	if err != nil {
		t.Fatal(err)
	}
	const sshRule = "default: credential store (~/.ssh: SSH private keys)"
	read := func(path, hidden, rule string) sandbox.FileEvent {
		return sandbox.FileEvent{Kind: "fs", Action: "deny", Op: "read", Path: path, Hidden: hidden, Rule: rule,
			Hint: pol.ExplainPath(path).ReadHint}
	}
	for _, tt := range []struct {
		name   string
		events []sandbox.FileEvent
		want   []string
	}{
		{"one file in a hidden dir: the narrowest hint",
			[]sandbox.FileEvent{read(home+"/.ssh/id_rsa", home+"/.ssh", sshRule)},
			[]string{`moat: blocked read of ~/.ssh/id_rsa (` + sshRule + `) — allow with --allow-read ~/.ssh/id_rsa (only that path), or add "~/.ssh" to "moat": {"allowSecrets": [...]} in your user config (all of ~/.ssh)`}},
		{"several: grouped, with the directory's hint",
			[]sandbox.FileEvent{
				read(home+"/.ssh/id_rsa", home+"/.ssh", sshRule), read(home+"/.ssh/config", home+"/.ssh", sshRule),
				read(home+"/.ssh/id_ed25519", home+"/.ssh", sshRule),
			},
			[]string{`moat: blocked read of ~/.ssh/id_rsa, ~/.ssh/config and 1 more in ~/.ssh (` + sshRule + `) — add "~/.ssh" to "moat": {"allowSecrets": [...]} in your user config; a built-in secret is dropped only by name`}},
		{"a count of the unreported joins its group",
			[]sandbox.FileEvent{
				read(home+"/.ssh/a", home+"/.ssh", sshRule),
				{Kind: "fs", Action: "deny", Op: "read", Hidden: home + "/.ssh", Rule: sshRule, Count: 500, Detail: "500 more"},
			},
			[]string{`moat: blocked read of ~/.ssh/a and 500 more in ~/.ssh (`}},
		{"only a count",
			[]sandbox.FileEvent{{Kind: "fs", Action: "deny", Op: "read", Hidden: "/data/private", Rule: "flag --deny-read", Count: 7}},
			[]string{`moat: blocked read of 7 paths in /data/private (flag --deny-read) — drop --deny-read /data/private`}},
		{"a listing; a path outside home stays absolute",
			[]sandbox.FileEvent{{Kind: "fs", Action: "deny", Op: "list", Path: "/data/private", Hidden: "/data/private", Rule: "flag --deny-read",
				Hint: pol.ExplainPath("/data/private").ReadHint}},
			[]string{`moat: blocked listing of /data/private (flag --deny-read) — drop --deny-read /data/private`}},
		{"no rule to name: moat explain",
			[]sandbox.FileEvent{{Kind: "fs", Action: "deny", Op: "read", Path: home + "/.gnupg/S.gpg-agent", Hidden: home + "/.gnupg/S.gpg-agent", Rule: "host socket"}},
			[]string{`moat: blocked read of ~/.gnupg/S.gpg-agent (host socket) — 'moat explain ~/.gnupg/S.gpg-agent' says which rule hides it`}},
		{"a name made to forge lines or drive the terminal is quoted",
			[]sandbox.FileEvent{read(home+"/.ssh/x\x1b[2J\nmoat: nothing blocked", home+"/.ssh", sshRule)},
			[]string{`moat: blocked read of "~/.ssh/x\x1b[2J\nmoat: nothing blocked" (` + sshRule + `) — allow with --allow-read ~/.ssh/x?[2J?moat: nothing blocked (only that path)`}},
		{"home itself is not a prefix of a sibling",
			[]sandbox.FileEvent{read(home+"2/x", home+"2/x", "r")},
			[]string{`moat: blocked read of /home/u2/x (r)`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log, out bytes.Buffer
			l := newEventLog(&log)
			l.pol = pol
			for _, ev := range tt.events {
				l.addFile(ev)
			}
			l.summary(&out)
			got := out.String()
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("summary lacks\n  %s\ngot\n  %s", w, got)
				}
			}
			if n := strings.Count(got, "\n"); n != 1 {
				t.Errorf("%d summary lines, want 1:\n%s", n, got)
			}
			// Every event is a JSON line of the log, as given.
			dec := json.NewDecoder(&log)
			for _, want := range tt.events {
				var ev sandbox.FileEvent
				if err := dec.Decode(&ev); err != nil || ev != want {
					t.Errorf("log line %+v (%v), want %+v", ev, err, want)
				}
			}
		})
	}
}

// TestEventLogBounded: a command that makes up a new host for every connection
// (rt3 grew moat to 1.25 GB that way) leaves the summary's memory bounded: the
// first summaryMax destinations are kept and named, the rest only counted.
func TestEventLogBounded(t *testing.T) {
	l := newEventLog(nil)
	for i := range 10000 {
		l.add(sandbox.Event{Action: "deny", Proto: "http", Host: fmt.Sprintf("h%d.example", i), Port: 80})
	}
	l.add(sandbox.Event{Action: "deny", Proto: "http", Host: "h1.example", Port: 80})
	if len(l.denied) != summaryMax || len(l.seen) != summaryMax || l.more != 10000-summaryMax {
		t.Fatalf("kept %d destinations (%d keys), counted %d more; want %d and %d", len(l.denied), len(l.seen), l.more, summaryMax, 10000-summaryMax)
	}
	var out strings.Builder
	l.summary(&out)
	if !strings.Contains(out.String(), "h1.example:80 (2 times)") || !strings.Contains(out.String(), "9980 more refusals") {
		t.Errorf("summary:\n%s", out.String())
	}
}
