package connbroker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// fileID names a file by device and inode.
type fileID struct{ dev, ino uint64 }

// Broker carries out the network calls the direct mode's seccomp filter
// ([seccomp.NetProgram]) sends to the supervisor.
type Broker struct {
	pol  Policy
	unix map[fileID]*os.File // allowed unix sockets, pinned with O_PATH

	mu  sync.Mutex
	own map[uint64]bool // socket cookies of the listeners the broker made listen

	// OnEvent, if set, is called for every decided connect and listen, from the
	// goroutine that handled it.
	OnEvent func(Event)
}

// New checks p and opens the allowed unix sockets.
func New(p Policy) (*Broker, error) {
	b := &Broker{pol: p, unix: map[fileID]*os.File{}, own: map[uint64]bool{}}
	var err error
	if b.pol.TCP, err = normalAddrs("allowed TCP address", p.TCP); err != nil {
		return nil, err
	}
	if b.pol.DNS, err = normalAddrs("nameserver", p.DNS); err != nil {
		return nil, err
	}
	if len(p.DNS) > 0 {
		if _, err := normalAddrs("DNS stub", []netip.AddrPort{p.DNSStub}); err != nil {
			return nil, err
		}
	}
	for _, path := range p.Unix {
		if len(path) == 0 || path[0] != '/' {
			b.Close()
			return nil, fmt.Errorf("connection broker: allowed unix socket %q is not an absolute path", path)
		}
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("connection broker: allowed unix socket: %w", &os.PathError{Op: "open", Path: path, Err: err})
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			unix.Close(fd)
			b.Close()
			return nil, fmt.Errorf("connection broker: allowed unix socket %s is not a socket", path)
		}
		b.unix[fileID{st.Dev, st.Ino}] = os.NewFile(uintptr(fd), path)
	}
	return b, nil
}

// normalAddrs checks that each of aps is an address and port, and unmaps IPv4-mapped
// IPv6 addresses and drops zones, as addresses read from the process are compared.
func normalAddrs(what string, aps []netip.AddrPort) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for _, ap := range aps {
		if !ap.IsValid() || ap.Port() == 0 {
			return nil, fmt.Errorf("connection broker: %s %v is not an address and port", what, ap)
		}
		out = append(out, netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port()))
	}
	return out, nil
}

// Close releases the allowed sockets' descriptors.
func (b *Broker) Close() {
	for _, f := range b.unix {
		f.Close()
	}
}

// Handle answers n if it is a call the network filter sends (connect, listen) and reports
// whether it was one.
func (b *Broker) Handle(n *Notif) bool {
	switch n.Nr {
	case unix.SYS_CONNECT:
		b.connect(n)
	case unix.SYS_LISTEN:
		b.listen(n)
	default:
		return false
	}
	return true
}

func (b *Broker) event(e Event) {
	if b.OnEvent != nil {
		b.OnEvent(e)
	}
}

// answer replies to n with err's errno, or success.
func answer(n *Notif, err error) unix.Errno {
	if err == nil {
		n.Return(0)
		return 0
	}
	errno := errnoOf(err)
	n.Deny(errno)
	return errno
}

func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EACCES
}

// refuse denies n with errno and reports why.
func (b *Broker) refuse(n *Notif, call, addr string, errno unix.Errno, reason string) {
	n.Deny(errno)
	b.event(Event{Pid: n.Pid, Call: call, Addr: addr, Errno: errno, Reason: reason})
}

const maxSockaddr = 128 // sizeof(struct sockaddr_storage): longer addresses are EINVAL

func (b *Broker) connect(n *Notif) {
	fd, size := int(int32(n.Args[0])), int(int32(n.Args[2]))
	if size < 0 || size > maxSockaddr {
		n.Deny(unix.EINVAL)
		return
	}
	raw, err := n.ReadMem(n.Args[1], size)
	if errors.Is(err, errGone) {
		return
	}
	if err != nil {
		if errors.Is(err, unix.EFAULT) {
			n.Deny(unix.EFAULT)
			return
		}
		b.refuse(n, "connect", "?", unix.EACCES, "can't read the address from the process: "+err.Error())
		return
	}
	if size < 2 {
		n.Deny(unix.EINVAL)
		return
	}
	sock, err := n.GetFD(fd)
	if errors.Is(err, errGone) {
		return
	}
	if err != nil {
		n.Deny(errnoOf(err)) // EBADF for a descriptor the process doesn't have
		return
	}
	defer sock.Close()
	family := binary.NativeEndian.Uint16(raw)
	if family == unix.AF_UNSPEC {
		// Dissolves a TCP connection (or a datagram association): reaches nobody.
		answer(n, connectRaw(sock.Fd(), make([]byte, size)))
		return
	}
	domain, err := unix.GetsockoptInt(int(sock.Fd()), unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		n.Deny(errnoOf(err)) // ENOTSOCK
		return
	}
	if int(family) != domain {
		n.Deny(unix.EAFNOSUPPORT) // as the kernel answers an address of another family
		return
	}
	switch family {
	case unix.AF_INET, unix.AF_INET6:
		b.connectInet(n, sock, raw)
	case unix.AF_UNIX:
		b.connectUnix(n, sock, raw)
	default:
		b.refuse(n, "connect", "family "+strconv.Itoa(int(family)), unix.EACCES, "only TCP and unix sockets may connect")
	}
}

// parseInet decodes a sockaddr_in or sockaddr_in6, with the kernel's length rules.
func parseInet(raw []byte) (netip.AddrPort, bool) {
	switch binary.NativeEndian.Uint16(raw) {
	case unix.AF_INET:
		if len(raw) < 16 {
			return netip.AddrPort{}, false
		}
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(raw[4:8])), binary.BigEndian.Uint16(raw[2:])), true
	case unix.AF_INET6:
		if len(raw) < 24 { // SIN6_LEN_RFC2133
			return netip.AddrPort{}, false
		}
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(raw[8:24])), binary.BigEndian.Uint16(raw[2:])), true
	}
	return netip.AddrPort{}, false
}

// encodeInet builds the broker's own sockaddr for ap, in the family the process used.
func encodeInet(family uint16, ap netip.AddrPort) []byte {
	if family == unix.AF_INET {
		sa := make([]byte, 16)
		binary.NativeEndian.PutUint16(sa, unix.AF_INET)
		binary.BigEndian.PutUint16(sa[2:], ap.Port())
		a4 := ap.Addr().Unmap().As4()
		copy(sa[4:], a4[:])
		return sa
	}
	sa := make([]byte, 28) // flow label and scope id zero: no allowed address is link-local
	binary.NativeEndian.PutUint16(sa, unix.AF_INET6)
	binary.BigEndian.PutUint16(sa[2:], ap.Port())
	a16 := ap.Addr().As16()
	copy(sa[8:], a16[:])
	return sa
}

func (b *Broker) connectInet(n *Notif, sock *os.File, raw []byte) {
	ap, ok := parseInet(raw)
	if !ok {
		n.Deny(unix.EINVAL)
		return
	}
	family := binary.NativeEndian.Uint16(raw)
	dst := netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	addr := dst.String()
	typ, _ := unix.GetsockoptInt(int(sock.Fd()), unix.SOL_SOCKET, unix.SO_TYPE)
	proto, _ := unix.GetsockoptInt(int(sock.Fd()), unix.SOL_SOCKET, unix.SO_PROTOCOL)
	if typ != unix.SOCK_STREAM || proto != unix.IPPROTO_TCP {
		b.refuse(n, "connect", addr, unix.EACCES, "only plain TCP sockets may connect")
		return
	}
	how := "the proxy"
	if slices.Contains(b.pol.DNS, dst) {
		// The process's own copy of the address is never used: its socket goes to
		// the stub, in the family it was made with (an IPv6 socket reaches an IPv4
		// stub through the mapped address).
		errno := answer(n, connectRaw(sock.Fd(), encodeInet(family, b.pol.DNSStub)))
		b.event(Event{Pid: n.Pid, Call: "connect", Addr: addr, Allowed: true, Errno: errno, Reason: ReasonDNS})
		return
	}
	if !slices.Contains(b.pol.TCP, dst) {
		if !b.pol.LocalBinding || !dst.Addr().IsLoopback() {
			b.refuse(n, "connect", addr, unix.EACCES, "not the proxy")
			return
		}
		if why := b.ownTCP(dst); why != "" {
			b.refuse(n, "connect", addr, unix.EACCES, why)
			return
		}
		how = "a listener of the sandbox's own"
	}
	errno := answer(n, connectRaw(sock.Fd(), encodeInet(family, ap)))
	b.event(Event{Pid: n.Pid, Call: "connect", Addr: addr, Allowed: true, Errno: errno, Reason: how})
}

// ownTCP says why dst is not a listener the broker made listen for the sandbox, or "" if
// every listening socket that could take a connection to dst is one.
//
// A host process could bind the port in the moment between this check and the connect,
// if the sandbox's listener closed just before: a race the sandbox can't win alone.
func (b *Broker) ownTCP(dst netip.AddrPort) string {
	var all []listener
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		ls, err := tcpListeners(fam)
		if err != nil {
			return "can't list listening sockets: " + err.Error()
		}
		all = append(all, ls...)
	}
	matches := 0
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range all {
		if l.addr.Port() != dst.Port() {
			continue
		}
		if a := l.addr.Addr().Unmap(); a != dst.Addr() && !a.IsUnspecified() {
			continue
		}
		if !b.own[l.cookie] {
			return "not the proxy, and a host process listens there"
		}
		matches++
	}
	if matches == 0 {
		return "not the proxy, and nothing of the sandbox's listens there"
	}
	return ""
}

func (b *Broker) connectUnix(n *Notif, sock *os.File, raw []byte) {
	path := raw[2:]
	if len(path) > 0 && path[0] == 0 {
		b.refuse(n, "connect", "@"+string(path[1:]), unix.EACCES, "abstract unix sockets are not reachable without a network namespace")
		return
	}
	if i := slices.Index(path, 0); i >= 0 {
		path = path[:i]
	}
	name := string(path)
	if name == "" {
		n.Deny(unix.EINVAL)
		return
	}
	// Resolve the name as the kernel would for the process: from its working directory,
	// following symlinks; but not through /proc magic links, which would name the
	// broker's own descriptors.
	cwd, err := n.OpenProcDir("cwd")
	if errors.Is(err, errGone) {
		return
	}
	if err != nil {
		b.refuse(n, "connect", name, unix.EACCES, "can't find the process's working directory: "+err.Error())
		return
	}
	defer cwd.Close()
	fd, err := unix.Openat2(int(cwd.Fd()), name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			b.refuse(n, "connect", name, unix.EACCES, "the path goes through a /proc magic link")
			return
		}
		n.Deny(errnoOf(err))
		return
	}
	target := os.NewFile(uintptr(fd), name)
	defer target.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		n.Deny(errnoOf(err))
		return
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		n.Deny(unix.ECONNREFUSED) // what the kernel says for a file that isn't a socket
		return
	}
	via := target
	how := "an allowed socket"
	if allowed, ok := b.unix[fileID{st.Dev, st.Ino}]; ok {
		via = allowed
	} else {
		switch why := b.ownUnix(st.Dev, st.Ino); why {
		case "":
			how = "a listener of the sandbox's own"
		case errNoListener:
			n.Deny(unix.ECONNREFUSED)
			return
		default:
			b.refuse(n, "connect", name, unix.EACCES, why)
			return
		}
	}
	// The socket file is pinned by our descriptor: whatever is renamed or replaced
	// meanwhile, the connection goes to the socket bound to this inode, and a file's
	// binding can't change.
	sa := make([]byte, 2, 2+64)
	binary.NativeEndian.PutUint16(sa, unix.AF_UNIX)
	sa = append(sa, "/proc/self/fd/"+strconv.Itoa(int(via.Fd()))+"\x00"...)
	errno := answer(n, connectRaw(sock.Fd(), sa))
	b.event(Event{Pid: n.Pid, Call: "connect", Addr: name, Allowed: true, Errno: errno, Reason: how})
}

const errNoListener = "no listener"

// ownUnix says why the socket file (dev, ino) is not bound to a listener the broker made
// listen, errNoListener if nothing listens on it, or "" if it is the sandbox's own.
// sock_diag reports only the low 32 bits of an inode: every listener they match must be
// the sandbox's.
func (b *Broker) ownUnix(dev, ino uint64) string {
	ls, err := unixListeners()
	if err != nil {
		return "can't list listening sockets: " + err.Error()
	}
	matches := 0
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range ls {
		if l.dev != dev || l.ino32 != uint32(ino) {
			continue
		}
		if !b.own[l.cookie] {
			return "a host socket, not in the allowed list"
		}
		matches++
	}
	if matches == 0 {
		return errNoListener
	}
	return ""
}

func (b *Broker) listen(n *Notif) {
	fd, backlog := int(int32(n.Args[0])), int(int32(n.Args[1]))
	sock, err := n.GetFD(fd)
	if errors.Is(err, errGone) {
		return
	}
	if err != nil {
		n.Deny(errnoOf(err))
		return
	}
	defer sock.Close()
	sfd := int(sock.Fd())
	domain, err := unix.GetsockoptInt(sfd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		n.Deny(errnoOf(err))
		return
	}
	addr := "unix socket"
	if domain == unix.AF_INET || domain == unix.AF_INET6 {
		sa, err := unix.Getsockname(sfd)
		if err != nil {
			n.Deny(errnoOf(err))
			return
		}
		var ap netip.AddrPort
		switch sa := sa.(type) {
		case *unix.SockaddrInet4:
			ap = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
		case *unix.SockaddrInet6:
			ap = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(sa.Port))
		}
		addr = ap.String()
		switch {
		case ap.Port() == 0:
			b.refuse(n, "listen", addr, unix.EACCES, "an unbound socket would listen on every address; bind it to 127.0.0.1 first")
			return
		case !ap.Addr().IsLoopback():
			b.refuse(n, "listen", addr, unix.EACCES, "only loopback addresses may listen without a network namespace")
			return
		case !b.pol.LocalBinding:
			b.refuse(n, "listen", addr, unix.EACCES, "the policy doesn't allow local binding")
			return
		}
	}
	// Recorded before it listens, so a connect racing the listen is never refused for
	// lack of it; a socket that then fails to listen is the sandbox's all the same.
	cookie, err := unix.GetsockoptUint64(sfd, unix.SOL_SOCKET, unix.SO_COOKIE)
	if err != nil {
		n.Deny(errnoOf(err))
		return
	}
	b.mu.Lock()
	b.own[cookie] = true
	b.mu.Unlock()
	if err := unix.Listen(sfd, backlog); err != nil {
		n.Deny(errnoOf(err))
		return
	}
	n.Return(0)
	b.event(Event{Pid: n.Pid, Call: "listen", Addr: addr, Allowed: true})
}
