package interactive_test

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestJobControl: in an interactive shell, Ctrl-Z stops the sandboxed command and
// gives the shell its terminal back (the shell reports the job stopped and runs
// the next command), and fg gives the command the terminal again: a line typed
// then reaches the command's read.
func TestJobControl(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			tm, p, _ := newShell(t)
			tm.send(moatBin + ` run` + mode.flag + ` -- sh -c 'echo START; read x; echo "GOT $x"'` + "\r")
			tm.expect(`START\r\n`)
			tm.send("\x1a") // Ctrl-Z
			tm.expect(`Stopped`)
			tm.expect(`SHELL\$ `)
			tm.send("echo SHELL-HAS-THE-TERMINAL\r")
			tm.expect(`\rSHELL-HAS-THE-TERMINAL\r\n`) // the output, not the echoed command line
			tm.send("fg\r")
			tm.expect(`moat run`) // bash names the job it continues
			tm.send("hello\r")
			tm.expect(`GOT hello\r\n`)
			tm.expect(`SHELL\$ `)
			tm.send("echo status=$?\r")
			tm.expect(`status=0\r\n`)

			// Ctrl-C at the terminal reaches the command (once) and moat reports
			// its death by SIGINT.
			tm.send(moatBin + ` run` + mode.flag + ` -- sh -c 'echo START2; exec sleep 600'` + "\r")
			tm.expect(`START2\r\n`)
			tm.send("\x03")
			tm.expect(`SHELL\$ `)
			tm.send("echo status=$?\r")
			tm.expect(`status=130\r\n`)
			tm.send("exit\r")
			p.wait()
		})
	}
}

// TestStoppedFromOutside: moat stopped by a signal it didn't choose (kill -STOP
// from elsewhere) and continued with fg puts the terminal back in raw mode, which
// the shell changed meanwhile: keys reach the command as typed. Judged on the
// terminal's mode.
func TestStoppedFromOutside(t *testing.T) {
	tm, p, _ := newShell(t)
	marker := strconv.Itoa(40000 + os.Getpid()%10000)
	tm.send(moatBin + " run -- sh -c 'echo START; read x; echo \"GOT $x\"; exec sleep " + marker + "'\r")
	tm.expect(`START\r\n`)
	var moat int
	for _, line := range processesWith("sleep " + marker) {
		if strings.Contains(line, " run -- ") {
			moat, _ = strconv.Atoi(strings.SplitN(line, ":", 2)[0])
		}
	}
	if moat == 0 {
		t.Fatalf("moat's process not found: %q", processesWith("sleep "+marker))
	}
	if err := syscall.Kill(moat, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	tm.expect(`Stopped`)
	tm.expect(`SHELL\$ `)
	tm.send("stty sane; fg\r")
	tm.expect(`moat run`)
	raw := func(tio unix.Termios) bool { return tio.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) == 0 }
	if tio := tm.waitTermios(raw); !raw(tio) {
		t.Errorf("after fg the terminal is not in raw mode: lflag %#o", tio.Lflag)
	}
	tm.send("hello\r")
	tm.expect(`GOT hello\r\n`)
	tm.send("\x03")
	tm.expect(`SHELL\$ `)
	tm.send("exit\r")
	p.wait()
}

// TestPipedFromReader: a program piped into moat that reads the terminal itself
// (a password prompt: curl -u user ... | moat run ...) gets what is typed, whole:
// moat neither reads the terminal nor changes its mode under it, and the
// sandbox gets no terminal. Judged by what the reader got.
func TestPipedFromReader(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			tm, p, _ := newShell(t)
			tm.send(`(echo ASK >&2; read -r line < /dev/tty; echo "READER=$line") | ` + moatBin + ` run` + mode.flag + ` -- sh -c 'cat; test -t 0 || echo NO-TERMINAL'` + "\r")
			tm.expect(`ASK`)
			time.Sleep(300 * time.Millisecond) // moat and the sandbox have started
			tm.send("secret\r")
			tm.expect(`READER=secret\r?\n`)
			tm.expect(`NO-TERMINAL`)
			tm.expect(`SHELL\$ `)
			tm.send("exit\r")
			p.wait()
		})
	}
}

// TestStopDuringQuestion: the command stopped (by a process of the sandbox)
// while moat asks a question: moat stops only once the question is answered,
// with the terminal as it was, and fg continues the run. Judged by the answer
// (curl's 403) and by moat's exit status.
func TestStopDuringQuestion(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: it is the client of this test")
	}
	tm, p, _ := newShell(t)
	tm.send(moatBin + ` run -- sh -c '(sleep 0.5; kill -STOP $$) & curl --noproxy "" -sS -o /dev/null -w "CODE=%{http_code}\n" http://undecided.invalid/; wait'` + "\r")
	tm.expect(`allow undecided\.invalid:80\? \[o/r/a/d/n\] `)
	time.Sleep(time.Second) // the command is stopped meanwhile
	tm.send("d")
	tm.expect(`denied`)
	tm.expect(`Stopped`)
	tm.expect(`SHELL\$ `)
	tm.send("fg\r")
	tm.expect(`CODE=403`)
	tm.expect(`SHELL\$ `)
	tm.send("echo status=$?\r")
	if m := tm.expect(`status=(\d+)\r\n`); m[1] != "0" {
		t.Errorf("moat exited %s, want 0", m[1])
	}
	tm.send("exit\r")
	p.wait()
}

// TestPipedToReader: moat's output piped to a program that reads the terminal
// itself (a pager) leaves the terminal to that program: moat doesn't read it (nor
// does the sandbox get it). Judged by what the reader got.
func TestPipedToReader(t *testing.T) {
	tm, p, _ := newShell(t)
	tm.send(moatBin + ` run -- sh -c 'echo START; sleep 3' | (read line; echo "PIPED=$line"; read -r key < /dev/tty; echo "KEY=$key")` + "\r")
	tm.expect(`PIPED=START\r\n`)
	tm.send("x\r")
	tm.expect(`KEY=x\r\n`)
	tm.expect(`SHELL\$ `)
	tm.send("exit\r")
	p.wait()
}

// approvalRun runs curl twice in moat on the terminal, against a host no rule
// decides, typing one answer at each question moat asks; it checks that curl got
// the status codes want (e.g. "502,502") and that moat asked exactly once per
// answer, and returns the event log's lines and the home directory.
func approvalRun(t *testing.T, want string, answers ...string) (events []map[string]any, home string) {
	t.Helper()
	return approvalRunURL(t, "http://undecided.invalid/", "undecided.invalid:80", want, answers...)
}

// approvalRunURL is approvalRun against url, whose host:port moat asks about.
func approvalRunURL(t *testing.T, url, hostPort, want string, answers ...string) (events []map[string]any, home string) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: it is the client of this test")
	}
	ws, env := workspace(t)
	home = strings.TrimPrefix(env[1], "HOME=")
	log := filepath.Join(ws, "..", "events.jsonl")
	tm := newTerm(t)
	// undecided.invalid can't resolve: a connection the answer allows fails at
	// the lookup (502), one it refuses gets the proxy's 403.
	p := tm.start(ws, env, moatBin, "run", "--events", log, "--", "sh", "-c",
		`for i in 1 2; do curl --noproxy "" -sS -o /dev/null -w "CODE=%{http_code}\n" `+url+`; done`)
	for _, a := range answers {
		tm.expect(`allow ` + regexp.QuoteMeta(hostPort) + `\? \[o/r/a/d/n\] `)
		tm.send(a)
	}
	if code := p.wait(); code != 0 {
		t.Errorf("moat exited %d, want 0 (curl's)", code)
	}
	for end := time.Now().Add(deadline); strings.Count(tm.output(), "CODE=") < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("curl's two status lines never arrived; the terminal showed:\n%q", tm.output())
		}
	}
	out := tm.output()
	if !strings.Contains(out, "\x1b]110\x1b\\\x1b]111\x1b\\") {
		t.Errorf("the question did not put back the terminal's default colours (OSC 110, 111) first: %q", out)
	}
	if got := strings.Join(codes(out), ","); got != want {
		t.Errorf("curl got %s, want %s (502: allowed, then the lookup of .invalid fails; 403: refused)", got, want)
	}
	if n := strings.Count(out, "[o/r/a/d/n]"); n != len(answers) {
		t.Errorf("asked %d times, want %d", n, len(answers))
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		events = append(events, ev)
	}
	return events, home
}

// codes returns the HTTP status codes curl printed, in order.
func codes(out string) []string {
	var c []string
	for _, f := range strings.Split(out, "CODE=")[1:] {
		c = append(c, f[:3])
	}
	return c
}

// TestApprovalPrompt: a connection to a host no rule decides is asked about on
// the terminal, and the answer decides it, judged by what curl got from the proxy
// and by the event log.
func TestApprovalPrompt(t *testing.T) {
	t.Run("allow_once_asks_again", func(t *testing.T) {
		t.Parallel()
		events, _ := approvalRun(t, "502,502", "o", "o")
		for _, ev := range events {
			if ev["reason"] != "resolve-failed" || ev["rule"] != "allowed at the terminal, once" {
				t.Errorf("event %v: want a resolve failure allowed at the terminal, once", ev)
			}
		}
	})
	t.Run("deny_holds_for_the_run", func(t *testing.T) {
		t.Parallel()
		events, _ := approvalRun(t, "403,403", "d")
		if len(events) != 2 || events[1]["action"] != "deny" || !strings.Contains(events[1]["rule"].(string), "refused at the terminal") {
			t.Errorf("events %v: want two refusals at the terminal", events)
		}
	})
	// What a terminal answers to a query the sandbox wrote before the question
	// (here its foreground colour, "rgb:...": an r) is not a key typed: moat asks
	// again, and the d typed then decides.
	t.Run("terminal_reply_is_not_an_answer", func(t *testing.T) {
		t.Parallel()
		events, _ := approvalRun(t, "403,403", "\x1b]10;rgb:ffff/ffff/ffff\x1b\\", "d")
		if len(events) != 2 || events[0]["action"] != "deny" {
			t.Errorf("events %v: want two refusals at the terminal", events)
		}
	})
	t.Run("allow_for_the_run", func(t *testing.T) {
		t.Parallel()
		_, home := approvalRun(t, "502,502", "r")
		if _, err := os.Stat(filepath.Join(home, ".config", "moat", "config.jsonc")); err == nil {
			t.Errorf("allowing for the run wrote the user config")
		}
	})
	t.Run("always_writes_the_user_config", func(t *testing.T) {
		t.Parallel()
		_, home := approvalRun(t, "502,502", "a")
		data, err := os.ReadFile(filepath.Join(home, ".config", "moat", "config.jsonc"))
		if err != nil {
			t.Fatalf("the user config was not written: %v", err)
		}
		if !strings.Contains(string(data), `"undecided.invalid:80"`) {
			t.Errorf("user config %q lacks the allowed host", data)
		}
		// The next run reads it: allowed by the rule, no question.
		ws := filepath.Join(home, "..", "ws")
		cmd := exec.Command(moatBin, "run", "--", "curl", "-sS", "-o", "/dev/null", "-w", "CODE=%{http_code}", "http://undecided.invalid/")
		cmd.Dir, cmd.Env = ws, []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home}
		got, _ := cmd.CombinedOutput()
		if !strings.Contains(string(got), "CODE=502") {
			t.Errorf("a later run without a terminal: %q, want CODE=502 (allowed by the recorded rule)", got)
		}
	})
	// An answer is not a rule: a name it allows that resolves to loopback, or a
	// loopback literal, stays refused by the address guard. Judged by a listener
	// on the host's loopback, which must see no connection.
	t.Run("answer_cannot_open_loopback", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var hits atomic.Int32
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				hits.Add(1)
				c.Close()
			}
		}()
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		for _, host := range []string{"localhost", "127.0.0.1"} {
			events, _ := approvalRunURL(t, "http://"+host+":"+port+"/", host+":"+port, "403,403", "o", "o")
			for _, ev := range events {
				if ev["action"] != "deny" || ev["reason"] != "address-loopback" {
					t.Errorf("%s: event %v: want a loopback refusal", host, ev)
				}
			}
		}
		if n := hits.Load(); n != 0 {
			t.Errorf("the host's loopback listener got %d connections", n)
		}
	})
	t.Run("no_terminal_denies", func(t *testing.T) {
		t.Parallel()
		ws, env := workspace(t)
		cmd := exec.Command(moatBin, "run", "--", "curl", "-sS", "-o", "/dev/null", "-w", "CODE=%{http_code}", "http://undecided.invalid/")
		cmd.Dir, cmd.Env = ws, env
		got, _ := cmd.CombinedOutput()
		if !strings.Contains(string(got), "CODE=403") || strings.Contains(string(got), "[o/r/a/d/n]") {
			t.Errorf("without a terminal: %q, want CODE=403 and no question", got)
		}
	})
}

// TestApprovalHoldsOutput: while moat asks about a host, nothing the sandbox
// writes reaches the terminal, so it can't draw a question of its own under
// moat's; the sandbox runs on (nothing stops it: a SIGCONT timer would undo a
// stop) and its output waits in its pty. A background writer prints FAKE every
// 20 ms; judged by the terminal's output, where no FAKE may follow the question
// until it is answered, and FAKE must come again after the answer.
func TestApprovalHoldsOutput(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: it is the client of this test")
	}
	ws, env := workspace(t)
	tm := newTerm(t)
	p := tm.start(ws, env, moatBin, "run", "--", "sh", "-c", `
		(trap "" TTOU; while :; do printf 'FAKE\n'; sleep 0.02; done) &
		sleep 0.3
		curl --noproxy "" -sS -o /dev/null -w "CODE=%{http_code}\n" http://undecided.invalid/
		sleep 0.5`)
	tm.expect(`allow undecided\.invalid:80\? \[o/r/a/d/n\] `)
	before := len(tm.output())
	time.Sleep(500 * time.Millisecond)
	during := tm.output()[before:]
	tm.send("d")
	tm.expect(`CODE=403`)
	tm.expect(`FAKE`)
	if code := p.wait(); code != 0 {
		t.Errorf("moat exited %d, want 0", code)
	}
	if strings.Contains(during, "FAKE") {
		t.Errorf("the sandbox wrote to the terminal while moat asked: %q", during)
	}
}

// TestStoppedSandboxCantTakeTerminal: when the command stops (Ctrl-Z) and the
// shell takes the terminal back, another process of the sandbox keeps running
// (a SIGCONT timer wakes it from any stop) and tries every way to read the
// terminal (thiefPy). Judged by the shell: the lines typed after the stop must
// run there (their files appear on the host) and reach no process of the sandbox.
func TestStoppedSandboxCantTakeTerminal(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			th := newThiefTest(t)
			th.suspended(mode.flag, "resumed")
			lost := th.typeLines()
			th.tm.send("fg\r")
			th.tm.expect(`resumed\r\n`)
			th.tm.expect(`SHELL\$ `)
			th.finish(lost)
		})
	}
}

// modes are moat's two ways of running a sandbox, for the tests that run in both.
var modes = []struct{ name, flag string }{{"namespaces", ""}, {"direct", " --direct"}}

// sigcontTimer, put before a thief's code, has the kernel send it SIGCONT every
// 20 ms (a POSIX timer), which continues a stopped process: no stop keeps the
// thief from acting (red-team finding rt2 F1: it defeated moat's earlier design,
// which stopped the whole sandbox to keep it off the terminal).
const sigcontTimer = `import ctypes, signal
class _ts(ctypes.Structure): _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
class _its(ctypes.Structure): _fields_ = [("interval", _ts), ("value", _ts)]
class _ev(ctypes.Structure): _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int), ("pad", ctypes.c_byte * 48)]
signal.signal(signal.SIGCONT, lambda *a: None)
_libc = ctypes.CDLL(None, use_errno=True)
_timer = ctypes.c_void_p()
if (_libc.timer_create(1, ctypes.byref(_ev(signo=signal.SIGCONT, notify=0)), ctypes.byref(_timer)) != 0 or
        _libc.timer_settime(_timer, 0, ctypes.byref(_its(_ts(0, 20000000), _ts(0, 20000000))), None) != 0):
    raise OSError(ctypes.get_errno(), "timer_create")
`

// thiefPy tries every way a process of the sandbox could read what the person
// types to the shell once the sandbox runs in the background or is stopped: it
// keeps itself running (sigcontTimer), ignores the job-control signals, collects
// each terminal descriptor it can get (its stdio, /dev/tty, other processes'
// stdio through /proc), and, from the file "go" on until the file "done", reads
// them both from a session of its own (outside the terminal's session job
// control doesn't apply) and from a process group it keeps making the terminal's
// foreground (tcsetpgrp). What it reads goes to the file "stolen".
const thiefPy = sigcontTimer + `import os, select, signal, time
for s in (signal.SIGTTOU, signal.SIGTTIN, signal.SIGTSTP, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
fds = [fd for fd in (0, 1, 2) if os.isatty(fd)]
for path in ["/dev/tty"] + ["/proc/%s/fd/%d" % (p, n) for p in os.listdir("/proc") if p.isdigit() for n in (0, 1, 2)]:
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        continue
    if os.isatty(fd):
        fds.append(fd)
    else:
        os.close(fd)
open("thief-fds", "w").write(repr(fds))
while not os.path.exists("go"):
    time.sleep(0.01)
def steal(take):
    while not os.path.exists("done"):
        for fd in fds if take else []:
            try:
                os.tcsetpgrp(fd, os.getpgrp())
            except OSError:
                pass
        if not fds:
            time.sleep(0.05)
            continue
        for fd in select.select(fds, [], [], 0.05)[0]:
            try:
                data = os.read(fd, 200)
            except OSError:
                continue
            open("stolen", "a").write(repr(data))
if os.fork() == 0:
    os.setsid()
    steal(False)
    os._exit(0)
os.setpgid(0, 0)
steal(True)
`

// thiefTest is an interactive bash in a terminal, in a workspace that holds
// thiefPy.
type thiefTest struct {
	t  *testing.T
	tm *term
	sh *proc
	ws string
}

func newThiefTest(t *testing.T) *thiefTest {
	t.Helper()
	needPython(t)
	tm, sh, ws := newShell(t)
	if err := os.WriteFile(filepath.Join(ws, "thief.py"), []byte(thiefPy), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A thief still at work (the test failed) stops at this file.
		_ = os.WriteFile(filepath.Join(ws, "done"), nil, 0o644)
	})
	return &thiefTest{t: t, tm: tm, sh: sh, ws: ws}
}

// started waits until the thief has collected its descriptors.
func (th *thiefTest) started() {
	th.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(th.ws, "thief-fds")); err == nil {
			return
		}
		if time.Now().After(deadline) {
			th.t.Fatalf("the thief did not start; terminal:\n%s", th.tm.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// suspended runs the thief in moat (with flag) from the shell, as a command that
// says last when it ends, and stops it with Ctrl-Z.
func (th *thiefTest) suspended(flag, last string) {
	th.t.Helper()
	th.tm.send(moatBin + " run" + flag + " -- sh -c 'python3 thief.py & wait; echo " + last + "'\r")
	th.started()
	th.tm.send("\x1a") // Ctrl-Z
	th.tm.expect(`Stopped`)
	th.tm.expect(`SHELL\$ `)
}

// typeLines sets the thief to work, types lines to the shell meanwhile, stops
// the thief, and returns the lines that didn't run in the shell.
func (th *thiefTest) typeLines() (lost []string) {
	th.t.Helper()
	th.started()
	if err := os.WriteFile(filepath.Join(th.ws, "go"), nil, 0o644); err != nil {
		th.t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the thief's chance to take the terminal
	var marks []string
	for i := range 3 {
		mark := filepath.Join(th.ws, "..", "shell-ran-"+strconv.Itoa(i))
		marks = append(marks, mark)
		th.tm.send("touch " + mark + "\r")
		time.Sleep(300 * time.Millisecond)
	}
	th.tm.send("echo typed\r")
	for end := time.Now().Add(10 * time.Second); !strings.Contains(th.tm.output(), "\rtyped\r\n"); {
		if time.Now().After(end) {
			lost = append(lost, "echo typed")
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(th.ws, "done"), nil, 0o644); err != nil {
		th.t.Fatal(err)
	}
	for _, m := range marks {
		if _, err := os.Stat(m); err != nil {
			lost = append(lost, m)
		}
	}
	return lost
}

// finish ends the shell and judges: every line typed to the shell ran there,
// and the thief read nothing.
func (th *thiefTest) finish(lost []string) {
	th.t.Helper()
	th.tm.send("exit\r")
	th.sh.wait()
	stolen, _ := os.ReadFile(filepath.Join(th.ws, "stolen"))
	fds, _ := os.ReadFile(filepath.Join(th.ws, "thief-fds"))
	if len(lost) > 0 || len(stolen) > 0 {
		th.t.Errorf("lines typed to the shell that did not run there: %q; the sandbox held terminal descriptors %s and read %q",
			lost, fds, stolen)
	}
}

// TestBackgroundSandboxCantTakeTerminal: moat started in the background (&) from
// an interactive shell runs the sandbox outside the terminal's session, without
// the terminal's descriptors: lines typed to the shell meanwhile run there, and
// the sandbox reads none of them. Judged by the files those lines create on the
// host and by what the sandbox wrote to its workspace.
func TestBackgroundSandboxCantTakeTerminal(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			th := newThiefTest(t)
			th.tm.send(moatBin + " run" + mode.flag + " -- python3 thief.py &\r")
			th.tm.expect(`SHELL\$ `)
			lost := th.typeLines()
			th.tm.send("wait; echo waited=$?\r")
			th.tm.expect(`waited=0\r\n`)
			th.finish(lost)
		})
	}
}

// TestBackgroundedSandbox: Ctrl-Z and then bg continue the sandbox in the
// background, as a shell's bg does: its output still shows, and it runs to its
// end (the thief finishes, the command says so). Meanwhile a process of it that
// took every terminal descriptor it could while it was the foreground job, and
// that no stop holds, reads none of the lines typed to the shell.
func TestBackgroundedSandbox(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			th := newThiefTest(t)
			th.suspended(mode.flag, "thief-done")
			th.tm.send("bg\r")
			th.tm.expect(`SHELL\$ `)
			lost := th.typeLines()
			th.tm.expect(`thief-done\r+\n`) // written in the background (the pty and the terminal both make \n \r\n)
			th.tm.send("wait %1; echo status=$?\r")
			if m := th.tm.expect(`status=(\d+)\r\n`); m[1] != "0" {
				t.Errorf("moat exited %s, want 0", m[1])
			}
			th.finish(lost)
		})
	}
}

// TestKillBackgroundedSandbox: a signal sent to moat while its sandbox runs in
// the background (kill %1) reaches the command, and when it ends, nothing of
// the sandbox is left (its background sleep never writes its file).
func TestKillBackgroundedSandbox(t *testing.T) {
	tm, p, ws := newShell(t)
	// exec: a Ctrl-Z while sh vforks sleep stops the child before its exec and
	// leaves sh waiting, not stopped, so no shell would see the job stop.
	tm.send(moatBin + " run -- sh -c '(sleep 2; touch late) & echo START; exec sleep 30'\r")
	tm.expect(`START\r\n`)
	tm.send("\x1a")
	tm.expect(`Stopped`)
	tm.expect(`SHELL\$ `)
	tm.send("bg\r")
	tm.expect(`SHELL\$ `)
	tm.send("kill %1; wait %1; echo status=$?\r")
	if m := tm.expect(`status=(\d+)\r\n`); m[1] != "143" {
		t.Errorf("moat exited %s, want 143 (the command's SIGTERM)", m[1])
	}
	tm.send("exit\r")
	p.wait()
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(ws, "late")); err == nil {
		t.Error("a process of the sandbox outlived moat: it wrote its file 2 s later")
	}
}

// TestHangupEndsSandbox: the shell and the terminal go away (the shell killed,
// the window closed) while the sandbox is stopped, or runs in the background:
// the command is told its terminal hung up (SIGHUP) and moat ends with it;
// nothing of it is left. Judged by the host's process table.
func TestHangupEndsSandbox(t *testing.T) {
	for i, c := range []struct{ name, after string }{{"stopped", ""}, {"background", "bg\r"}} {
		t.Run(c.name, func(t *testing.T) {
			tm, p, _ := newShell(t)
			marker := strconv.Itoa(30000 + os.Getpid()%10000 + i)
			tm.send(moatBin + " run -- sh -c 'echo START; exec sleep " + marker + "'\r")
			tm.expect(`START\r\n`)
			tm.send("\x1a")
			tm.expect(`Stopped`)
			tm.expect(`SHELL\$ `)
			if c.after != "" {
				tm.send(c.after)
				tm.expect(`SHELL\$ `)
			}
			// The shell dies without a word to its jobs (SIGKILL), then the
			// terminal hangs up.
			p.signal(syscall.SIGKILL)
			p.wait()
			tm.master.Close()
			var left []string
			for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				left = processesWith("sleep " + marker)
				if len(left) == 0 || time.Now().After(end) {
					break
				}
			}
			if len(left) > 0 {
				t.Errorf("10 s after the terminal hung up, still running: %q", left)
			}
		})
	}
}

// newShell starts an interactive bash (prompt "SHELL$ ") on a new terminal in a
// new workspace, and waits for its prompt.
func newShell(t *testing.T) (*term, *proc, string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed: it is the job-control shell of this test")
	}
	ws, env := workspace(t)
	tm := newTerm(t)
	p := tm.start(ws, append(env, "PS1=SHELL$ "), bash, "--norc", "--noprofile", "-i")
	tm.expect(`SHELL\$ `)
	return tm, p, ws
}

// processesWith lists the command lines, in /proc, that contain s.
func processesWith(s string) []string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if strings.Contains(line, s) {
			out = append(out, p.Name()+": "+line)
		}
	}
	return out
}
