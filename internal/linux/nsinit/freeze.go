//go:build linux

package nsinit

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// freezeWait is how long freeze waits for every process to stop. A process stops
// when it next returns to user space, so this is long only for one in an
// uninterruptible wait (a slow disk, a hung FUSE server): the supervisor is then
// told how many still ran.
const freezeWait = 500 * time.Millisecond

// freezer stops every process of the sandbox while moat asks the person at the
// terminal a question, so that none can write to the terminal meanwhile and draw a
// question of its own under moat's.
//
// SIGSTOP, not a handled stop signal: no process can block, catch or ignore it, and
// kill(-1) from pid 1 reaches every process of the sandbox, those of nested pid
// namespaces too, and the children of a fork it races with (see endSandbox).
// A process can still be continued by a SIGCONT the kernel sends it (a POSIX timer
// it set): an open gap, README "Limitations".
// Freezing stops the command like a Ctrl-Z would, and init's wait for it reports
// that; stopped tells reap to keep those stops to itself.
type freezer struct {
	mu      sync.Mutex
	frozen  bool
	stopped map[string]bool // processes stopped before the freeze, which thaw leaves so
}

// freeze stops every process of the sandbox and returns how many still ran when
// it stopped waiting. It runs on the thread that forked the command (see
// endSandbox on why).
func (f *freezer) freeze() (running int) {
	f.mu.Lock()
	f.frozen = true
	f.stopped = stoppedProcesses()
	f.mu.Unlock()
	for end := time.Now().Add(freezeWait); ; time.Sleep(time.Millisecond) {
		// Again each time: a tracer in the sandbox may have suppressed its tracee's
		// SIGSTOP before it stopped itself; stopped, it can't any more.
		_ = unix.Kill(-1, unix.SIGSTOP)
		if running = runningTasks(); running == 0 || time.Now().After(end) {
			return running
		}
	}
}

// thaw continues the processes of the sandbox the freeze stopped; one that was
// stopped before (kill -STOP, a shell's stopped job, the command at Ctrl-Z, which
// the supervisor continues itself with its process group) stays stopped.
func (f *freezer) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.stopped) == 0 {
		_ = unix.Kill(-1, unix.SIGCONT)
	} else {
		procs, _ := os.ReadDir("/proc")
		self := strconv.Itoa(os.Getpid())
		for _, p := range procs {
			pid, err := strconv.Atoi(p.Name())
			if err != nil || p.Name() == self || f.stopped[p.Name()] {
				continue
			}
			_ = unix.Kill(pid, unix.SIGCONT)
		}
	}
	f.frozen = false
	f.stopped = nil
}

// stoppedProcesses lists the processes of the sandbox, init aside, that are
// stopped by a signal (state T).
func stoppedProcesses() map[string]bool {
	out := map[string]bool{}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	self := strconv.Itoa(os.Getpid())
	for _, p := range procs {
		pid := p.Name()
		if pid == self || pid[0] < '0' || pid[0] > '9' {
			continue
		}
		if procState(pid) == 'T' {
			out[pid] = true
		}
	}
	return out
}

// procState is the State letter of /proc/PID/status, 0 when it can't be read.
func procState(pid string) byte {
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	_, rest, ok := bytes.Cut(status, []byte("\nState:\t"))
	if !ok || len(rest) == 0 {
		return 0
	}
	return rest[0]
}

// ownStop reports whether the command's stop that wait4 just returned is not for
// the supervisor: it came while the sandbox was frozen, or the command has
// continued since (a freeze's stop, collected after the thaw). Thaw's SIGCONT
// has taken the command out of the stopped state by the time kill returns, so a
// stop collected after the thaw finds it running.
func (f *freezer) ownStop(pid int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frozen || !taskStopped(strconv.Itoa(pid), strconv.Itoa(pid))
}

// runningTasks counts the threads of the sandbox, init's aside, that are neither
// stopped nor dead.
func runningTasks() int {
	n := 0
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	self := strconv.Itoa(os.Getpid())
	for _, p := range procs {
		pid := p.Name()
		if pid == self || pid[0] < '0' || pid[0] > '9' {
			continue
		}
		tasks, err := os.ReadDir("/proc/" + pid + "/task")
		if err != nil {
			continue // ended meanwhile
		}
		for _, t := range tasks {
			if !taskStopped(pid, t.Name()) {
				n++
			}
		}
	}
	return n
}

// taskStopped reads the state of thread tid of process pid from /proc: stopped
// (T, t: by a signal or a tracer) or gone (Z, X, or no such thread) count as
// stopped, and so does a thread in an uninterruptible wait (D) with SIGSTOP
// pending: it stops before it runs user code again. A vfork parent waits that
// way for its child, which may have stopped before exec.
func taskStopped(pid, tid string) bool {
	status, err := os.ReadFile("/proc/" + pid + "/task/" + tid + "/status")
	if err != nil {
		return true
	}
	var state byte
	var pending uint64
	for _, line := range bytes.Split(status, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(":\t"))
		if !ok || len(v) == 0 {
			continue
		}
		switch string(k) {
		case "State":
			state = v[0]
		case "SigPnd", "ShdPnd":
			n, err := strconv.ParseUint(string(v), 16, 64)
			if err != nil {
				return false
			}
			pending |= n
		}
	}
	switch state {
	case 'T', 't', 'Z', 'X', 'x':
		return true
	case 'D':
		return pending&(1<<(unix.SIGSTOP-1)) != 0
	}
	return false
}
