//go:build linux

package nsinit

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/spec"
)

// netFD carries the sockets init opens for the supervisor's proxy and DNS stub.
const netFD = 5

// openNet opens, in the sandbox's network namespace, the sockets listed in spec.Net
// and passes them to the supervisor in one message. The command can connect to them
// but never holds them: init closes its copies before the command starts, and the
// supervisor, outside, serves them.
func openNet(n *spec.Net) error {
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	open := func(typ, port int) error {
		fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return os.NewSyscallError("socket", err)
		}
		fds = append(fds, fd)
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return os.NewSyscallError("setsockopt", err)
		}
		if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			return fmt.Errorf("bind 127.0.0.1:%d: %w", port, os.NewSyscallError("bind", err))
		}
		if typ == unix.SOCK_STREAM {
			if err := unix.Listen(fd, 4096); err != nil {
				return os.NewSyscallError("listen", err)
			}
		}
		return nil
	}
	if err := open(unix.SOCK_STREAM, n.ProxyPort); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	if err := open(unix.SOCK_DGRAM, 53); err != nil {
		return fmt.Errorf("dns: %w", err)
	}
	if err := open(unix.SOCK_STREAM, 53); err != nil {
		return fmt.Errorf("dns: %w", err)
	}
	for _, p := range n.HostPorts {
		if err := open(unix.SOCK_STREAM, p); err != nil {
			return fmt.Errorf("host port %d: %w", p, err)
		}
	}
	if err := unix.Sendmsg(netFD, []byte(spec.NetMessage), unix.UnixRights(fds...), nil, 0); err != nil {
		return os.NewSyscallError("sendmsg", err)
	}
	return unix.Close(netFD)
}
