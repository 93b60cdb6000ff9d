package connbroker_test

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linux/connbroker"
	"github.com/moat-sandbox/moat/internal/linux/seccomp"
	"github.com/moat-sandbox/moat/internal/testmoat"
)

// The tests re-execute the test binary as the sandboxed process ("helper"). It installs
// moat's deny filter and the network filter, hands the listener to the test (which plays
// the supervisor and runs the broker), then attacks: each probe prints what the kernel
// answered. The verdict comes from the test's own listeners: what they accepted and read.

const helperEnv = "MOAT_CONNBROKER_HELPER" // "filtered" or "control"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

func helper(mode string) int {
	if mode == "filtered" {
		prog, err := seccomp.Program(runtime.GOARCH)
		if err == nil {
			err = seccomp.Install(prog)
		}
		var l *os.File
		if err == nil {
			prog, err = seccomp.NetProgram(runtime.GOARCH)
		}
		if err == nil {
			l, err = seccomp.InstallListener(prog)
		}
		if err == nil {
			err = connbroker.SendListener(os.NewFile(3, "conn"), l)
			l.Close()
		}
		if err != nil {
			fmt.Println("setup\t" + err.Error())
			return 1
		}
	}
	for _, name := range strings.Split(os.Getenv("PROBES"), ",") {
		p, ok := probes[name]
		if !ok {
			fmt.Printf("%s\tunknown probe\n", name)
			continue
		}
		fmt.Printf("%s\t%s\n", name, p())
	}
	return 0
}

func env(name string) string { return os.Getenv(name) }

func sockaddr(s string) unix.Sockaddr {
	ap := netip.MustParseAddrPort(s)
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
}

func result(err error) string {
	if err == nil {
		return "OK"
	}
	if e, ok := err.(unix.Errno); ok {
		return unix.ErrnoName(e)
	}
	return err.Error()
}

// dial makes a socket of (family, typ, proto), connects it to addr and sends a greeting.
func dial(family, typ, proto int, addr unix.Sockaddr, greet string) string {
	fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return "socket " + result(err)
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, addr); err != nil {
		return result(err)
	}
	_, err = unix.Write(fd, []byte(greet+"\n"))
	return result(err)
}

func mapped(s string) unix.Sockaddr {
	ap := netip.MustParseAddrPort(s)
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: netip.AddrFrom16(ap.Addr().As16()).As16()}
}

func v4mapped(s string) unix.Sockaddr {
	ap := netip.MustParseAddrPort(s)
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: netip.AddrFrom16(ap.Addr().As16()).As16()}
}

var probes = map[string]func() string{
	"tcp allowed": func() string {
		return dial(unix.AF_INET, unix.SOCK_STREAM, 0, sockaddr(env("ALLOWED")), "hello allowed")
	},
	"tcp allowed as v4-mapped IPv6": func() string {
		return dial(unix.AF_INET6, unix.SOCK_STREAM, 0, mapped("[::ffff:"+strings.Split(env("ALLOWED"), ":")[0]+"]:"+strings.Split(env("ALLOWED"), ":")[1]), "hello mapped")
	},
	"tcp allowed nonblocking": func() string {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket " + result(err)
		}
		defer unix.Close(fd)
		err = unix.Connect(fd, sockaddr(env("ALLOWED")))
		first := result(err)
		if err == unix.EINPROGRESS {
			p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			unix.Poll(p, 5000)
			if e, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); e != 0 {
				return first + " then " + result(unix.Errno(e))
			}
		} else if err != nil {
			return first
		}
		_, err = unix.Write(fd, []byte("hello nonblocking\n"))
		return first + " then " + result(err)
	},
	"tcp to the nameserver": func() string {
		return dial(unix.AF_INET, unix.SOCK_STREAM, 0, sockaddr(env("NAMESERVER")), "hello dns")
	},
	"tcp to the nameserver from an IPv6 socket": func() string {
		f := strings.Split(env("NAMESERVER"), ":")
		return dial(unix.AF_INET6, unix.SOCK_STREAM, 0, v4mapped("[::ffff:"+f[0]+"]:"+f[1]), "hello dns6")
	},
	"tcp forbidden": func() string {
		return dial(unix.AF_INET, unix.SOCK_STREAM, 0, sockaddr(env("FORBIDDEN")), "leak tcp")
	},
	"tcp forbidden IPPROTO_TCP": func() string {
		return dial(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP, sockaddr(env("FORBIDDEN")), "leak tcp proto")
	},
	"tcp forbidden as v4-mapped IPv6": func() string {
		f := strings.Split(env("FORBIDDEN"), ":")
		return dial(unix.AF_INET6, unix.SOCK_STREAM, 0, v4mapped("[::ffff:"+f[0]+"]:"+f[1]), "leak mapped")
	},
	"tcp6 forbidden": func() string {
		return dial(unix.AF_INET6, unix.SOCK_STREAM, 0, sockaddr(env("FORBIDDEN6")), "leak tcp6")
	},
	"mptcp forbidden": func() string {
		return dial(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP, sockaddr(env("FORBIDDEN")), "leak mptcp")
	},
	"udp forbidden": func() string {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket " + result(err)
		}
		defer unix.Close(fd)
		return result(unix.Sendto(fd, []byte("leak udp\n"), 0, sockaddr(env("UDP"))))
	},
	"icmp datagram": func() string {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
		if err == nil {
			unix.Close(fd)
		}
		return "socket " + result(err)
	},
	"sctp": func() string {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_SCTP)
		if err == nil {
			unix.Close(fd)
		}
		return "socket " + result(err)
	},
	"tcp fast open sendto forbidden": func() string {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket " + result(err)
		}
		defer unix.Close(fd)
		err = unix.Sendto(fd, []byte("leak fastopen\n"), unix.MSG_FASTOPEN, sockaddr(env("FORBIDDEN")))
		time.Sleep(50 * time.Millisecond) // let the handshake finish before close
		return result(err)
	},
	"tcp fast open sendmsg forbidden": func() string {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket " + result(err)
		}
		defer unix.Close(fd)
		_, err = unix.SendmsgN(fd, []byte("leak fastopen msg\n"), nil, sockaddr(env("FORBIDDEN")), unix.MSG_FASTOPEN)
		time.Sleep(50 * time.Millisecond)
		return result(err)
	},
	"TCP_FASTOPEN_CONNECT": func() string {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket " + result(err)
		}
		defer unix.Close(fd)
		return result(unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_FASTOPEN_CONNECT, 1))
	},
	"listen on every address": func() string {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket " + result(err)
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrInet4{}); err != nil {
			return "bind " + result(err)
		}
		return result(unix.Listen(fd, 8))
	},
	"listen unbound": func() string {
		fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket " + result(err)
		}
		defer unix.Close(fd)
		return result(unix.Listen(fd, 8))
	},
	"listen on loopback and connect to it": func() string {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket " + result(err)
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			return "bind " + result(err)
		}
		if err := unix.Listen(fd, 8); err != nil {
			return "listen " + result(err)
		}
		sa, _ := unix.Getsockname(fd)
		return dial(unix.AF_INET, unix.SOCK_STREAM, 0, sa, "self")
	},
	"unix host socket": func() string {
		return dial(unix.AF_UNIX, unix.SOCK_STREAM, 0, &unix.SockaddrUnix{Name: env("UNIX_HOST")}, "leak unix")
	},
	"unix host socket via symlink": func() string {
		return dial(unix.AF_UNIX, unix.SOCK_STREAM, 0, &unix.SockaddrUnix{Name: env("UNIX_HOST_LINK")}, "leak unix link")
	},
	"unix allowed": func() string {
		return dial(unix.AF_UNIX, unix.SOCK_STREAM, 0, &unix.SockaddrUnix{Name: env("UNIX_ALLOWED")}, "hello unix")
	},
	"unix allowed relative": func() string {
		return dial(unix.AF_UNIX, unix.SOCK_STREAM, 0, &unix.SockaddrUnix{Name: filepath.Base(env("UNIX_ALLOWED"))}, "hello unix relative")
	},
	"unix allowed via symlink": func() string {
		return dial(unix.AF_UNIX, unix.SOCK_STREAM, 0, &unix.SockaddrUnix{Name: env("UNIX_ALLOWED_LINK")}, "hello unix link")
	},
	"unix own listener": func() string {
		path := filepath.Join(env("OWN_DIR"), fmt.Sprintf("own-%d.sock", os.Getpid()))
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket " + result(err)
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
			return "bind " + result(err)
		}
		if err := unix.Listen(fd, 8); err != nil {
			return "listen " + result(err)
		}
		return dial(unix.AF_UNIX, unix.SOCK_STREAM, 0, &unix.SockaddrUnix{Name: path}, "self")
	},
	"unix abstract": func() string {
		return dial(unix.AF_UNIX, unix.SOCK_STREAM, 0, &unix.SockaddrUnix{Name: "@" + env("ABSTRACT")}, "leak abstract")
	},
	"unix datagram": func() string {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket " + result(err)
		}
		defer unix.Close(fd)
		return result(unix.Sendto(fd, []byte("leak dgram\n"), 0, &unix.SockaddrUnix{Name: env("UNIX_DGRAM")}))
	},
	"unix datagram pair": func() string {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socketpair " + result(err)
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		return result(unix.Sendto(fds[0], []byte("leak dgram pair\n"), 0, &unix.SockaddrUnix{Name: env("UNIX_DGRAM")}))
	},
	"connect race": raceProbe,
}

// world is the test's listeners, standing for the proxy and for everything else.
type world struct {
	allowed, forbidden, forbidden6, udp, unixHost, unixAllowed, unixDgram *testmoat.Listener
	nameserver, stub                                                      *testmoat.Listener // DNS over TCP: the resolver's, and moat's stub
	env                                                                   []string
	dir                                                                   string
	abstract                                                              *testmoat.Listener
}

func newWorld(t *testing.T) *world {
	t.Helper()
	// The helper, running as another user in the CI's second pass, must reach the files.
	dir, err := os.MkdirTemp("", "moat-connbroker-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	w := &world{dir: dir}
	w.allowed = testmoat.Serve(t, "tcp4", "127.0.0.1:0")
	w.forbidden = testmoat.Serve(t, "tcp4", "127.0.0.1:0")
	w.nameserver = testmoat.Serve(t, "tcp4", "127.0.0.1:0")
	w.stub = testmoat.Serve(t, "tcp4", "127.0.0.1:0")
	w.forbidden6 = &testmoat.Listener{}
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		ln.Close()
		w.forbidden6 = testmoat.Serve(t, "tcp6", "[::1]:0")
	}
	w.udp = testmoat.ServeUDP(t, "udp4", "127.0.0.1:0")
	w.unixHost = testmoat.Serve(t, "unix", filepath.Join(dir, "host.sock"))
	os.Mkdir(filepath.Join(dir, "links"), 0o755)
	os.Symlink(filepath.Join(dir, "host.sock"), filepath.Join(dir, "links", "host-link.sock"))
	w.unixAllowed = testmoat.Serve(t, "unix", filepath.Join(dir, "allowed.sock"))
	os.Symlink(filepath.Join(dir, "allowed.sock"), filepath.Join(dir, "links", "allowed-link.sock"))
	w.unixDgram = testmoat.ServeUDP(t, "unixgram", filepath.Join(dir, "dgram.sock"))
	own := filepath.Join(dir, "own")
	os.Mkdir(own, 0o777)
	os.Chmod(own, 0o777)
	abstract := fmt.Sprintf("moat-connbroker-test-%d-%d", os.Getpid(), worlds.Add(1))
	w.abstract = testmoat.Serve(t, "unix", "@"+abstract)
	os.Chmod(dir, 0o777) // the helper binds in own/, and the sockets must be connectable
	for _, f := range []string{"host.sock", "allowed.sock", "dgram.sock"} {
		os.Chmod(filepath.Join(dir, f), 0o777)
	}
	w.env = []string{
		"ALLOWED=" + w.allowed.Addr(), "FORBIDDEN=" + w.forbidden.Addr(), "FORBIDDEN6=" + w.forbidden6.Addr(),
		"UDP=" + w.udp.Addr(), "UNIX_HOST=" + filepath.Join(dir, "host.sock"), "UNIX_HOST_LINK=" + filepath.Join(dir, "links", "host-link.sock"),
		"UNIX_ALLOWED=" + filepath.Join(dir, "allowed.sock"), "UNIX_ALLOWED_LINK=" + filepath.Join(dir, "links", "allowed-link.sock"),
		"UNIX_DGRAM=" + filepath.Join(dir, "dgram.sock"), "OWN_DIR=" + own, "ABSTRACT=" + abstract,
		"NAMESERVER=" + w.nameserver.Addr(),
	}
	return w
}

func (w *world) policy(t *testing.T, localBinding bool) connbroker.Policy {
	return connbroker.Policy{
		TCP:          []netip.AddrPort{netip.MustParseAddrPort(w.allowed.Addr())},
		Unix:         []string{filepath.Join(w.dir, "allowed.sock")},
		LocalBinding: localBinding,
		DNS:          []netip.AddrPort{netip.MustParseAddrPort(w.nameserver.Addr())},
		DNSStub:      netip.MustParseAddrPort(w.stub.Addr()),
	}
}

// runHelper runs the helper with the given probes; handle, if not nil, serves the
// listener the filtered helper sends. It returns the probes' answers.
func runHelper(t *testing.T, w *world, mode string, probeNames []string, handle func(*connbroker.Notif)) map[string]string {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
	defer ours.Close()
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(append(os.Environ(), w.env...), helperEnv+"="+mode, "PROBES="+strings.Join(probeNames, ","))
	cmd.Dir = w.dir
	cmd.ExtraFiles = []*os.File{theirs}
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	served := make(chan error, 1)
	if mode == "filtered" {
		l, err := connbroker.ReceiveListener(ours)
		if err != nil {
			cmd.Wait()
			t.Fatalf("%v; helper said: %s", err, out.String())
		}
		defer l.Close()
		go func() { served <- l.Serve(handle) }()
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out.String())
	}
	if mode == "filtered" {
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve didn't return after the last sandboxed process ended")
		}
	}
	res := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok {
			res[k] = v
		}
	}
	return res
}

func brokerHandler(t *testing.T, b *connbroker.Broker) func(*connbroker.Notif) {
	return func(n *connbroker.Notif) {
		if !b.Handle(n) {
			t.Errorf("notification for syscall %d, which the network filter doesn't send", n.Nr)
			n.Deny(unix.ENOSYS)
		}
	}
}

func skipUnlessNotify(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
	if err != nil || !strings.Contains(string(b), "user_notif") {
		t.Skip("seccomp user notification not available on this kernel")
	}
}

// expect is one probe's required answers, with and without the broker.
type expect struct {
	probe    string
	filtered string // the answer under the filter and broker
	control  string // without any filter ("" = not checked)
}

var expects = []expect{
	{"tcp allowed", "OK", "OK"},
	{"tcp allowed as v4-mapped IPv6", "OK", "OK"},
	{"tcp allowed nonblocking", "EINPROGRESS then OK", "EINPROGRESS then OK"},
	{"tcp to the nameserver", "OK", "OK"},
	{"tcp to the nameserver from an IPv6 socket", "OK", "OK"},
	{"tcp forbidden", "EACCES", "OK"},
	{"tcp forbidden IPPROTO_TCP", "EACCES", "OK"},
	{"tcp forbidden as v4-mapped IPv6", "EACCES", "OK"},
	{"tcp6 forbidden", "EACCES", ""},
	{"mptcp forbidden", "socket EACCES", ""},
	{"udp forbidden", "socket EACCES", "OK"},
	{"icmp datagram", "socket EACCES", ""},
	{"sctp", "socket EACCES", ""},
	{"tcp fast open sendto forbidden", "EACCES", ""},
	{"tcp fast open sendmsg forbidden", "EACCES", ""},
	{"TCP_FASTOPEN_CONNECT", "EACCES", "OK"},
	{"listen on every address", "EACCES", "OK"},
	{"listen unbound", "EACCES", "OK"},
	{"listen on loopback and connect to it", "OK", "OK"},
	{"unix host socket", "EACCES", "OK"},
	{"unix host socket via symlink", "EACCES", "OK"},
	{"unix allowed", "OK", "OK"},
	{"unix allowed relative", "OK", "OK"},
	{"unix allowed via symlink", "OK", "OK"},
	{"unix own listener", "OK", "OK"},
	{"unix abstract", "EACCES", "OK"},
	{"unix datagram", "socket EACCES", "OK"},
	{"unix datagram pair", "socketpair EACCES", "OK"},
}

func probeNames() []string {
	var out []string
	for _, e := range expects {
		out = append(out, e.probe)
	}
	return out
}

// leaks lists what the listeners that stand for "everything but the proxy" got.
func (w *world) leaks() map[string][]string {
	out := map[string][]string{}
	for name, l := range map[string]*testmoat.Listener{"tcp": w.forbidden, "tcp6": w.forbidden6, "udp": w.udp, "unix host": w.unixHost, "unix datagram": w.unixDgram, "abstract": w.abstract, "nameserver": w.nameserver} {
		if n, got := l.Snapshot(); n > 0 {
			out[name] = got
		}
	}
	return out
}

func TestBroker(t *testing.T) {
	skipUnlessNotify(t)
	w := newWorld(t)
	b, err := connbroker.New(w.policy(t, true))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var events []string
	var mu sync.Mutex
	b.OnEvent = func(e connbroker.Event) {
		mu.Lock()
		events = append(events, e.String())
		mu.Unlock()
	}
	got := runHelper(t, w, "filtered", probeNames(), brokerHandler(t, b))
	for _, e := range expects {
		if got[e.probe] != e.filtered {
			t.Errorf("%s: got %q, want %q", e.probe, got[e.probe], e.filtered)
		}
	}
	if t.Failed() {
		mu.Lock()
		t.Logf("events: %q", events)
		mu.Unlock()
	}
	if got["setup"] != "" {
		t.Fatalf("helper setup: %s", got["setup"])
	}
	time.Sleep(100 * time.Millisecond) // let the listeners read what was sent
	if leaks := w.leaks(); len(leaks) > 0 {
		t.Errorf("reached past the broker: %v", leaks)
	}
	_, greetings := w.allowed.Snapshot()
	for _, want := range []string{"hello allowed", "hello mapped", "hello nonblocking"} {
		if !contains(greetings, want) {
			t.Errorf("the proxy stand-in didn't get %q; it got %q", want, greetings)
		}
	}
	// What went to the nameserver went to the stub instead.
	_, dnsGreetings := w.stub.Snapshot()
	for _, want := range []string{"hello dns", "hello dns6"} {
		if !contains(dnsGreetings, want) {
			t.Errorf("the DNS stub stand-in didn't get %q; it got %q", want, dnsGreetings)
		}
	}
	_, unixGreetings := w.unixAllowed.Snapshot()
	for _, want := range []string{"hello unix", "hello unix relative", "hello unix link"} {
		if !contains(unixGreetings, want) {
			t.Errorf("the allowed unix socket didn't get %q; it got %q", want, unixGreetings)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"blocked connect to " + w.forbidden.Addr(), "blocked listen to 0.0.0.0:", "blocked connect to @moat-connbroker-test-"} {
		if !containsPrefix(events, want) {
			t.Errorf("no event %q...; events: %q", want, events)
		}
	}
}

// TestBrokerNoLocalBinding: without local binding, no TCP socket may listen, so none of
// the sandbox's is reachable; unix listeners still work.
func TestBrokerNoLocalBinding(t *testing.T) {
	skipUnlessNotify(t)
	w := newWorld(t)
	b, err := connbroker.New(w.policy(t, false))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got := runHelper(t, w, "filtered", []string{"listen on loopback and connect to it", "unix own listener", "tcp allowed"}, brokerHandler(t, b))
	for probe, want := range map[string]string{"listen on loopback and connect to it": "listen EACCES", "unix own listener": "OK", "tcp allowed": "OK"} {
		if got[probe] != want {
			t.Errorf("%s: got %q, want %q", probe, got[probe], want)
		}
	}
}

// TestControl runs the probes without any filter: each attack must reach its listener, or
// the filtered run shows nothing.
func TestControl(t *testing.T) {
	w := newWorld(t)
	got := runHelper(t, w, "control", probeNames(), nil)
	for _, e := range expects {
		if e.control != "" && got[e.probe] != e.control {
			t.Errorf("%s: got %q without a filter, want %q", e.probe, got[e.probe], e.control)
		}
	}
	time.Sleep(100 * time.Millisecond)
	leaks := w.leaks()
	for _, want := range []string{"tcp", "udp", "unix host", "unix datagram", "abstract"} {
		if len(leaks[want]) == 0 {
			t.Errorf("without a filter nothing reached the %s listener: the filtered run can't tell", want)
		}
	}
	for _, want := range []string{"leak mptcp", "leak fastopen", "leak fastopen msg", "leak tcp"} {
		if !contains(leaks["tcp"], want) {
			t.Logf("without a filter the forbidden listener didn't get %q (got %q)", want, leaks["tcp"])
		}
	}
	if !contains(leaks["tcp"], "leak mptcp") {
		if b, _ := os.ReadFile("/proc/sys/net/mptcp/enabled"); strings.TrimSpace(string(b)) == "1" {
			t.Error("MPTCP is enabled but an unfiltered MPTCP connect didn't reach the listener")
		}
	}
}

// TestRace rewrites the address from another thread while connect runs, thousands of times.
// The broker connects to its own copy, so the forbidden listener gets nothing. A naive
// supervisor that checks the address and lets the kernel continue (reading the memory
// again) is run too, to show the race is real.
func TestRace(t *testing.T) {
	skipUnlessNotify(t)
	if runtime.NumCPU() < 2 {
		t.Skip("the race needs two CPUs to run the rewriter beside connect")
	}
	w := newWorld(t)
	b, err := connbroker.New(w.policy(t, false))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got := runHelper(t, w, "filtered", []string{"connect race"}, brokerHandler(t, b))
	time.Sleep(100 * time.Millisecond)
	n, _ := w.forbidden.Snapshot()
	ok, _ := w.allowed.Snapshot()
	t.Logf("broker: %s; forbidden listener accepted %d, allowed %d", got["connect race"], n, ok)
	if n > 0 {
		t.Errorf("the forbidden listener accepted %d connections during the race", n)
	}
	if ok == 0 {
		t.Error("no connection reached the allowed listener: the race didn't run")
	}

	// The naive supervisor, for contrast: check, then SECCOMP_USER_NOTIF_FLAG_CONTINUE.
	w2 := newWorld(t)
	allowed := netip.MustParseAddrPort(w2.allowed.Addr())
	naive := func(n *connbroker.Notif) {
		if n.Nr != unix.SYS_CONNECT {
			n.Continue()
			return
		}
		raw, err := n.ReadMem(n.Args[1], int(n.Args[2]))
		if err != nil || len(raw) < 8 {
			n.Deny(unix.EACCES)
			return
		}
		port := uint16(raw[2])<<8 | uint16(raw[3])
		if port == allowed.Port() {
			n.Continue()
		} else {
			n.Deny(unix.EACCES)
		}
	}
	leaked := 0
	for range 3 {
		got := runHelper(t, w2, "filtered", []string{"connect race"}, naive)
		time.Sleep(100 * time.Millisecond)
		leaked, _ = w2.forbidden.Snapshot()
		t.Logf("naive supervisor: %s; forbidden listener accepted %d", got["connect race"], leaked)
		if leaked > 0 {
			break
		}
	}
	if leaked == 0 {
		t.Error("the naive supervisor was never beaten: the race test has no power on this machine")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsPrefix(list []string, p string) bool {
	for _, x := range list {
		if strings.HasPrefix(x, p) {
			return true
		}
	}
	return false
}

var worlds atomic.Int32
