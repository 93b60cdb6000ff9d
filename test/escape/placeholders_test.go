package escape_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testmoat"
)

// attackScript is left running by the command in TestPlaceholderRemovalRace: until it
// dies it creates the protected paths of an empty workspace, which moat covers with
// placeholders that it removes from the host at the end of the run. Its argument
// names its control file, which it rewrites each round: proof that it ran; with
// "mkdir" it makes the protected directories too, with "once" it does one round.
const attackScript = `
trap '' HUP INT TERM QUIT PIPE
while :; do
	: > "alive-$1"
	echo pwned > .envrc; echo pwned > .mcp.json; echo pwned > .gitmodules; echo pwned > .moat.jsonc
	if [ "$2" = mkdir ]; then
		mkdir -p .git/hooks .vscode .claude && echo pwned > .git/hooks/pre-commit && echo pwned > .vscode/tasks.json
	fi
	[ "$2" = once ] && exit 0
done 2>/dev/null
`

// subreaperScript becomes a child subreaper and starts an attacker as a grandchild
// whose parent exits at once: the attacker is reparented to the subreaper, not to
// moat's init.
const subreaperScript = `
import ctypes, os, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
if os.fork() == 0:
    if os.fork() == 0:
        os.execvp("sh", ["sh", "attack.sh", "grandchild", "mkdir"])
    os._exit(0)
while True:
    time.sleep(1)
`

// TestPlaceholderRemovalRace: moat removes its placeholders as soon as init reports
// the command's exit, while init itself is still ending. That is safe only because
// init has killed and reaped every other process of the sandbox first: a process
// that outlived the command could create the protected path on the host the moment
// its placeholder is gone (its cover inside goes with it). Each run leaves attackers
// behind that try exactly that, in tight loops, in every way of surviving a plain
// exit: in the background, in a session of their own ignoring SIGHUP and SIGTERM,
// stopped, forking at the moment the command exits, under a subreaper. Judged by the
// host's workspace after moat returns, and again after the attackers would have had
// time to act.
func TestPlaceholderRemovalRace(t *testing.T) {
	b := newBox(t)
	protected := []string{".envrc", ".mcp.json", ".gitmodules", ".moat.jsonc", ".git", ".vscode", ".claude"}
	script := `
cat > attack.sh <<'EOF'
` + attackScript + `
EOF
sh attack.sh plain &
sh attack.sh plain2 &
sh attack.sh plain3 &
sh attack.sh plain-mkdir mkdir &
setsid sh attack.sh setsid mkdir </dev/null >/dev/null 2>&1 &
sh -c 'kill -STOP $$; exec sh attack.sh stopped' &
sh -c 'while :; do sh attack.sh forked once; done' >/dev/null 2>&1 &
want="plain plain2 plain3 plain-mkdir setsid forked"
if command -v python3 >/dev/null; then
	cat > subreaper.py <<'EOF'
` + subreaperScript + `
EOF
	python3 subreaper.py &
	want="$want grandchild"
fi
echo "$want" > want
# Exit the moment every attacker is running: the command's exit starts moat's end.
i=0
while [ $i -lt 1000 ]; do
	ok=1
	for a in $want; do [ -e "alive-$a" ] || ok=0; done
	[ $ok = 1 ] && exit 0
	sleep 0.01; i=$((i+1))
done
exit 3
`
	const runs = 10
	for run := 0; run < runs; run++ {
		for _, f := range []string{"want", "attack.sh", "subreaper.py"} {
			os.Remove(filepath.Join(b.ws, f))
		}
		alive, _ := filepath.Glob(filepath.Join(b.ws, "alive-*"))
		for _, f := range alive {
			os.Remove(f)
		}
		r := b.run(opts{script: script})
		// Control: every attacker ran inside, and the sandbox covered the protected
		// paths (writing them failed) while they did.
		want := strings.Fields(testmoat.ReadFile(t, filepath.Join(b.ws, "want")))
		if r.code != 0 || len(want) < 6 {
			t.Fatalf("run %d: control: the attackers didn't all start (want %q):\n%s", run, want, r)
		}
		for _, a := range want {
			if !testmoat.Exists(filepath.Join(b.ws, "alive-"+a)) {
				t.Fatalf("run %d: control: attacker %s never ran:\n%s", run, a, r)
			}
		}
		check := func(when string) {
			for _, p := range protected {
				if what := describePath(filepath.Join(b.ws, p)); what != "" {
					t.Errorf("run %d, %s: %s exists on the host (%s): a process of the sandbox outlived its placeholder",
						run, when, p, what)
				}
			}
		}
		check("when moat returned")
		stamps := aliveStamps(t, b.ws)
		time.Sleep(500 * time.Millisecond) // an attacker left alive rewrites its file every few milliseconds
		check("after half a second")
		if now := aliveStamps(t, b.ws); now != stamps {
			t.Errorf("run %d: an attacker kept running after moat returned: %s -> %s", run, stamps, now)
		}
		if t.Failed() {
			return
		}
	}
}

// describePath says what is at path on the host: "" when nothing, else the
// entries of a directory or the content of a file.
func describePath(path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return ""
	}
	if fi.IsDir() {
		var names []string
		filepath.WalkDir(path, func(p string, _ os.DirEntry, _ error) error {
			if p != path {
				names = append(names, strings.TrimPrefix(p, path+"/"))
			}
			return nil
		})
		return "a directory holding [" + strings.Join(names, " ") + "]"
	}
	b, _ := os.ReadFile(path)
	return "a file holding " + strconv.Quote(string(b))
}

// aliveStamps describes the attackers' control files by name, size and mtime.
func aliveStamps(t *testing.T, ws string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(ws, "alive-*"))
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			s = append(s, filepath.Base(f)+"@"+fi.ModTime().Format(time.RFC3339Nano))
		}
	}
	return strings.Join(s, " ")
}

// TestCoversReadOnly: the covers init clones from one sealed source (the placeholders
// of missing protected paths, the masks of credential files, the sandbox's
// resolv.conf, the masked /proc files) are read-only, nosuid, nodev and noexec,
// the flags they get from their source rather than each from a mount_setattr of its
// own; and writing through them fails.
func TestCoversReadOnly(t *testing.T) {
	b := newBox(t)
	writeFile(t, filepath.Join(b.home, ".npmrc"), "//registry.npmjs.org/:_authToken="+testmoat.Token("npm")+"\n", 0o600)
	r := b.run(opts{script: `cat /proc/self/mountinfo > mountinfo
for p in .vscode .git .envrc; do touch "$p/x" 2>/dev/null && echo "$p" >> wrote; done
echo x >> "$HOME/.npmrc" 2>/dev/null && echo npmrc >> wrote
echo x > /etc/resolv.conf 2>/dev/null && echo resolv.conf >> wrote
exit 0`})
	if got := testmoat.ReadFile(t, filepath.Join(b.ws, "wrote")); got != "" {
		t.Errorf("writes through covers succeeded: %q", got)
	}
	realWS, err := filepath.EvalSymlinks(b.ws)
	if err != nil {
		t.Fatal(err)
	}
	realHome, err := filepath.EvalSymlinks(b.home)
	if err != nil {
		t.Fatal(err)
	}
	covers := map[string]bool{
		filepath.Join(realWS, ".vscode"): false, filepath.Join(realWS, ".git"): false, filepath.Join(realWS, ".envrc"): false,
		filepath.Join(realHome, ".npmrc"): false, "/etc/resolv.conf": false,
	}
	optional := map[string]bool{"/proc/keys": true, "/proc/timer_list": true, "/proc/sched_debug": true, "/proc/kcore": true}
	mountinfo := testmoat.ReadFile(t, filepath.Join(b.ws, "mountinfo"))
	for _, l := range strings.Split(strings.TrimSpace(mountinfo), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 {
			t.Fatalf("bad mountinfo line %q", l)
		}
		if _, ok := covers[f[4]]; !ok && !optional[f[4]] {
			continue
		}
		covers[f[4]] = true
		for _, opt := range []string{"ro", "nosuid", "nodev", "noexec"} {
			if !strings.Contains(","+f[5]+",", ","+opt+",") {
				t.Errorf("cover %s is not %s: %s", f[4], opt, l)
			}
		}
	}
	for p, seen := range covers {
		if !seen {
			t.Errorf("control: no cover mounted at %s:\n%s\n%s", p, mountinfo, r)
		}
	}
}

// TestPlaceholdersOfConcurrentRuns: two runs of one user, in two workspaces. The
// one that ends first leaves every placeholder to the last run out; the other
// run's keep covering after the first one ended: its sandbox still can't create
// what they cover. Once both ended, no placeholder is left in either workspace.
// Judged by the host's workspaces.
func TestPlaceholdersOfConcurrentRuns(t *testing.T) {
	b := newBox(t)
	other := filepath.Join(b.root, "other-ws")
	testmoat.Mkdir(t, other)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	long := b.command(ctx, opts{script: `
: > ready
while [ ! -e go ]; do sleep 0.05; done
mkdir -p .vscode 2>/dev/null; echo pwned > .vscode/tasks.json 2>/dev/null
echo pwned > .envrc 2>/dev/null
echo done > done
`})
	var out bytes.Buffer
	long.Stdout, long.Stderr = &out, &out
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	defer long.Wait()
	defer long.Process.Kill()
	if !testmoat.WaitFor(runTimeout, func() bool { return testmoat.Exists(filepath.Join(b.ws, "ready")) }) {
		t.Fatalf("the long run never started:\n%s", out.String())
	}
	if !testmoat.Exists(filepath.Join(b.ws, ".vscode")) {
		t.Fatal("control: the long run has no .vscode placeholder on the host")
	}

	r := b.run(opts{dir: other, script: `echo ok > normal`})
	if testmoat.ReadFile(t, filepath.Join(other, "normal")) != "ok\n" {
		t.Fatalf("control: the short run's write did not land:\n%s", r)
	}
	if !testmoat.Exists(filepath.Join(b.ws, ".vscode")) {
		t.Errorf("the long run's .vscode placeholder went when the short run ended")
	}

	writeFile(t, filepath.Join(b.ws, "go"), "", 0o644)
	if err := long.Wait(); err != nil {
		t.Fatalf("the long run: %v\n%s", err, out.String())
	}
	if testmoat.ReadFile(t, filepath.Join(b.ws, "done")) != "done\n" {
		t.Fatalf("control: the long run's script did not finish:\n%s", out.String())
	}
	for _, n := range []string{".vscode", ".envrc"} {
		if testmoat.Exists(filepath.Join(b.ws, n)) {
			t.Errorf("%s exists in the long run's workspace after it ended: created through a cover the short run's end removed, or left behind", n)
		}
	}
	for _, n := range placeholderNames {
		if testmoat.Exists(filepath.Join(other, n)) {
			t.Errorf("%s is in the short run's workspace after both runs ended", n)
		}
	}
}
