//go:build linux

package connbroker

import (
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompNotif is struct seccomp_notif (include/uapi/linux/seccomp.h).
type seccompNotif struct {
	id    uint64
	pid   uint32
	flags uint32
	nr    int32
	arch  uint32
	ip    uint64
	args  [6]uint64
}

// seccompNotifResp is struct seccomp_notif_resp.
type seccompNotifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

// seccompNotifAddfd is struct seccomp_notif_addfd.
type seccompNotifAddfd struct {
	id         uint64
	flags      uint32
	srcfd      uint32
	newfd      uint32
	newfdFlags uint32
}

// The ioctl numbers encode these sizes; a mismatch is a bug in the structs above.
var _ = [1]struct{}{}[unsafe.Sizeof(seccompNotif{})-0x50]
var _ = [1]struct{}{}[unsafe.Sizeof(seccompNotifResp{})-0x18]
var _ = [1]struct{}{}[unsafe.Sizeof(seccompNotifAddfd{})-0x18]

func (l *Listener) ioctl(req uintptr, arg unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, l.f.Fd(), req, uintptr(arg))
	runtime.KeepAlive(l.f)
	if e != 0 {
		return e
	}
	return nil
}

// Recv takes the next notification (SECCOMP_IOCTL_NOTIF_RECV). It blocks if none is
// pending; ENOENT means the thread was killed before it could be received.
func (l *Listener) Recv() (*Notif, error) {
	var sn seccompNotif // the kernel requires it zeroed
	if err := l.ioctl(unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&sn)); err != nil {
		return nil, os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_RECV)", err)
	}
	return &Notif{ID: sn.id, Pid: int(sn.pid), Nr: int(sn.nr), Arch: sn.arch, Args: sn.args, l: l}, nil
}

func (l *Listener) respond(id uint64, val int64, errno int32, flags uint32) error {
	r := seccompNotifResp{id: id, val: val, error: errno, flags: flags}
	if err := l.ioctl(unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r)); err != nil {
		return os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_SEND)", err)
	}
	return nil
}

func (l *Listener) idValid(id uint64) error {
	return l.ioctl(unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id))
}

// ReturnFD installs fd in the calling process and answers the call with its number, in one
// step (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND, Linux 5.14); cloexec sets
// O_CLOEXEC on the new descriptor.
func (n *Notif) ReturnFD(fd int, cloexec bool) (int, error) {
	a := seccompNotifAddfd{id: n.ID, flags: unix.SECCOMP_ADDFD_FLAG_SEND, srcfd: uint32(fd)}
	if cloexec {
		a.newfdFlags = unix.O_CLOEXEC
	}
	r, _, e := unix.Syscall(unix.SYS_IOCTL, n.l.f.Fd(), unix.SECCOMP_IOCTL_NOTIF_ADDFD, uintptr(unsafe.Pointer(&a)))
	runtime.KeepAlive(n.l.f)
	if e != 0 {
		return -1, os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_ADDFD)", e)
	}
	return int(r), nil
}

// readMem reads len(buf) bytes at addr of process pid.
func readMem(pid int, addr uint64, buf []byte) (int, error) {
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err != nil {
		return 0, os.NewSyscallError("process_vm_readv", err)
	}
	return n, nil
}

// connectRaw calls connect(2) with the exact address bytes sa.
func connectRaw(fd uintptr, sa []byte) error {
	_, _, e := unix.Syscall(unix.SYS_CONNECT, fd, uintptr(unsafe.Pointer(&sa[0])), uintptr(len(sa)))
	runtime.KeepAlive(sa)
	if e != 0 {
		return e
	}
	return nil
}
