package userns0_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/linux/probe"
	"github.com/moat-sandbox/moat/internal/linux/userns0"
)

const probeEnv = "MOAT_USERNS0_PROBE"

func TestMain(m *testing.M) {
	if os.Getenv(probeEnv) != "" {
		json.NewEncoder(os.Stdout).Encode(probe.Detect())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func skipUnlessAvailable(t *testing.T) {
	t.Helper()
	if err := exec.Command("unshare", "-U", "true").Run(); err != nil {
		t.Skipf("this host can't create user namespaces (unshare -U true: %v): nothing to take away", err)
	}
	if err := userns0.Available(); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	cmd, err := userns0.Command(name, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestUnshareFails: outside, unshare -U works (skipUnlessAvailable); inside it must not.
func TestUnshareFails(t *testing.T) {
	skipUnlessAvailable(t)
	out, err := run(t, "unshare", "-U", "true")
	if err == nil {
		t.Fatalf("unshare -U true succeeded inside: %s", out)
	}
	if !strings.Contains(out, "No space left on device") {
		t.Errorf("unshare -U failed, but not for the namespace limit: %s", out)
	}
	// Nor through a second hop: a plain unshare of other namespaces needs capabilities.
	if out, err := run(t, "unshare", "-m", "true"); err == nil {
		t.Errorf("unshare -m succeeded inside: %s", out)
	}
}

// TestIdentity: same uid and gid as outside, no capabilities, and the limit can't be
// raised again.
func TestIdentity(t *testing.T) {
	skipUnlessAvailable(t)
	out, err := run(t, "sh", "-c", `id -u; id -g; grep -E '^Cap(Eff|Prm|Bnd|Amb):' /proc/self/status; cat /proc/sys/user/max_user_namespaces; echo 5 > /proc/sys/user/max_user_namespaces && echo raised`)
	if err == nil || strings.Contains(out, "raised") {
		t.Errorf("the limit was raised again inside: %s (%v)", out, err)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 7 {
		t.Fatalf("output: %s", out)
	}
	if lines[0] != strconv.Itoa(os.Geteuid()) || lines[1] != strconv.Itoa(os.Getegid()) {
		t.Errorf("ids inside %s:%s, want %d:%d", lines[0], lines[1], os.Geteuid(), os.Getegid())
	}
	for _, l := range lines[2:6] {
		if !strings.HasSuffix(l, "0000000000000000") {
			t.Errorf("capabilities left inside: %s", l)
		}
	}
	if lines[6] != "0" {
		t.Errorf("max_user_namespaces inside = %s, want 0", lines[6])
	}
}

// TestProbe: moat's own host detection, run inside, reports user namespaces missing.
func TestProbe(t *testing.T) {
	skipUnlessAvailable(t)
	cmd, err := userns0.Command("/proc/self/exe", "-test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Env, probeEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var r probe.Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	f, ok := r.Feature(probe.UserNS)
	if !ok {
		t.Fatal("no user namespace feature in the report")
	}
	if f.Status != probe.Missing {
		t.Errorf("user namespaces inside: %s (%s), want missing", f.Status, f.Detail)
	}
	if !strings.Contains(f.Detail, "max_user_namespaces=0") {
		t.Errorf("detail doesn't name the limit: %s", f.Detail)
	}
	t.Logf("inside: %s: %s", f.Status, f.Detail)
	// The control: outside, the same probe finds them.
	if outside, _ := probe.Detect().Feature(probe.UserNS); outside.Status == probe.Missing {
		t.Errorf("user namespaces are missing outside too: %s", outside.Detail)
	}
}

// TestAsRoot: CommandAsRoot is `unshare -r`: uid and gid 0 inside with every capability
// of the namespace, which still can't make another user namespace.
func TestAsRoot(t *testing.T) {
	skipUnlessAvailable(t)
	cmd, err := userns0.CommandAsRoot("sh", "-c", `id -u; id -g; grep '^CapEff:' /proc/self/status; cat /proc/sys/user/max_user_namespaces; unshare -U true && echo unshared`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := cmd.CombinedOutput()
	out := strings.TrimSpace(string(b))
	if strings.Contains(out, "unshared") {
		t.Fatalf("unshare -U worked inside: %s", out)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 4 || lines[0] != "0" || lines[1] != "0" || lines[3] != "0" {
		t.Fatalf("want uid 0, gid 0, max_user_namespaces 0 inside: %s", out)
	}
	if strings.HasSuffix(lines[2], "0000000000000000") {
		t.Errorf("no capabilities inside, want the namespace's: %s", lines[2])
	}
}
