package privs

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDropCapabilities runs DropCapabilities in a new user namespace, where the
// process has every capability, and checks every set is empty afterwards: the
// bounding set up to the kernel's last capability, whatever x/sys/unix knows.
func TestDropCapabilities(t *testing.T) {
	if os.Getenv("PRIVS_TEST_HELPER") == "1" {
		dropHelper(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDropCapabilities$", "-test.v")
	cmd.Env = append(os.Environ(), "PRIVS_TEST_HELPER=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Skipf("can't start a process in a new user namespace: %v", err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestDropCapabilities") {
		t.Fatalf("helper: %v\n%s", err, out)
	}
}

func dropHelper(t *testing.T) {
	runtime.LockOSThread() // capabilities are per thread
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		t.Skip(err)
	}
	last, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(last), 0, 0, 0); r != 1 {
		t.Fatalf("capability %d is not in the bounding set before the drop: the test proves nothing", last)
	}
	if err := DropCapabilities(); err != nil {
		t.Fatal(err)
	}
	for c := 0; c <= last; c++ {
		if r, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); r != 0 || err != nil {
			t.Errorf("capability %d still in the bounding set (%d, %v)", c, r, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		t.Fatal(err)
	}
	if data != [2]unix.CapUserData{} {
		t.Errorf("capabilities left: %+v", data)
	}
	for c := 0; c <= last; c++ {
		if r, _ := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c), 0, 0); r != 0 {
			t.Errorf("capability %d still ambient", c)
		}
	}
}
