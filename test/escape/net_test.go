package escape_test

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/linux/fusemask"
	"github.com/moat-sandbox/moat/internal/testmoat"
)

// listener is a host listener that counts the connections it accepts.
type listener struct {
	ln       net.Listener
	network  string
	accepted atomic.Int64
	sentinel chan int64 // the accept number of the sentinel connection
}

const sentinelMsg = "moat-escape-sentinel\n"

func listen(t *testing.T, network, addr string) *listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, addr, err)
	}
	l := &listener{ln: ln, network: network, sentinel: make(chan int64, 1)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := l.accepted.Add(1)
			go func() {
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				buf := make([]byte, len(sentinelMsg))
				if _, err := io.ReadFull(c, buf); err == nil && string(buf) == sentinelMsg {
					l.sentinel <- n
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return l
}

// before returns how many connections the listener accepted before a sentinel
// connection made now: accept is first in, first out, so every connection queued
// earlier (from the sandbox, say) is counted, however late it is accepted. Call it
// once per listener.
func (l *listener) before(t *testing.T) int64 {
	t.Helper()
	c, err := net.Dial(l.network, l.ln.Addr().String())
	if err != nil {
		t.Fatalf("sentinel connection to %s: %v", l.ln.Addr(), err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, sentinelMsg); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-l.sentinel:
		return n - 1
	case <-time.After(runTimeout): // a hang guard
		t.Fatalf("the sentinel connection to %s was never accepted", l.ln.Addr())
		return 0
	}
}

// testHostSockets: the host's agent socket, its runtime dir's sockets and its
// abstract sockets are unreachable; unix sockets inside the sandbox work.
func testHostSockets(t *testing.T) {
	t.Run("agent_runtime_dir_abstract", func(t *testing.T) {
		t.Parallel()
		testNamedSockets(t)
	})
	// A socket no environment variable names, in a directory the sandbox can read:
	// Docker Desktop's ~/.docker/desktop/docker.sock, an ssh ControlMaster socket,
	// gpg-agent's ~/.gnupg/S.gpg-agent. A read-only mount does not stop connect(2).
	t.Run("unnamed_socket_under_home", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		targets := map[string]*listener{}
		for _, rel := range []string{".docker/desktop/docker.sock", ".ssh/cm-git@github.com:22", ".gnupg/S.gpg-agent"} {
			p := filepath.Join(b.home, rel)
			testmoat.Mkdir(t, filepath.Dir(p))
			targets["unix:"+p] = listen(t, "unix", p)
		}
		var names []string
		for tgt := range targets {
			names = append(names, tgt)
		}
		probe := b.tool("connect.py")
		ctl := b.host(b.ws, nil, "python3", append([]string{probe}, names...)...)
		for tgt, l := range targets {
			if testmoat.KeyValues(ctl.stdout)[tgt] != "OK" || !testmoat.WaitFor(runTimeout, func() bool { return l.accepted.Load() == 1 }) {
				t.Fatalf("control: the host could not connect to %s:\n%s", tgt, ctl)
			}
		}
		r := b.run(opts{script: "python3 " + shq(probe) + " " + strings.Join(names, " ") + " > probe"})
		res := testmoat.KeyValues(testmoat.ReadFile(t, filepath.Join(b.ws, "probe")))
		if len(res) != len(names) {
			t.Fatalf("control: the probe did not run inside:\n%s", r)
		}
		for tgt, l := range targets {
			if n := l.before(t); n != 1 {
				t.Errorf("host listener %s accepted %d connection(s) from the sandbox (inside: %q)", tgt, n-1, res[tgt])
			}
		}
	})
}

// namedSockets starts host listeners on the sockets an agent would go for: an ssh
// agent's (for SSH_AUTH_SOCK), a bus in the runtime dir, an abstract socket, and the
// unix sockets at extra. As a control, the host reaches each with the connect.py probe,
// whose path it returns, with the targets in the probe's syntax.
func namedSockets(t *testing.T, b *box, extra ...string) (ls map[string]*listener, targets []string, agent, probe string) {
	t.Helper()
	agentDir := filepath.Join(b.root, "agent")
	testmoat.Mkdir(t, agentDir)
	agent = filepath.Join(agentDir, "agent.sock")
	bus := filepath.Join(b.xdg, "bus")
	abstract := "moat-test-" + testmoat.Token("abs")
	ls = map[string]*listener{
		"unix:" + agent:        listen(t, "unix", agent),
		"unix:" + bus:          listen(t, "unix", bus),
		"abstract:" + abstract: listen(t, "unix", "@"+abstract),
	}
	for _, p := range extra {
		ls["unix:"+p] = listen(t, "unix", p)
	}
	for _, p := range append([]string{agent, bus}, extra...) {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	for tgt := range ls {
		targets = append(targets, tgt)
	}
	probe = b.tool("connect.py")

	// Control: from the host, the same program reaches every listener.
	ctl := b.host(b.ws, nil, "python3", append([]string{probe}, targets...)...)
	for tgt, l := range ls {
		if testmoat.KeyValues(ctl.stdout)[tgt] != "OK" || !testmoat.WaitFor(runTimeout, func() bool { return l.accepted.Load() == 1 }) {
			t.Fatalf("control: the host could not connect to %s:\n%s", tgt, ctl)
		}
	}
	return ls, targets, agent, probe
}

func testNamedSockets(t *testing.T) {
	b := newBox(t)
	ls, targets, agent, probe := namedSockets(t, b)
	servers := b.tool("servers.py")
	events := filepath.Join(b.root, "events.jsonl")
	r := b.run(opts{
		flags:  []string{"--events", events},
		env:    []string{"SSH_AUTH_SOCK=" + agent},
		script: "python3 " + shq(probe) + " " + strings.Join(targets, " ") + " > probe; python3 " + shq(servers) + " > inner",
	})
	if got := testmoat.KeyValues(testmoat.ReadFile(t, filepath.Join(b.ws, "inner")))["unix"]; got != "OK" {
		t.Errorf("control: a unix socket inside the sandbox's /tmp did not work (%q):\n%s", got, r)
	}
	res := testmoat.KeyValues(testmoat.ReadFile(t, filepath.Join(b.ws, "probe")))
	for tgt, l := range ls {
		if n := l.before(t); n != 1 {
			t.Errorf("host listener %s accepted %d connection(s) from the sandbox (inside: %q)", tgt, n-1, res[tgt])
		}
		if res[tgt] == "" {
			t.Errorf("the probe did not try %s:\n%s", tgt, r)
		}
	}
	t.Logf("inside: %v", res)

	// Each attempt on a pathname socket is an event naming it, and a summary line
	// with the key that allows it: the agent's, which the sandbox's view covers, and
	// the bus, which the private runtime dir hides and moat covers as bait. Their
	// covers are the FUSE masks'; without FUSE they are plain and report nothing.
	if err := fusemask.Check(); err != nil {
		t.Logf("FUSE unavailable to this user (%v): no socket events to check", err)
		return
	}
	log := testmoat.ReadFile(t, events)
	// Control: a run that doesn't go near them reports none (init's own requests,
	// as it mounts the covers, are not the command's).
	quiet := filepath.Join(b.root, "quiet.jsonl")
	if qr := b.run(opts{flags: []string{"--events", quiet}, env: []string{"SSH_AUTH_SOCK=" + agent}, argv: []string{"true"}}); qr.code != 0 || !testmoat.Exists(quiet) {
		t.Fatalf("control: the quiet run failed or wrote no event log:\n%s", qr)
	}
	if q := testmoat.ReadFile(t, quiet); strings.Contains(q, `"proto":"socket"`) {
		t.Errorf("socket events from a run that touched no socket:\n%s", q)
	}
	for _, path := range []string{agent, filepath.Join(b.xdg, "bus")} {
		var ev struct{ Kind, Action, Proto, Host, Reason, Rule, Hint string }
		found := false
		for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
			if err := json.Unmarshal([]byte(line), &ev); err == nil && ev.Proto == "socket" && ev.Host == path {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no socket event for %s in the log:\n%s", path, log)
			continue
		}
		if ev.Kind != "net" || ev.Action != "deny" || ev.Reason != "socket-refused" || !strings.Contains(ev.Rule, "host socket") ||
			!strings.Contains(ev.Hint, `"allowUnixSockets": [`+strconv.Quote(path)+`]`) {
			t.Errorf("socket event %+v: want a net deny, socket-refused, the host socket rule and the allowUnixSockets hint", ev)
		}
		if !strings.Contains(r.stderr, "moat: blocked connection to "+path+" (socket-refused: host socket") {
			t.Errorf("no summary line for %s:\n%s", path, r.stderr)
		}
	}
}

// testPrivilegesAndNetwork: no capabilities, no_new_privs, the outer uid, nosuid
// everywhere; no network but the sandbox's own loopback.
func testPrivilegesAndNetwork(t *testing.T) {
	// Landlock, the second layer, holds where the mount view alone would let a write
	// through: the sandbox's /dev is a tmpfs mounted read-write and owned by the
	// command's own uid, so only an LSM can refuse a new file there. Init applies
	// Landlock to the one thread it forks the command from; this checks the command
	// got it.
	t.Run("landlock_second_layer", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		r := b.run(opts{script: `grep ' /dev ' /proc/self/mountinfo | tail -n 1 > devmount
stat -c '%u' /dev > devowner
mkdir /dev/moat-x 2> mkdir.err; echo "mkdir=$?" > results
touch /dev/moat-y 2> touch.err; echo "touch=$?" >> results
sh -c 'echo x > /dev/moat-z' 2> write.err; echo "write=$?" >> results
exit 0`})
		mount := testmoat.ReadFile(t, filepath.Join(b.ws, "devmount"))
		if !strings.Contains(mount, " /dev rw,") || !strings.Contains(mount, " tmpfs ") {
			t.Fatalf("control: the sandbox's /dev is not a read-write tmpfs, so this proves nothing: %q\n%s", mount, r)
		}
		if got := strings.TrimSpace(testmoat.ReadFile(t, filepath.Join(b.ws, "devowner"))); got != strconv.Itoa(os.Getuid()) {
			t.Fatalf("control: /dev inside is owned by %s, not the command's uid %d", got, os.Getuid())
		}
		res := testmoat.KeyValues(strings.ReplaceAll(testmoat.ReadFile(t, filepath.Join(b.ws, "results")), "=", " "))
		for _, op := range []string{"mkdir", "touch", "write"} {
			msg := testmoat.ReadFile(t, filepath.Join(b.ws, op+".err"))
			if res[op] == "0" || !strings.Contains(msg, "Permission denied") {
				t.Errorf("%s in /dev: status %q, %q; want Permission denied from Landlock", op, res[op], msg)
			}
		}
	})
	t.Run("privileges", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		if isRoot() {
			data, err := os.ReadFile("/usr/bin/id")
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(b.ws, "suid-id"), string(data), 0o755|os.ModeSetuid)
		}
		r := b.run(opts{script: `cat /proc/self/status > status; cat /proc/self/mountinfo > mountinfo; id -u > uid
[ -e suid-id ] && stat -c %a suid-id > suid-mode
exit 0`})
		status := testmoat.KeyValues(strings.ReplaceAll(testmoat.ReadFile(t, filepath.Join(b.ws, "status")), "\t", " "))
		if len(status) == 0 {
			t.Fatalf("control: no /proc/self/status came out of the sandbox:\n%s", r)
		}
		for _, k := range []string{"CapEff:", "CapPrm:", "CapBnd:", "CapAmb:", "CapInh:"} {
			if v := strings.TrimSpace(status[k]); v != "0000000000000000" {
				t.Errorf("%s %q, want all zero", k, v)
			}
		}
		if v := strings.TrimSpace(status["NoNewPrivs:"]); v != "1" {
			t.Errorf("NoNewPrivs %q, want 1", v)
		}
		if got := strings.TrimSpace(testmoat.ReadFile(t, filepath.Join(b.ws, "uid"))); got != strconv.Itoa(os.Getuid()) {
			t.Errorf("id -u inside is %q, want the outer uid %d", got, os.Getuid())
		}
		mountinfo := testmoat.ReadFile(t, filepath.Join(b.ws, "mountinfo"))
		realWS, err := filepath.EvalSymlinks(b.ws)
		if err != nil {
			t.Fatal(err)
		}
		wsMounted := false
		for _, l := range strings.Split(strings.TrimSpace(mountinfo), "\n") {
			f := strings.Fields(l)
			if len(f) < 6 {
				t.Fatalf("bad mountinfo line %q", l)
			}
			if !strings.Contains(","+f[5]+",", ",nosuid,") {
				t.Errorf("mount %s is not nosuid: %s", f[4], l)
			}
			wsMounted = wsMounted || f[4] == realWS
		}
		if !wsMounted {
			t.Errorf("control: the workspace is not among the sandbox's mounts:\n%s", mountinfo)
		}
		if isRoot() {
			if got := strings.TrimSpace(testmoat.ReadFile(t, filepath.Join(b.ws, "suid-mode"))); got != "4755" {
				t.Errorf("control: the setuid copy does not look setuid inside (%q)", got)
			}
		} else {
			t.Log("not root: can't create a setuid-root file; the nosuid check above covers every mount")
		}
	})

	t.Run("network", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		l4 := listen(t, "tcp4", "127.0.0.1:0")
		port := l4.ln.Addr().(*net.TCPAddr).Port
		targets := map[string]*listener{"tcp:127.0.0.1:" + strconv.Itoa(port): l4}
		if l6, err := net.Listen("tcp6", "[::1]:0"); err == nil {
			l6.Close()
			l := listen(t, "tcp6", "[::1]:0")
			targets["tcp6:::1:"+strconv.Itoa(l.ln.Addr().(*net.TCPAddr).Port)] = l
		}
		var names []string
		for tgt := range targets {
			names = append(names, tgt)
		}
		probe, servers := b.tool("connect.py"), b.tool("servers.py")

		// Control: from the host the probe reaches the host's loopback listeners.
		ctl := b.host(b.ws, nil, "python3", append([]string{probe}, names...)...)
		for tgt, l := range targets {
			if testmoat.KeyValues(ctl.stdout)[tgt] != "OK" || !testmoat.WaitFor(runTimeout, func() bool { return l.accepted.Load() == 1 }) {
				t.Fatalf("control: the host could not connect to %s:\n%s", tgt, ctl)
			}
		}

		r := b.run(opts{script: "python3 " + shq(probe) + " tcp:198.18.0.1:80 " + strings.Join(names, " ") + " > probe; " +
			"python3 " + shq(servers) + " " + strconv.Itoa(port) + " > inner"})
		inner := testmoat.KeyValues(testmoat.ReadFile(t, filepath.Join(b.ws, "inner")))
		if inner["tcp"] != "OK" {
			t.Errorf("control: a TCP server on the sandbox's own 127.0.0.1:%d was not reachable inside (%q):\n%s", port, inner["tcp"], r)
		}
		res := testmoat.KeyValues(testmoat.ReadFile(t, filepath.Join(b.ws, "probe")))
		for tgt, l := range targets {
			if n := l.before(t); n != 1 {
				t.Errorf("host listener %s accepted %d connection(s) from the sandbox (inside: %q)", tgt, n-1, res[tgt])
			}
		}
		if got := res["tcp:198.18.0.1:80"]; got == "OK" || got == "" {
			t.Errorf("connect to 198.18.0.1:80 from inside: %q, want a failure", got)
		}
		t.Logf("inside: %v", res)
	})
}
