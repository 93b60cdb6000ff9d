package network_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

var nullLogger = log.New(io.Discard, "", 0)

// The test host's addresses, by role: the last byte within the process's /28.
const (
	addrAllowed  = 2 // allowed.moat-test; also the DNS server
	addrDenied   = 3 // denied.moat-test
	addrOther    = 4 // other.moat-test, which no rule names
	addrUnlisted = 5 // an IP literal no rule names
	addrListed   = 6 // an IP literal a rule allows
	addrLate     = 7 // late.moat-test: no one's at first; the host takes it during a run
)

// etherType marks the frames of the packet-socket tests (IEEE local experimental).
const etherType = 0x88b5

// testHost is a network namespace at the other end of a veth pair from the host.
type testHost struct {
	name       string   // its ip-netns name
	ns         *os.File // the namespace
	hostIf     string   // the host's end of the veth pair
	peerIf     string   // the test host's end
	hostIfIdx  int
	base       int // the /28 is 198.18.0.base/28
	dns        *dnsServer
	icmp       *evlog // ICMP echo requests that reached the test host
	packets    *evlog // frames of etherType that reached it
	resolvConf string // a resolv.conf naming the DNS server
}

var (
	thOnce sync.Once
	th     *testHost
	thErr  error
)

// needTestHost returns the test host, building it on first use; it skips the test
// when that can't be done here.
func needTestHost(t *testing.T) *testHost {
	t.Helper()
	if !isRoot() {
		t.Skip("needs root: builds a test host (a network namespace and a veth pair in the host's namespace) and runs moat in a mount namespace whose /etc/resolv.conf names the test host's DNS server")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip to build the test host")
	}
	thOnce.Do(func() { th, thErr = newTestHost() })
	if thErr != nil {
		t.Fatalf("build the test host: %v", thErr)
	}
	return th
}

func closeTestHost() {
	if th != nil {
		th.close()
	}
}

func (h *testHost) addr(role int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 18, 0, byte(h.base + role)})
}

func (h *testHost) ip(role int) string { return h.addr(role).String() }

// hostPort is role's address with port, as a URL or CONNECT wants it.
func (h *testHost) hostPort(role, port int) string {
	return net.JoinHostPort(h.ip(role), strconv.Itoa(port))
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// removeStale deletes test hosts left by test processes that are gone.
func removeStale() {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		pid, ok := strings.CutPrefix(e.Name(), "moatnt-")
		if !ok {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); err == nil {
			continue
		}
		ipCmd("link", "del", "mnt"+pid+"h")
		ipCmd("netns", "del", e.Name())
	}
}

func newTestHost() (h *testHost, err error) {
	// One test process at a time picks a /28 and configures it.
	lock, err := os.OpenFile("/run/moat-nettest.lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return nil, err
	}
	removeStale()
	inUse := map[netip.Addr]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			inUse[p.Addr()] = true
		}
	}
	pid := strconv.Itoa(os.Getpid())
	h = &testHost{name: "moatnt-" + pid, hostIf: "mnt" + pid + "h", peerIf: "mnt" + pid + "p", base: -1}
	for k := 0; k < 16; k++ {
		if !inUse[netip.AddrFrom4([4]byte{198, 18, 0, byte(16*k + 1)})] {
			h.base = 16 * k
			break
		}
	}
	if h.base < 0 {
		return nil, errors.New("every /28 of 198.18.0.0/24 is in use on this host")
	}
	defer func() {
		if err != nil {
			h.close()
		}
	}()
	host := h.addr(1).String() + "/28"
	for _, args := range [][]string{
		{"netns", "add", h.name},
		{"link", "add", h.hostIf, "type", "veth", "peer", "name", h.peerIf},
		{"link", "set", "dev", h.hostIf, "addrgenmode", "none"},
		{"link", "set", "dev", h.peerIf, "addrgenmode", "none"},
		{"link", "set", "dev", h.peerIf, "netns", h.name},
		{"addr", "add", host, "dev", h.hostIf},
		{"-6", "addr", "add", "fe80::1/64", "dev", h.hostIf, "nodad"},
		{"link", "set", "dev", h.hostIf, "up"},
		{"-n", h.name, "-6", "addr", "add", "fe80::2/64", "dev", h.peerIf, "nodad"},
		{"-n", h.name, "link", "set", "dev", h.peerIf, "up"},
		{"-n", h.name, "link", "set", "dev", "lo", "up"},
	} {
		if err := ipCmd(args...); err != nil {
			return h, err
		}
	}
	for _, role := range []int{addrAllowed, addrDenied, addrOther, addrUnlisted, addrListed} {
		if err := ipCmd("-n", h.name, "addr", "add", h.addr(role).String()+"/28", "dev", h.peerIf); err != nil {
			return h, err
		}
	}
	if h.ns, err = os.Open("/run/netns/" + h.name); err != nil {
		return h, err
	}
	ifi, err := net.InterfaceByName(h.hostIf)
	if err != nil {
		return h, err
	}
	h.hostIfIdx = ifi.Index

	h.dns = newDNSServer(map[string][4]byte{
		"allowed.moat-test": h.addr(addrAllowed).As4(),
		"denied.moat-test":  h.addr(addrDenied).As4(),
		"other.moat-test":   h.addr(addrOther).As4(),
		"loop.moat-test":    {127, 0, 0, 1},
		"late.moat-test":    h.addr(addrLate).As4(),
	})
	h.icmp, h.packets = newEvlog(), newEvlog()
	err = h.do(func() error {
		pc, err := net.ListenPacket("udp4", ":53")
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp4", ":53")
		if err != nil {
			pc.Close()
			return err
		}
		h.dns.serveUDP(pc)
		h.dns.serveTCP(ln)
		if err := h.listenICMP(); err != nil {
			return err
		}
		return h.listenPackets()
	})
	if err != nil {
		return h, err
	}
	h.resolvConf = filepath.Join(baseDir, "tools", "resolv-testhost.conf")
	if err := os.WriteFile(h.resolvConf, []byte("nameserver "+h.ip(addrAllowed)+"\noptions timeout:2 attempts:2\n"), 0o644); err != nil {
		return h, err
	}
	return h, nil
}

func (h *testHost) close() {
	ipCmd("link", "del", h.hostIf) // takes the peer with it
	if h.ns != nil {
		h.ns.Close()
	}
	ipCmd("netns", "del", h.name)
}

// do runs f on a thread inside the test host's network namespace: sockets f
// creates stay there.
func (h *testHost) do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(h.ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- os.NewSyscallError("setns", err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked and dies with this goroutine.
			errc <- fmt.Errorf("setns back to the host: %w", err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// tcp starts a logging TCP server on every address of the test host (IPv4 and
// IPv6), on a fresh port.
func (h *testHost) tcp(t *testing.T) *tcpServer {
	t.Helper()
	var ln net.Listener
	if err := h.do(func() (err error) { ln, err = net.Listen("tcp", ":0"); return }); err != nil {
		t.Fatal(err)
	}
	return serveTCP(t, ln, h.hostPort(addrAllowed, ln.Addr().(*net.TCPAddr).Port))
}

// udp starts a logging UDP server on every IPv4 address of the test host.
func (h *testHost) udp(t *testing.T) *udpServer {
	t.Helper()
	var pc net.PacketConn
	if err := h.do(func() (err error) { pc, err = net.ListenPacket("udp4", ":0"); return }); err != nil {
		t.Fatal(err)
	}
	return serveUDP(t, pc, h.hostPort(addrAllowed, pc.LocalAddr().(*net.UDPAddr).Port))
}

// web starts an HTTP and an HTTPS server on every address of the test host.
func (h *testHost) web(t *testing.T) *webServer {
	t.Helper()
	var l1, l2 net.Listener
	err := h.do(func() (err error) {
		if l1, err = net.Listen("tcp", ":0"); err != nil {
			return err
		}
		l2, err = net.Listen("tcp", ":0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return serveWeb(t, l1, l2, h.hostPort(addrAllowed, l1.Addr().(*net.TCPAddr).Port), h.hostPort(addrAllowed, l2.Addr().(*net.TCPAddr).Port))
}

// listenICMP logs the ICMP echo requests that reach the test host (the kernel
// answers them; a raw socket sees a copy).
func (h *testHost) listenICMP() error {
	c, err := icmp.ListenPacket("ip4:icmp", "0.0.0.0")
	if err != nil {
		return err
	}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			m, err := icmp.ParseMessage(1, buf[:n])
			if err != nil || m.Type != ipv4.ICMPTypeEcho {
				continue
			}
			data := ""
			if e, ok := m.Body.(*icmp.Echo); ok {
				data = string(e.Data)
			}
			if strings.Contains(data, sentinel) {
				h.icmp.sawSentinel(data)
				continue
			}
			h.icmp.add(hit{Kind: "icmp", Remote: from.String(), Path: data})
		}
	}()
	return nil
}

// settleICMP pings the test host from the host with a sentinel payload.
func (h *testHost) settleICMP(t *testing.T) {
	t.Helper()
	c, err := icmp.ListenPacket("ip4:icmp", "0.0.0.0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	settleDatagram(t, h.icmp, "icmp", func(id string) error {
		m := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: os.Getpid() & 0xffff, Seq: 1, Data: []byte(id)}}
		b, err := m.Marshal(nil)
		if err != nil {
			return err
		}
		_, err = c.WriteTo(b, &net.IPAddr{IP: h.addr(addrAllowed).AsSlice()})
		return err
	})
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// listenPackets logs the frames of etherType that reach the test host's end of
// the veth pair.
func (h *testHost) listenPackets() error {
	ifi, err := net.InterfaceByName(h.peerIf)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(htons(etherType)))
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(etherType), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return os.NewSyscallError("bind", err)
	}
	f := os.NewFile(uintptr(fd), "packet socket")
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			if n < 14 {
				continue
			}
			data := string(buf[14:n])
			if strings.Contains(data, sentinel) {
				h.packets.sawSentinel(data)
				continue
			}
			h.packets.add(hit{Kind: "packet", Path: data})
		}
	}()
	return nil
}

// settlePackets sends a sentinel frame from the host's end of the veth pair.
func (h *testHost) settlePackets(t *testing.T) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(etherType)))
	if err != nil {
		t.Fatal(os.NewSyscallError("socket", err))
	}
	defer unix.Close(fd)
	bcast := [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	settleDatagram(t, h.packets, "packets", func(id string) error {
		frame := make([]byte, 14, 14+len(id))
		copy(frame, bcast[:6])
		binary.BigEndian.PutUint16(frame[12:], etherType)
		frame = append(frame, id...)
		return unix.Sendto(fd, frame, 0, &unix.SockaddrLinklayer{Ifindex: h.hostIfIdx, Halen: 6, Addr: bcast})
	})
}

// tlsKit is the test servers' certificate, self-signed for the test names.
type tlsKit struct {
	cert   tls.Certificate
	caFile string // its PEM, readable inside the sandbox
}

var (
	certOnce sync.Once
	certKit  *tlsKit
)

func testCert() *tlsKit {
	certOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()),
			Subject:      pkix.Name{CommonName: "moat network tests"},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			IsCA:         true, BasicConstraintsValid: true,
			// Both the allowed and the denied name: a fronted handshake would succeed.
			DNSNames: []string{"allowed.moat-test", "*.allowed.moat-test", "denied.moat-test", "*.denied.moat-test", "other.moat-test", "*.other.moat-test"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			panic(err)
		}
		pemData := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		caFile := filepath.Join(baseDir, "tools", "ca.pem")
		if err := os.WriteFile(caFile, pemData, 0o644); err != nil {
			panic(err)
		}
		certKit = &tlsKit{cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caFile: caFile}
	})
	return certKit
}

func testHostResolvConf(t *testing.T) string {
	t.Helper()
	return needTestHost(t).resolvConf
}
