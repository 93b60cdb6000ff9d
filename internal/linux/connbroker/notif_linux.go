package connbroker

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Listener is the supervisor's end of a seccomp filter's notification listener
// ([seccomp.InstallListener] in the sandboxed process, handed over before exec).
type Listener struct {
	f            *os.File
	stopR, stopW *os.File
	handlers     sync.WaitGroup // Serve's handlers still running
}

// NewListener takes ownership of f, a seccomp notification listener.
func NewListener(f *os.File) (*Listener, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &Listener{f: f, stopR: r, stopW: w}, nil
}

// Close waits for the handlers Serve started, then closes the listener: every call still
// waiting for an answer, and every later one the filter would send, fails with ENOSYS in
// the sandboxed process.
func (l *Listener) Close() error {
	l.handlers.Wait()
	l.stopR.Close()
	l.stopW.Close()
	return l.f.Close()
}

// Stop makes Serve return; calls arriving later wait until the listener is closed.
func (l *Listener) Stop() { l.stopW.Write([]byte{0}) }

// Serve receives notifications and runs handle for each on its own goroutine (a connect
// may block), until no process uses the filter any more or Stop is called. handle must
// answer every notification it is given.
func (l *Listener) Serve(handle func(*Notif)) error {
	for {
		ok, err := l.wait(int(l.stopR.Fd()))
		if err != nil || !ok {
			return err
		}
		n, err := l.Recv()
		if errors.Is(err, unix.ENOENT) {
			continue // the thread was killed before we took its call
		}
		if err != nil {
			return err
		}
		l.handlers.Add(1)
		go func() {
			defer l.handlers.Done()
			handle(n)
		}()
	}
}

// Notif is one system call a sandboxed thread made and now waits in until it is answered.
// Its arguments are registers, safe to use; memory they point to belongs to the process,
// which can change it at any time, so it is read once ([Notif.ReadMem]) and never trusted
// again.
type Notif struct {
	ID   uint64
	Pid  int // the calling thread's id, in the supervisor's pid namespace
	Nr   int
	Arch uint32
	Args [6]uint64

	l *Listener
}

// wait blocks until a notification is pending (true) or no process uses the filter any
// more (false). stop, when readable, also ends the wait (false).
func (l *Listener) wait(stop int) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(l.f.Fd()), Events: unix.POLLIN}}
	if stop >= 0 {
		fds = append(fds, unix.PollFd{Fd: int32(stop), Events: unix.POLLIN})
	}
	for {
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, os.NewSyscallError("poll seccomp listener", err)
		}
		switch {
		case len(fds) > 1 && fds[1].Revents != 0:
			return false, nil
		case fds[0].Revents&unix.POLLIN != 0:
			return true, nil
		case fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0:
			return false, nil
		}
	}
}

// Valid reports whether the thread still waits in this call. A false answer means it was
// killed, and its pid may already name another process: nothing read through the pid
// since the notification arrived may be used.
func (n *Notif) Valid() bool {
	return n.l.idValid(n.ID) == nil
}

// Deny answers the call with errno, without running it.
func (n *Notif) Deny(errno unix.Errno) error {
	return n.l.respond(n.ID, 0, -int32(errno), 0)
}

// Return answers the call with a successful result val, without running it.
func (n *Notif) Return(val int64) error {
	return n.l.respond(n.ID, val, 0, 0)
}

// Continue lets the kernel run the call as the process made it. The kernel then reads the
// process's memory again, so this is safe only where another layer (Landlock) enforces
// the policy whatever that memory holds by then.
func (n *Notif) Continue() error {
	return n.l.respond(n.ID, 0, 0, unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE)
}

// ReadMem copies n bytes at addr out of the calling process (process_vm_readv) and then
// checks the notification is still valid, so the bytes came from the process that waits.
// The supervisor must be allowed to ptrace the process: same user and dumpable, or
// CAP_SYS_PTRACE; a process that made itself non-dumpable gets EPERM here.
func (n *Notif) ReadMem(addr uint64, size int) ([]byte, error) {
	buf := make([]byte, size)
	if size == 0 {
		return buf, nil
	}
	got, err := readMem(n.Pid, addr, buf)
	if err != nil {
		return nil, err
	}
	if got != size {
		return nil, unix.EFAULT
	}
	if !n.Valid() {
		return nil, errGone
	}
	return buf, nil
}

// ReadString reads a NUL-terminated string of at most max bytes (PATH_MAX for paths) at
// addr, page by page, as the kernel's strncpy_from_user would; ENAMETOOLONG if no NUL ends
// it within max bytes.
func (n *Notif) ReadString(addr uint64, max int) (string, error) {
	var out []byte
	for len(out) < max {
		chunk := 4096 - int(addr%4096) // never cross into a page the string doesn't reach
		chunk = min(chunk, max-len(out))
		buf := make([]byte, chunk)
		got, err := readMem(n.Pid, addr, buf)
		if err != nil && got == 0 {
			return "", err
		}
		if i := strings.IndexByte(string(buf[:got]), 0); i >= 0 {
			out = append(out, buf[:i]...)
			if !n.Valid() {
				return "", errGone
			}
			return string(out), nil
		}
		out = append(out, buf[:got]...)
		addr += uint64(got)
	}
	return "", unix.ENAMETOOLONG
}

// errGone says the calling thread stopped waiting while the supervisor looked at the call.
var errGone = errors.New("the sandboxed thread is gone")

// pidfd opens a pidfd for the calling thread (PIDFD_THREAD, Linux 6.9) and checks the
// notification is still valid, so the pidfd names the thread that waits, whatever happens
// to its pid later. Kernels without PIDFD_THREAD get a pidfd for the thread group: a
// descriptor is then looked up in the group leader's table.
func (n *Notif) pidfd() (int, error) {
	fd, err := unix.PidfdOpen(n.Pid, unix.PIDFD_THREAD)
	if errors.Is(err, unix.EINVAL) {
		tgid, terr := threadGroup(n.Pid)
		if terr != nil {
			return -1, terr
		}
		fd, err = unix.PidfdOpen(tgid, 0)
	}
	if err != nil {
		return -1, os.NewSyscallError("pidfd_open", err)
	}
	if !n.Valid() {
		unix.Close(fd)
		return -1, errGone
	}
	return fd, nil
}

// GetFD copies the calling thread's descriptor targetFD into the supervisor
// (pidfd_getfd). The copy shares the open file (a socket, its flags, its state) with the
// process: acting on it acts on the process's socket, whatever number the process uses
// for it by the time the call returns.
func (n *Notif) GetFD(targetFD int) (*os.File, error) {
	pfd, err := n.pidfd()
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	fd, err := unix.PidfdGetfd(pfd, targetFD, 0)
	if err != nil {
		return nil, os.NewSyscallError("pidfd_getfd", err)
	}
	return os.NewFile(uintptr(fd), "fd "+strconv.Itoa(targetFD)+" of "+strconv.Itoa(n.Pid)), nil
}

// OpenProcDir opens /proc/<tid>/<name> (cwd or root) of the calling thread as an O_PATH
// directory and checks the notification is still valid.
func (n *Notif) OpenProcDir(name string) (*os.File, error) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(n.Pid)+"/"+name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/proc/" + strconv.Itoa(n.Pid) + "/" + name, Err: err}
	}
	if !n.Valid() {
		unix.Close(fd)
		return nil, errGone
	}
	return os.NewFile(uintptr(fd), name), nil
}

// threadGroup reads the Tgid of thread tid.
func threadGroup(tid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("no Tgid in /proc/%d/status", tid)
}
