package network_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linux/nsinit"
)

// This test binary runs in other roles too (MOAT_NETTEST_ROLE):
//
//	wrap       outside the sandbox: set up the namespace moat's supervisor runs in
//	           (see wrapped), then exec moat
//	goclient   inside the sandbox: a Go net/http client that honours the proxy variables
//	benchserver  the servers of scripts/bench-net.sh, in the netns it is started in
//	benchrelay   scripts/bench-net.sh's bare TCP relay: the floor for any proxy's cost

func runRole(role string, args []string) int {
	var err error
	switch role {
	case "wrap":
		err = wrapRole(args)
	case "goclient":
		err = goClient(args)
	case "benchserver":
		err = benchServer(args)
	case "benchrelay":
		err = benchRelay(args)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	fmt.Fprintf(os.Stderr, "nettest %s: %v\n", role, err)
	return 1
}

// wrapped returns the command that runs "moat ARGS" through the wrap role: in a
// new mount namespace where resolvConf is bind-mounted on /etc/resolv.conf (as
// root), or with userNS also in a new user namespace mapping only the caller's
// uid and gid and a new network namespace whose 127.0.0.1:53 the test serves (any
// user). moat's supervisor then resolves names through a server the test watches.
func wrapped(ctx context.Context, b *box, resolvConf string, userNS bool, args []string) *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		b.t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, self, append([]string{moatBin}, args...)...)
	cmd.Env = []string{roleEnv + "=wrap", "MOAT_NETTEST_RESOLV=" + resolvConf}
	if !userNS {
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
		return cmd
	}
	cmd.Env = append(cmd.Env, "MOAT_NETTEST_DNSFD=3")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		// The helper needs these in its new namespaces; it drops them before moat.
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_NET_BIND_SERVICE},
	}
	return cmd
}

// helperConn is the test's end of the socket over which the wrap role hands over
// its DNS sockets.
type helperConn struct {
	t     *testing.T
	c     *net.UnixConn
	child *os.File
	socks []io.Closer
}

func withHelperSocket(t *testing.T, cmd *exec.Cmd) *helperConn {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(os.NewSyscallError("socketpair", err))
	}
	parent := os.NewFile(uintptr(fds[0]), "helper socket")
	fc, err := net.FileConn(parent)
	parent.Close()
	if err != nil {
		t.Fatal(err)
	}
	h := &helperConn{t: t, c: fc.(*net.UnixConn), child: os.NewFile(uintptr(fds[1]), "helper socket (child)")}
	cmd.ExtraFiles = []*os.File{h.child}
	t.Cleanup(h.close)
	return h
}

// serveDNS takes the helper's DNS sockets, serves d on them and lets it go on.
func (h *helperConn) serveDNS(d *dnsServer) error {
	h.child.Close()
	h.c.SetDeadline(time.Now().Add(runTimeout))
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(2*4))
	_, oobn, _, _, err := h.c.ReadMsgUnix(buf, oob)
	if err != nil {
		return fmt.Errorf("receive the DNS sockets: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return fmt.Errorf("receive the DNS sockets: %d control messages, %v", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 2 {
		return fmt.Errorf("receive the DNS sockets: %d descriptors, %v", len(fds), err)
	}
	uf, tf := os.NewFile(uintptr(fds[0]), "dns udp"), os.NewFile(uintptr(fds[1]), "dns tcp")
	defer uf.Close()
	defer tf.Close()
	pc, err := net.FilePacketConn(uf)
	if err != nil {
		return err
	}
	ln, err := net.FileListener(tf)
	if err != nil {
		pc.Close()
		return err
	}
	h.socks = append(h.socks, pc, ln)
	d.serveUDP(pc)
	d.serveTCP(ln)
	_, err = h.c.Write([]byte{1})
	return err
}

func (h *helperConn) close() {
	h.child.Close()
	h.c.Close()
	for _, s := range h.socks {
		s.Close()
	}
}

// wrapRole: args are moat's argv. See wrapped.
func wrapRole(args []string) error {
	runtime.LockOSThread() // prctl and execve below act on this thread
	if len(args) == 0 {
		return errors.New("no command")
	}
	if os.Getenv("MOAT_NETTEST_DNSFD") != "" {
		if err := handOverDNS(os.NewFile(3, "helper socket")); err != nil {
			return err
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return os.NewSyscallError("mount / private", err)
	}
	if err := unix.Mount(os.Getenv("MOAT_NETTEST_RESOLV"), "/etc/resolv.conf", "", unix.MS_BIND, ""); err != nil {
		return os.NewSyscallError("bind-mount /etc/resolv.conf", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl clear ambient caps", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MOAT_NETTEST_") {
			env = append(env, kv)
		}
	}
	return syscall.Exec(args[0], args, env)
}

// handOverDNS brings up the new network namespace's loopback, opens UDP and TCP
// 127.0.0.1:53 there and sends them to the test, then waits for its go-ahead.
func handOverDNS(sock *os.File) error {
	defer sock.Close()
	if err := nsinit.LoopbackUp(); err != nil {
		return err
	}
	pc, err := net.ListenPacket("udp4", "127.0.0.1:53")
	if err != nil {
		return err
	}
	defer pc.Close()
	ln, err := net.Listen("tcp4", "127.0.0.1:53")
	if err != nil {
		return err
	}
	defer ln.Close()
	uf, err := pc.(*net.UDPConn).File()
	if err != nil {
		return err
	}
	defer uf.Close()
	tf, err := ln.(*net.TCPListener).File()
	if err != nil {
		return err
	}
	defer tf.Close()
	rights := unix.UnixRights(int(uf.Fd()), int(tf.Fd()))
	if err := unix.Sendmsg(int(sock.Fd()), []byte{0}, rights, nil, 0); err != nil {
		return os.NewSyscallError("sendmsg", err)
	}
	var ack [1]byte
	if _, err := sock.Read(ack[:]); err != nil {
		return fmt.Errorf("wait for the test: %w", err)
	}
	return nil
}

// goClient is a Go net/http client run inside the sandbox. Its output is for the
// test's log; the verdict is the servers'.
//
//	get URL CAFILE        one GET; prints the status
//	load URL N CAFILE     N GETs of URL/I at once; prints how many got 200
func goClient(args []string) error {
	if len(args) < 3 {
		return errors.New("usage: get URL CAFILE | load URL N CAFILE")
	}
	caFile := args[len(args)-1]
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: -1}
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	switch args[0] {
	case "get":
		resp, err := client.Get(args[1])
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d %s", resp.StatusCode, body)
		if resp.StatusCode != 200 {
			os.Exit(1)
		}
		os.Exit(0)
	case "load":
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, fails := 0, map[string]int{}
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.Get(fmt.Sprintf("%s/%d", args[1], i))
				what := ""
				if err != nil {
					what = err.Error()
				} else {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					what = resp.Status
				}
				mu.Lock()
				defer mu.Unlock()
				if err == nil && resp.StatusCode == 200 {
					ok++
				} else {
					fails[what]++
				}
			}()
		}
		wg.Wait()
		fmt.Printf("ok %d of %d; failures: %v\n", ok, n, fails)
		if ok != n {
			os.Exit(1)
		}
		os.Exit(0)
	}
	return fmt.Errorf("unknown goclient command %q", args[0])
}

// benchServer serves scripts/bench-net.sh: HTTP on -http, HTTPS on -https (with
// a self-signed certificate for the test names, its PEM written to -ca), both
// answering /bytes/N with N bytes and anything else with a short body, until
// killed. It runs in whatever network namespace it is started in.
func benchServer(args []string) error {
	fs := flag.NewFlagSet("benchserver", flag.ContinueOnError)
	httpAddr := fs.String("http", "", "HTTP `address`")
	httpsAddr := fs.String("https", "", "HTTPS `address`")
	ca := fs.String("ca", "", "write the certificate's PEM to `FILE`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "moat-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	baseDir = dir
	if err := os.Mkdir(dir+"/tools", 0o755); err != nil {
		return err
	}
	if err := copyFile(testCert().caFile, *ca); err != nil {
		return err
	}
	l1, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		return err
	}
	l2, err := net.Listen("tcp", *httpsAddr)
	if err != nil {
		return err
	}
	s := &webServer{evlog: newEvlog()}
	h1 := &http.Server{Handler: http.HandlerFunc(s.benchHandler), ErrorLog: nullLogger}
	h2 := &http.Server{Handler: http.HandlerFunc(s.benchHandler), ErrorLog: nullLogger,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{testCert().cert}}}
	fmt.Fprintln(os.Stderr, "benchserver: ready")
	errc := make(chan error, 2)
	go func() { errc <- h1.Serve(l1) }()
	go func() { errc <- h2.ServeTLS(l2, "", "") }()
	return <-errc
}

// benchRelay relays every connection to -listen to -to, both ways, until
// killed: what a proxy does once a tunnel is open, without the proxy (no
// request, no checks, no events). The copies run between the *net.TCPConn
// themselves, so they use splice(2) as moat's tunnels do.
func benchRelay(args []string) error {
	fs := flag.NewFlagSet("benchrelay", flag.ContinueOnError)
	listen := fs.String("listen", "", "`address` to accept connections on")
	to := fs.String("to", "", "`address` to relay them to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "benchrelay: listening on", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("tcp", *to)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				io.Copy(c, up)
				c.(*net.TCPConn).CloseWrite()
			}()
			io.Copy(up, c)
			up.(*net.TCPConn).CloseWrite()
			<-done
		}()
	}
}

// benchHandler is ServeHTTP without the log, which would grow without bound.
func (s *webServer) benchHandler(w http.ResponseWriter, r *http.Request) {
	if n, ok := strings.CutPrefix(r.URL.Path, "/bytes/"); ok {
		size, err := strconv.ParseInt(n, 10, 64)
		if err != nil || size < 0 {
			http.Error(w, "bad size", http.StatusBadRequest)
			return
		}
		writeBytes(w, size)
		return
	}
	io.WriteString(w, "ok\n")
}
