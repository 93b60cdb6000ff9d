package reaper_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linux/reaper"
)

// The tests re-execute the test binary as a supervisor stage ("helper"): it becomes a
// subreaper (or not, for the control), runs a shell script that leaves processes behind,
// reports when the script has exited, waits for the test's go-ahead and kills everything.
// The test judges by pidfds it opened on the leftovers and by scanning /proc: evidence
// from outside the helper.

const (
	helperEnv = "MOAT_REAPER_HELPER" // "subreaper" or "plain"
	scriptEnv = "MOAT_REAPER_SCRIPT"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

func helper(mode string) int {
	if mode == "subreaper" {
		if err := reaper.Become(); err != nil {
			fmt.Println("error", err)
			return 1
		}
	}
	script := os.Getenv(scriptEnv)
	env := []string{"PATH=/usr/bin:/bin", "F=" + os.Getenv("F")}
	p, err := os.StartProcess("/bin/sh", []string{"sh", "-c", script, os.Getenv("MARKER")}, &os.ProcAttr{
		Env: env, Files: []*os.File{nil, os.Stderr, os.Stderr},
	})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	ws, err := reaper.Wait(p.Pid)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Printf("exited %d\n", ws.ExitStatus())
	bufio.NewReader(os.Stdin).ReadString('\n') // the go-ahead
	n, err := reaper.KillAll()
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	if left, _ := reaper.Children(); len(left) > 0 {
		fmt.Println("error children left:", left)
		return 1
	}
	fmt.Printf("killed %d\n", n)
	return 0
}

type run struct {
	cmd   *exec.Cmd
	out   *bufio.Reader
	in    *os.File
	pidsF string
}

func start(t *testing.T, mode, script, marker string) *run {
	t.Helper()
	f := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, scriptEnv+"="+script, "F="+f, "MARKER="+marker)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = inR
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	r := &run{cmd: cmd, out: bufio.NewReader(stdout), in: inW, pidsF: f}
	line, err := r.out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "exited ") {
		t.Fatalf("helper: %q %v", line, err)
	}
	return r
}

// finish gives the go-ahead and returns the helper's last line.
func (r *run) finish(t *testing.T) string {
	t.Helper()
	r.in.Write([]byte("go\n"))
	r.in.Close()
	line, _ := r.out.ReadString('\n')
	if err := r.cmd.Wait(); err != nil {
		t.Errorf("helper: %v (%q)", err, line)
	}
	return strings.TrimSpace(line)
}

func readPids(t *testing.T, f string, want int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(f)
		var pids []int
		for _, s := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(s)
			if err == nil {
				pids = append(pids, pid)
			}
		}
		if len(pids) >= want {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d pids written", len(pids), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// daemons leaves four processes behind when the script exits: one in its own session, one
// forked from a subshell, one double-forked, one ignoring SIGHUP and SIGTERM.
const daemons = `
setsid sh -c 'echo $$ >> "$F"; exec sleep 1000' </dev/null >/dev/null 2>&1 &
( sh -c 'echo $$ >> "$F"; exec sleep 1000' & )
sh -c 'sh -c "echo \$\$ >> \"\$F\"; exec sleep 1000" & exit 0'
nohup sh -c 'trap "" HUP TERM INT; echo $$ >> "$F"; exec sleep 1000' >/dev/null 2>&1 &
while [ "$(wc -l < "$F" 2>/dev/null || echo 0)" -lt 4 ]; do sleep 0.01; done
exit 0
`

func pidfds(t *testing.T, pids []int) []int {
	t.Helper()
	var fds []int
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatalf("pidfd_open(%d): %v (the leftover is already gone?)", pid, err)
		}
		t.Cleanup(func() {
			unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) // never leave one behind
			unix.Close(fd)
		})
		fds = append(fds, fd)
	}
	return fds
}

// exited reports whether the process behind pidfd has ended, waiting up to d.
func exited(fd int, d time.Duration) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, _ := unix.Poll(p, int(d/time.Millisecond))
	return n == 1
}

func TestKillAllDaemons(t *testing.T) {
	r := start(t, "subreaper", daemons, "daemons")
	pids := readPids(t, r.pidsF, 4)
	fds := pidfds(t, pids)
	helperPid := r.cmd.Process.Pid
	sessions := map[int]bool{}
	for i, pid := range pids {
		if exited(fds[i], 0) {
			t.Fatalf("leftover %d ended before the kill: the test shows nothing", pid)
		}
		ppid, sid := statOf(t, pid)
		if ppid != helperPid {
			t.Errorf("leftover %d has parent %d, want the subreaper %d", pid, ppid, helperPid)
		}
		sessions[sid] = true
	}
	if len(sessions) < 2 {
		t.Errorf("the setsid leftover shares the others' session: sessions %v", sessions)
	}
	last := r.finish(t)
	if !strings.HasPrefix(last, "killed ") {
		t.Fatalf("helper: %s", last)
	}
	for i, pid := range pids {
		if !exited(fds[i], 5*time.Second) {
			t.Errorf("process %d (ppid %d) is still alive after KillAll", pid, mustPpid(pid))
		}
	}
}

// TestWithoutSubreaper is the control: without Become the leftovers are re-parented to the
// host's init (or another subreaper above) and survive KillAll.
func TestWithoutSubreaper(t *testing.T) {
	r := start(t, "plain", daemons, "control")
	pids := readPids(t, r.pidsF, 4)
	fds := pidfds(t, pids)
	if last := r.finish(t); last != "killed 0" {
		t.Errorf("helper without a subreaper: %q, want killed 0", last)
	}
	alive := 0
	for i := range pids {
		if !exited(fds[i], 100*time.Millisecond) {
			alive++
		}
	}
	if alive != len(pids) {
		t.Errorf("%d of %d leftovers survived without a subreaper, want all: the daemons test can't tell", alive, len(pids))
	}
}

// TestKillAllForkBomb races KillAll against a process that forks and exits in a loop (each
// generation is a new orphan of the reaper) and a setsid shell that keeps starting
// background sleeps. Afterwards no process with the run's marker may exist anywhere.
func TestKillAllForkBomb(t *testing.T) {
	// The marker is $0 of every shell and the duration of every sleep, so each process of
	// the bomb carries it on its command line.
	marker := strconv.Itoa(900000000 + os.Getpid())
	script := `
export HOP='sh -c "$HOP" "$0" & exit 0'
sh -c "$HOP" "$0" &
setsid sh -c 'while :; do sleep "$0" & sleep 0.002; done' "$0" &
sleep 0.3
exit 0
`
	r := start(t, "subreaper", script, marker)
	before := withMarker(t, marker)
	if len(before) < 3 {
		t.Fatalf("only %d marked processes before the kill: the bomb didn't start", len(before))
	}
	last := r.finish(t)
	if !strings.HasPrefix(last, "killed ") {
		t.Fatalf("helper: %s", last)
	}
	t.Logf("%d marked processes before, helper %s", len(before), last)
	if left := withMarker(t, marker); len(left) > 0 {
		for _, pid := range left {
			unix.Kill(pid, unix.SIGKILL)
		}
		t.Errorf("%d processes of the bomb outlived KillAll: %v", len(left), left)
	}
}

// withMarker lists the processes whose command line holds marker.
func withMarker(t *testing.T, marker string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(marker)) {
			out = append(out, pid)
		}
	}
	return out
}

func statOf(t *testing.T, pid int) (ppid, sid int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ppid, _ = strconv.Atoi(f[1])
	sid, _ = strconv.Atoi(f[3])
	return ppid, sid
}

func mustPpid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
