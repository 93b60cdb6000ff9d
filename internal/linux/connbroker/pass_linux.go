package connbroker

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// SendListener passes the seccomp listener l over the unix socket conn (SCM_RIGHTS); the
// sandboxed stage calls it after installing the filter, then closes l before it execs.
func SendListener(conn *os.File, l *os.File) error {
	if err := unix.Sendmsg(int(conn.Fd()), []byte{'L'}, unix.UnixRights(int(l.Fd())), nil, 0); err != nil {
		return fmt.Errorf("send seccomp listener: %w", os.NewSyscallError("sendmsg", err))
	}
	return nil
}

// ReceiveListener takes the listener SendListener sent over conn.
func ReceiveListener(conn *os.File) (*Listener, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(int(conn.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("receive seccomp listener: %w", os.NewSyscallError("recvmsg", err))
		}
		if n == 0 {
			return nil, errors.New("receive seccomp listener: the sandboxed stage ended without sending it")
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return nil, fmt.Errorf("receive seccomp listener: no descriptor in the message (%v)", err)
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return nil, fmt.Errorf("receive seccomp listener: want one descriptor (%v)", err)
		}
		return NewListener(os.NewFile(uintptr(fds[0]), "seccomp-listener"))
	}
}
