// Package network_test attacks moat's network layer with real clients on the real
// kernel, and judges every attempt by evidence outside the sandbox: the log of a
// server on a test host, of a listener on the host's loopback, of a DNS server the
// tests run. Each attack is paired with a control, the same client on the same path
// where the policy allows it, so a broken harness can't pass silently.
//
// The test host is a network namespace the tests create, joined to the host's by a
// veth pair inside 198.18.0.0/24 (a /28 of it per test process, plus fe80::/64 on
// that link only); nothing is sent anywhere else. Its servers are created from the
// test process (setns on a locked thread), so their logs are in memory here.
// moat's supervisor resolves names through /etc/resolv.conf: the tests run moat in
// a mount namespace where that file names the test host's DNS server, which answers
// *.moat-test. /etc/hosts is left alone, so inside the sandbox these names resolve
// only through moat's DNS stub (the sandbox replaces resolv.conf with its own).
//
// Building the test host needs root; those tests skip otherwise. The rest (host
// loopback, unix sockets, DNS exfiltration judged by a DNS server in a user
// namespace, the event log, package managers) also run as a plain user:
//
//	go test ./test/network/ -v
//	go test -c -o /tmp/network.test ./test/network && MOAT_BIN=/tmp/moat su moattest -c '/tmp/network.test -test.v'
//
// MOAT_NETTEST_KEEP=1 keeps the host directories for inspection.
package network_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/moat-sandbox/moat/internal/testmoat"
)

var (
	moatBin  string // the moat binary under test; runs outside the sandbox
	baseDir  string // every test's host directories live under it
	selfBin  string // a copy of this test binary the sandbox can run (the Go client)
	toolMoat string // a copy of moat the sandbox can run (moat connect)
)

// roleEnv makes this test binary act as a helper instead of running tests: see
// helpers_test.go.
const roleEnv = "MOAT_NETTEST_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role, os.Args[1:]))
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	var cleanup func()
	var err error
	baseDir, moatBin, cleanup, err = testmoat.Setup("network", "MOAT_NETTEST_DIR", "MOAT_NETTEST_KEEP")
	defer cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// moat connect runs inside the sandbox: a copy in a directory it sees.
	tools := filepath.Join(baseDir, "tools")
	if err := os.Mkdir(tools, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "network tests:", err)
		return 1
	}
	toolMoat = filepath.Join(tools, "moat")
	if err := copyFile(moatBin, toolMoat); err != nil {
		fmt.Fprintln(os.Stderr, "network tests: copy moat:", err)
		return 1
	}
	// The test binary may sit in a directory the sandbox replaces (/tmp): copy it.
	self, err := os.Executable()
	if err == nil {
		selfBin = filepath.Join(tools, "nettest")
		err = copyFile(self, selfBin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "network tests: copy the test binary:", err)
		return 1
	}
	defer closeTestHost()
	return m.Run()
}

func goBin() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func isRoot() bool { return os.Getuid() == 0 }
