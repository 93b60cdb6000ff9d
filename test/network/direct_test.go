package network_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// directEnv makes this suite run moat with --direct: its direct mode, with no
// namespaces (README "Hosts without user namespaces"), where every connect goes
// through moat's connection broker instead of an empty network namespace.
// TestDirectMode sets it.
const directEnv = "MOAT_NETTEST_DIRECT"

var directMode = os.Getenv(directEnv) != ""

// dig returns a dig command line with the suite's timeouts and opts. In the direct
// mode it asks over TCP: UDP sockets are refused there, and moat's DNS stub takes the
// nameserver's TCP connections.
func dig(opts string) string {
	cmd := "dig +tries=1 +time=4 "
	if directMode {
		cmd += "+tcp "
	}
	if opts != "" {
		cmd += opts + " "
	}
	return cmd
}

// TestDirectMode runs every other test of this suite again with moat run --direct:
// the same attacks, judged by the same listener logs, and the same controls, against
// the mode moat falls back to where user namespaces are unavailable.
func TestDirectMode(t *testing.T) {
	if directMode {
		t.Skip("already running the suite in the direct mode")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.count=1", "-test.v", "-test.timeout=4m", "-test.skip=^TestDirectMode$")
	cmd.Env = append(os.Environ(), directEnv+"=1", "MOAT_BIN="+moatBin)
	out, err := cmd.CombinedOutput()
	passed := strings.Count(string(out), "--- PASS")
	t.Logf("direct mode: %d passed, %d skipped", passed, strings.Count(string(out), "--- SKIP"))
	if err != nil {
		t.Fatalf("the suite in the direct mode: %v\n%s", err, out)
	}
}
