package connbroker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// sock_diag (include/uapi/linux/sock_diag.h, unix_diag.h, inet_diag.h): how the broker
// learns which listening socket sits behind a unix socket file or a loopback port, and
// whether the sandbox made it listen.

const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	tcpListen        = 10 // TCP_LISTEN, also the unix sockets' listening state
	udiagShowVFS     = 0x2
	unixDiagVFS      = 1 // UNIX_DIAG_VFS attribute
	unixDiagReqLen   = 24
	unixDiagMsgLen   = 16
	inetDiagReqLen   = 56
	inetDiagMsgLen   = 72
)

// listener is one listening socket as sock_diag describes it.
type listener struct {
	cookie uint64
	// unix: the socket file's device (as stat reports it) and the low 32 bits of its
	// inode (all sock_diag carries)
	dev   uint64
	ino32 uint32
	// inet: the bound address and port
	addr netip.AddrPort
}

// diagDump sends one dump request and collects every reply message's payload.
func diagDump(req []byte) ([][]byte, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, os.NewSyscallError("socket(NETLINK_SOCK_DIAG)", err)
	}
	defer unix.Close(fd)
	msg := make([]byte, unix.NLMSG_HDRLEN+len(req))
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], sockDiagByFamily)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(msg[8:], 1) // sequence
	copy(msg[unix.NLMSG_HDRLEN:], req)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, os.NewSyscallError("sendto(NETLINK_SOCK_DIAG)", err)
	}
	var out [][]byte
	buf := make([]byte, 64<<10)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, os.NewSyscallError("recvfrom(NETLINK_SOCK_DIAG)", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("sock_diag reply: %w", err)
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
						return nil, os.NewSyscallError("sock_diag", unix.Errno(-e))
					}
				}
				return out, nil
			case sockDiagByFamily:
				out = append(out, bytes.Clone(m.Data)) // buf is reused by the next recvfrom
			}
		}
	}
}

// unixListeners lists the host's listening unix sockets bound to a file.
func unixListeners() ([]listener, error) {
	req := make([]byte, unixDiagReqLen)
	req[0] = unix.AF_UNIX
	binary.NativeEndian.PutUint32(req[4:], 1<<tcpListen)
	binary.NativeEndian.PutUint32(req[12:], udiagShowVFS)
	msgs, err := diagDump(req)
	if err != nil {
		return nil, err
	}
	var out []listener
	for _, m := range msgs {
		if len(m) < unixDiagMsgLen {
			continue
		}
		l := listener{cookie: uint64(binary.NativeEndian.Uint32(m[8:])) | uint64(binary.NativeEndian.Uint32(m[12:]))<<32}
		found := false
		for a := m[unixDiagMsgLen:]; len(a) >= 4; {
			alen := int(binary.NativeEndian.Uint16(a[0:]))
			if alen < 4 || alen > len(a) {
				break
			}
			if binary.NativeEndian.Uint16(a[2:]) == unixDiagVFS && alen >= 12 {
				l.ino32 = binary.NativeEndian.Uint32(a[4:])
				kdev := binary.NativeEndian.Uint32(a[8:]) // the kernel's dev_t: major<<20 | minor
				l.dev = unix.Mkdev(kdev>>20, kdev&0xfffff)
				found = true
			}
			a = a[min((alen+3)&^3, len(a)):]
		}
		if found {
			out = append(out, l)
		}
	}
	return out, nil
}

// tcpListeners lists the host's listening TCP sockets of one family.
func tcpListeners(family uint8) ([]listener, error) {
	req := make([]byte, inetDiagReqLen)
	req[0] = family
	req[1] = unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(req[4:], 1<<tcpListen)
	msgs, err := diagDump(req)
	if err != nil {
		return nil, err
	}
	var out []listener
	for _, m := range msgs {
		if len(m) < inetDiagMsgLen {
			continue
		}
		id := m[4:52] // struct inet_diag_sockid
		port := binary.BigEndian.Uint16(id[0:])
		var ip netip.Addr
		if m[0] == unix.AF_INET {
			ip = netip.AddrFrom4([4]byte(id[4:8]))
		} else {
			ip = netip.AddrFrom16([16]byte(id[4:20]))
		}
		cookie := uint64(binary.NativeEndian.Uint32(id[40:])) | uint64(binary.NativeEndian.Uint32(id[44:]))<<32
		out = append(out, listener{cookie: cookie, addr: netip.AddrPortFrom(ip, port)})
	}
	return out, nil
}
