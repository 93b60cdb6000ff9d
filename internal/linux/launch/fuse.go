//go:build linux

package launch

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/spec"
)

// FUSE waits for init's first message when spec.FUSE is set: the FUSE device of the
// mounted mask filesystem, opened non-blocking (so that closing it stops a reader),
// and a detached mount of that filesystem, which keeps it until it is closed, so
// that its teardown (the kernel unregisters its backing device) happens in the
// closer, not in init's exit, which the sandbox's end waits for. Or, when init
// could not open or mount it, nils and why (init then uses plain masks). last says
// no network message follows, so the descriptor is closed. An error means init
// failed before it got that far; the sandbox should be killed, and Wait reports why.
func (p *Process) FUSE(last bool) (dev, mnt *os.File, why string, err error) {
	if p.net == nil {
		return nil, nil, "", errors.New("no FUSE device requested")
	}
	if last {
		defer p.net.Close()
	}
	buf := make([]byte, 512)
	oob := make([]byte, unix.CmsgSpace(2*4))
	n, oobn, _, _, err := unix.Recvmsg(int(p.net.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, nil, "", os.NewSyscallError("recvmsg", err)
	}
	if n == 0 {
		return nil, nil, "", errors.New("sandbox init ended before mounting its masks")
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if got, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	msg := string(buf[:n])
	if msg != spec.FUSEMessage || len(fds) != 2 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		if why, ok := strings.CutPrefix(msg, spec.NoFUSEMessage); ok {
			return nil, nil, why, nil
		}
		return nil, nil, "", fmt.Errorf("unexpected message %q with %d descriptors from sandbox init", msg, len(fds))
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, "", os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(fds[0]), "fuse"), os.NewFile(uintptr(fds[1]), "fuse-mount"), "", nil
}
