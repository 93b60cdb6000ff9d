//go:build linux

package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// checkStdio refuses a socket among the command's stdin, stdout and stderr that
// the command could point somewhere else. A socket belongs to the network
// namespace it was made in, the host's, and no layer of the sandbox watches what
// is done with a descriptor it inherits: with a TCP socket (inetd, `nc -e`, bash's
// >/dev/tcp) it can connect(AF_UNSPEC) and then connect to any host, the host's
// loopback included, or listen on the host's network; with a UDP or unix datagram
// socket it can sendto any address or path. A connected unix stream or seqpacket
// socket (a pipe-like pair, journald's stdout) can't be pointed elsewhere; an
// unconnected or listening one could reach the host's abstract sockets, which
// belong to the host's network namespace too, or take its connections.
func checkStdio(stdio ...any) error {
	names := []string{"stdin", "stdout", "stderr"}
	for i, c := range stdio {
		f, ok := c.(*os.File)
		if !ok || f == nil {
			continue // moat relays it through a pipe
		}
		rc, err := f.SyscallConn()
		if err != nil {
			continue
		}
		var what string
		_ = rc.Control(func(fd uintptr) {
			var st unix.Stat_t
			if unix.Fstat(int(fd), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
				return
			}
			domain, err1 := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
			typ, err2 := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TYPE)
			if err1 == nil && err2 == nil && domain == unix.AF_UNIX && (typ == unix.SOCK_STREAM || typ == unix.SOCK_SEQPACKET) {
				if _, err := unix.Getpeername(int(fd)); err == nil {
					return
				}
			}
			switch {
			case err1 != nil || err2 != nil:
				what = "a socket moat can't inspect"
			case domain == unix.AF_INET || domain == unix.AF_INET6:
				what = "a network socket of the host"
			case domain == unix.AF_UNIX:
				what = "an unconnected unix socket of the host"
			default:
				what = fmt.Sprintf("a socket of family %d of the host", domain)
			}
		})
		if what != "" {
			return &SetupError{Stage: "stdio", Err: fmt.Errorf("the command's %s is %s, which it could point at any address and so leave the sandbox's network", names[i], what),
				HintText: "pass the data through a pipe instead: ... | moat run ... | ..."}
		}
	}
	return nil
}
