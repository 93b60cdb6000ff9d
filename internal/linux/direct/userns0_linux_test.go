package direct_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/linux/probe"
	"github.com/moat-sandbox/moat/internal/linux/userns0"
)

const inUserns0Env = "MOAT_DIRECT_IN_USERNS0"

// TestUnderUserns0 runs the direct mode's escape tests and controls again on a simulated
// host without user namespaces (a user namespace where max_user_namespaces is 0, with no
// capabilities): the direct mode must need none.
func TestUnderUserns0(t *testing.T) {
	if os.Getenv(inUserns0Env) != "" {
		t.Skip("already inside")
	}
	if err := exec.Command("unshare", "-U", "true").Run(); err != nil {
		t.Skipf("this host can't create user namespaces (%v): the other tests already run without them", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := userns0.Command(exe, "-test.run=^(TestNoUserNamespaces|TestSecrets|TestProtected|TestTempAndHostTmp|TestProcesses|TestNetwork|TestWorkspaceRoot|TestGit|TestRaces|TestLimitations|TestSupervisorGone|TestExecFailures|TestSignalForwarding)$", "-test.count=1", "-test.v")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Env, inUserns0Env+"=1")
	out, err := cmd.CombinedOutput()
	passed := strings.Count(string(out), "--- PASS")
	t.Logf("inside: %d passed, %d skipped", passed, strings.Count(string(out), "--- SKIP"))
	if err != nil || passed < 13 {
		t.Fatalf("inside the namespace-less simulation: %v\n%s", err, out)
	}
}

// TestNoUserNamespaces proves, when run inside, that the simulation holds.
func TestNoUserNamespaces(t *testing.T) {
	if os.Getenv(inUserns0Env) == "" {
		t.Skip("only inside TestUnderUserns0")
	}
	f, _ := probe.Detect().Feature(probe.UserNS)
	if f.Status != probe.Missing {
		t.Fatalf("user namespaces inside the simulation: %s (%s)", f.Status, f.Detail)
	}
	if err := exec.Command("unshare", "-U", "true").Run(); err == nil {
		t.Fatal("unshare -U works inside the simulation")
	}
}
