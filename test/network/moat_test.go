package network_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testmoat"
)

//go:embed testdata
var testdata embed.FS

// runTimeout bounds one moat run; it is a hang guard, never a verdict.
const runTimeout = 90 * time.Second

// box is one test's host directories: a workspace, a home, a runtime dir, tools.
type box struct {
	t    *testing.T
	root string // readable in the sandbox, not writable
	ws   string // the workspace: moat runs here
	home string
	xdg  string
}

func newBox(t *testing.T) *box {
	t.Helper()
	name := t.Name()[strings.LastIndex(t.Name(), "/")+1:]
	if len(name) > 16 {
		name = name[:16] // unix socket paths must fit in 108 bytes
	}
	root, err := os.MkdirTemp(baseDir, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	b := &box{t: t, root: root, ws: filepath.Join(root, "ws"), home: filepath.Join(root, "home"), xdg: filepath.Join(root, "xdg")}
	for _, d := range []string{b.ws, b.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(b.xdg, 0o700); err != nil {
		t.Fatal(err)
	}
	return b
}

// file writes data to name under the box's root (outside the workspace) and
// returns its path.
func (b *box) file(name, data string) string {
	b.t.Helper()
	p := filepath.Join(b.root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		b.t.Fatal(err)
	}
	return p
}

// client writes testdata/client.py next to the workspace and returns its path.
func (b *box) client() string {
	b.t.Helper()
	data, err := testdata.ReadFile("testdata/client.py")
	if err != nil {
		b.t.Fatal(err)
	}
	return b.file("client.py", string(data))
}

// env is the base environment of every run: nothing of the test's own.
func (b *box) env(extra ...string) []string {
	return append([]string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + b.home,
		"XDG_RUNTIME_DIR=" + b.xdg,
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CEILING_DIRECTORIES=" + b.root,
		"GIT_TERMINAL_PROMPT=0",
	}, extra...)
}

// where moat's supervisor runs, which decides what it resolves names with.
type where int

const (
	onHost      where = iota // the host as it is: its resolv.conf, its network
	viaTestHost              // a mount namespace whose resolv.conf names the test host's DNS server (root)
	inUserNS                 // a user, mount and network namespace with only loopback, whose resolv.conf names a DNS server of the test's (any user)
)

// opts describe one moat run.
type opts struct {
	script string   // run as: sh -c script
	config string   // settings JSON, written outside the workspace, passed with --config
	flags  []string // more moat run flags
	env    []string // KEY=VALUE added to the base environment
	where  where
	dns    *dnsServer // inUserNS: serves the namespace's 127.0.0.1:53
}

type result struct {
	stdout, stderr string
	code           int
	events         []event
	eventLog       string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s\n--- stderr:\n%s\n--- events:\n%s", r.code, r.stdout, r.stderr, r.eventLog)
}

// event is one line of moat's event log, as a reader of the log sees it.
type event struct {
	Kind   string `json:"kind"`
	Action string `json:"action"`
	Proto  string `json:"proto"`
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Addr   string `json:"addr"`
	Reason string `json:"reason"`
	Rule   string `json:"rule"`
	Hint   string `json:"hint"`
	Detail string `json:"detail"`
}

func (r result) denials() []event {
	var out []event
	for _, e := range r.events {
		if e.Action == "deny" {
			out = append(out, e)
		}
	}
	return out
}

// run runs "moat run" with o and returns its output, exit status and events.
func (b *box) run(o opts) result {
	b.t.Helper()
	args := append([]string{"run"}, testmoat.SettingsFlags(b.t, b.root, o.config)...)
	evf, err := os.CreateTemp(b.root, "events-*.jsonl")
	if err != nil {
		b.t.Fatal(err)
	}
	evf.Close()
	args = append(args, "--events", evf.Name())
	args = append(args, o.flags...)
	if directMode {
		args = append(args, "--direct")
	}
	args = append(args, "--", "sh", "-c", o.script)

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	var cmd *exec.Cmd
	var helper *helperConn
	switch o.where {
	case onHost:
		cmd = exec.CommandContext(ctx, moatBin, args...)
	case viaTestHost:
		cmd = wrapped(ctx, b, testHostResolvConf(b.t), false, args)
	case inUserNS:
		cmd = wrapped(ctx, b, b.file("resolv-userns.conf", "nameserver 127.0.0.1\noptions timeout:2 attempts:1\n"), true, args)
		helper = withHelperSocket(b.t, cmd)
	}
	cmd.Dir = b.ws
	cmd.Env = append(b.env(o.env...), cmd.Env...)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("start moat: %v", err)
	}
	if helper != nil {
		if err := helper.serveDNS(o.dns); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			b.t.Fatalf("user namespace helper: %v\n%s", err, errb.String())
		}
	}
	err = cmd.Wait()
	r := result{stdout: out.String(), stderr: errb.String(), code: testmoat.ExitStatus(cmd, err)}
	if ctx.Err() != nil {
		b.t.Fatalf("moat run did not end within %v:\n%s", runTimeout, r)
	}
	if r.code == -1 {
		b.t.Fatalf("moat run: %v\n%s", err, r)
	}
	data, err := os.ReadFile(evf.Name())
	if err != nil {
		b.t.Fatal(err)
	}
	r.eventLog = string(data)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			b.t.Fatalf("event log line %q is not JSON: %v", sc.Text(), err)
		}
		r.events = append(r.events, e)
	}
	return r
}

// host runs a command on the host, outside the sandbox (a control), in the box's
// workspace with its base environment.
func (b *box) host(name string, args ...string) result {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = b.ws
	cmd.Env = b.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), code: testmoat.ExitStatus(cmd, err)}
	if ctx.Err() != nil || r.code == -1 {
		b.t.Fatalf("host %s %q: %v\n%s", name, args, err, r)
	}
	return r
}

// token returns a fresh lower-case marker, usable as a DNS label; finding it in a
// log proves that something got there.
func token(kind string) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return kind + hex.EncodeToString(b[:])
}

// shq quotes s for sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// settings returns moat settings JSON allowing and denying the given patterns,
// with the workspace (the current directory) writable.
func settings(allow, deny []string) string {
	n := map[string]any{"allowedDomains": allow}
	if deny != nil {
		n["deniedDomains"] = deny
	}
	data, err := json.Marshal(map[string]any{"network": n, "filesystem": map[string]any{"allowWrite": []string{"."}}})
	if err != nil {
		panic(err)
	}
	return string(data)
}
