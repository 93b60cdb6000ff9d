package network_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/moat-sandbox/moat/internal/testmoat"
)

// The servers here log what reaches them: the tests' evidence. Every server has a
// settle method, called after moat has exited: it makes a sentinel connection (or
// sends a sentinel datagram) from the host and waits until the server has seen it
// and finished with every connection accepted before it. Accept queues are first
// in, first out, so whatever the sandbox sent is in the log by then, however late
// the server got to it.

const sentinel = "moat-nettest-sentinel"

// serverTimeout bounds how long a server waits on a peer: a hang guard.
const serverTimeout = 10 * time.Second

// hit is one piece of evidence.
type hit struct {
	Kind   string // accept, http, tls, udp, icmp, packet, dns
	Local  string // the address reached (ip:port), when known
	Remote string // who came
	Name   string // HTTP Host, TLS server_name, DNS name
	Path   string // HTTP path, a raw connection's first line, a datagram, a DNS type
}

func (h hit) String() string {
	return fmt.Sprintf("%s %s<-%s name=%q path=%q", h.Kind, h.Local, h.Remote, h.Name, h.Path)
}

// evlog is a server's log.
type evlog struct {
	mu        sync.Mutex
	hits      []hit
	open      int                      // connections accepted and not yet done with
	sentinels map[string]bool          // remote addresses of sentinel connections
	waiting   map[string]chan struct{} // sentinel datagram id -> closed when it arrives
}

func newEvlog() *evlog {
	return &evlog{sentinels: map[string]bool{}, waiting: map[string]chan struct{}{}}
}

func (l *evlog) add(h hit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hits = append(l.hits, h)
}

func (l *evlog) connOpen(delta int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open += delta
}

// all returns the hits but the sentinels'.
func (l *evlog) all() []hit {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []hit
	for _, h := range l.hits {
		if !l.sentinels[h.Remote+" "+h.Local] && !strings.Contains(h.Path, sentinel) && !strings.Contains(h.Name, sentinel) {
			out = append(out, h)
		}
	}
	return out
}

// match returns the hits for which pred holds.
func (l *evlog) match(pred func(hit) bool) []hit {
	var out []hit
	for _, h := range l.all() {
		if pred(h) {
			out = append(out, h)
		}
	}
	return out
}

// containing returns the hits that mention s anywhere (case-insensitive).
func (l *evlog) containing(s string) []hit {
	s = strings.ToLower(s)
	return l.match(func(h hit) bool { return strings.Contains(strings.ToLower(h.String()), s) })
}

// waitIdle waits until every connection accepted so far is done with.
func (l *evlog) waitIdle(t *testing.T, what string) {
	t.Helper()
	if !testmoat.WaitFor(runTimeout, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.open == 0 }) {
		t.Fatalf("%s: connections still open after %v", what, runTimeout)
	}
}

// markSentinel notes a sentinel connection; hits on it are not evidence. It is
// known by both ends: the proxy dials from the same host address, and the same
// ephemeral port may serve it towards another of the test host's ports at the
// same time. (A unix socket client has no address: its hits are recognised by the
// sentinel line instead.)
func (l *evlog) markSentinel(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := c.LocalAddr().String(); a != "" && a != "@" {
		l.sentinels[a+" "+c.RemoteAddr().String()] = true
	}
}

// tcpServer accepts TCP connections and logs each with its first line. It
// answers an HTTP request with 200 and anything else with an echo of the line.
type tcpServer struct {
	*evlog
	ln   net.Listener
	addr string // where the host reaches it for the sentinel (same network as ln)
}

// listenHost starts a logging server on the host: network "tcp", "tcp4",
// "tcp6" or "unix" (a path, or "@name" for an abstract socket).
func listenHost(t *testing.T, network, addr string) (*tcpServer, error) {
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, err
	}
	return serveTCP(t, ln, ln.Addr().String()), nil
}

func serveTCP(t *testing.T, ln net.Listener, sentinelAddr string) *tcpServer {
	s := &tcpServer{evlog: newEvlog(), ln: ln, addr: sentinelAddr}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.connOpen(1)
			go s.handle(c)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *tcpServer) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

func (s *tcpServer) hostPort(host string) string {
	return net.JoinHostPort(host, strconv.Itoa(s.port()))
}

func (s *tcpServer) handle(c net.Conn) {
	defer s.connOpen(-1)
	defer c.Close()
	c.SetDeadline(time.Now().Add(serverTimeout))
	line, _ := bufio.NewReader(c).ReadString('\n')
	line = strings.TrimRight(line, "\r\n")
	s.add(hit{Kind: "accept", Local: c.LocalAddr().String(), Remote: c.RemoteAddr().String(), Path: line})
	if strings.HasPrefix(line, "GET ") || strings.HasPrefix(line, "HEAD ") {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
	} else {
		io.WriteString(c, "echo "+line+"\n")
	}
}

func (s *tcpServer) settle(t *testing.T) {
	t.Helper()
	c, err := net.DialTimeout(s.ln.Addr().Network(), s.addr, serverTimeout)
	if err != nil {
		t.Fatalf("sentinel connection to %s: %v", s.addr, err)
	}
	s.markSentinel(c)
	c.SetDeadline(time.Now().Add(serverTimeout))
	io.WriteString(c, sentinel+"\n")
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatalf("sentinel connection to %s: no answer: %v", s.addr, err)
	}
	c.Close()
	s.waitIdle(t, "tcp server "+s.addr)
}

// udpServer logs every datagram.
type udpServer struct {
	*evlog
	pc   net.PacketConn
	addr string
}

func serveUDP(t *testing.T, pc net.PacketConn, sentinelAddr string) *udpServer {
	s := &udpServer{evlog: newEvlog(), pc: pc, addr: sentinelAddr}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if strings.Contains(string(buf[:n]), sentinel) {
				s.sawSentinel(string(buf[:n]))
				continue
			}
			s.add(hit{Kind: "udp", Local: pc.LocalAddr().String(), Remote: from.String(), Path: string(buf[:n])})
		}
	}()
	t.Cleanup(func() { pc.Close() })
	return s
}

func (s *udpServer) port() int { return s.pc.LocalAddr().(*net.UDPAddr).Port }

func (s *udpServer) settle(t *testing.T) {
	t.Helper()
	settleDatagram(t, s.evlog, "udp server "+s.addr, func(id string) error {
		c, err := net.Dial("udp", s.addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = io.WriteString(c, id)
		return err
	})
}

// sawSentinel reports a sentinel datagram.
func (l *evlog) sawSentinel(payload string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, ch := range l.waiting {
		if strings.Contains(payload, id) {
			close(ch)
			delete(l.waiting, id)
		}
	}
}

// settleDatagram sends a sentinel datagram with a fresh id until it arrives:
// datagrams may be dropped.
func settleDatagram(t *testing.T, l *evlog, what string, send func(id string) error) {
	t.Helper()
	id := sentinel + "-" + token("")
	arrived := make(chan struct{})
	l.mu.Lock()
	l.waiting[id] = arrived
	l.mu.Unlock()
	for end := time.Now().Add(runTimeout); time.Now().Before(end); {
		if err := send(id); err != nil {
			t.Fatalf("%s: sentinel: %v", what, err)
		}
		select {
		case <-arrived:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatalf("%s: the sentinel never arrived", what)
}

// webServer is an HTTP and an HTTPS server sharing one log: each request (Host,
// path), each TLS ClientHello (server_name) and each accepted connection.
type webServer struct {
	*evlog
	httpLn, httpsLn net.Listener
	httpAddr        string // where the host reaches them for the sentinel
	httpsAddr       string
	gitRoot         string // serves /git/ with git http-backend when set
	hold            *barrier
}

func serveWeb(t *testing.T, httpLn, httpsLn net.Listener, httpAddr, httpsAddr string) *webServer {
	s := &webServer{evlog: newEvlog(), httpLn: httpLn, httpsLn: httpsLn, httpAddr: httpAddr, httpsAddr: httpsAddr}
	newSrv := func() *http.Server {
		return &http.Server{
			Handler:           s,
			ReadHeaderTimeout: serverTimeout,
			IdleTimeout:       serverTimeout,
			TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){}, // HTTP/1.1 only
			ConnState: func(c net.Conn, st http.ConnState) {
				switch st {
				case http.StateNew:
					s.connOpen(1)
					s.add(hit{Kind: "accept", Local: c.LocalAddr().String(), Remote: c.RemoteAddr().String()})
				case http.StateClosed, http.StateHijacked:
					s.connOpen(-1)
				}
			},
			ErrorLog: nullLogger,
		}
	}
	h1, h2 := newSrv(), newSrv()
	h2.TLSConfig = &tls.Config{
		Certificates: []tls.Certificate{testCert().cert},
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			s.add(hit{Kind: "tls", Local: hello.Conn.LocalAddr().String(), Remote: hello.Conn.RemoteAddr().String(), Name: hello.ServerName})
			return nil, nil
		},
	}
	go h1.Serve(httpLn)
	go h2.ServeTLS(httpsLn, "", "")
	t.Cleanup(func() { h1.Close(); h2.Close() })
	return s
}

func (s *webServer) httpPort() int  { return s.httpLn.Addr().(*net.TCPAddr).Port }
func (s *webServer) httpsPort() int { return s.httpsLn.Addr().(*net.TCPAddr).Port }

func (s *webServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/"+sentinel {
		io.WriteString(w, "ok\n")
		return
	}
	local := ""
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		local = a.String()
	}
	s.add(hit{Kind: "http", Local: local, Remote: r.RemoteAddr, Name: r.Host, Path: r.URL.Path})
	switch {
	case s.gitRoot != "" && strings.HasPrefix(r.URL.Path, "/git/"):
		git, err := exec.LookPath("git")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := &cgi.Handler{
			Path: git, Args: []string{"http-backend"}, Root: "/git",
			Env: []string{"GIT_PROJECT_ROOT=" + s.gitRoot, "GIT_HTTP_EXPORT_ALL=1"},
		}
		h.ServeHTTP(w, r)
	case s.hold != nil && strings.HasPrefix(r.URL.Path, "/hold/"):
		if err := s.hold.wait(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "held "+r.URL.Path+"\n")
	case strings.HasPrefix(r.URL.Path, "/bytes/"):
		n, err := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/bytes/"), 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "bad size", http.StatusBadRequest)
			return
		}
		writeBytes(w, n)
	default:
		io.WriteString(w, "ok "+r.URL.Path+"\n")
	}
}

// writeBytes sends n bytes with a Content-Length.
func writeBytes(w http.ResponseWriter, n int64) {
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	w.Header().Set("Content-Type", "application/octet-stream")
	buf := make([]byte, 1<<20)
	for n > 0 {
		k := int64(len(buf))
		if n < k {
			k = n
		}
		if _, err := w.Write(buf[:k]); err != nil {
			return
		}
		n -= k
	}
}

func (s *webServer) settle(t *testing.T) {
	t.Helper()
	for _, tlsOn := range []bool{false, true} {
		addr := s.httpAddr
		if tlsOn {
			addr = s.httpsAddr
		}
		c, err := net.DialTimeout("tcp", addr, serverTimeout)
		if err != nil {
			t.Fatalf("sentinel connection to %s: %v", addr, err)
		}
		s.markSentinel(c)
		c.SetDeadline(time.Now().Add(serverTimeout))
		if tlsOn {
			c = tls.Client(c, &tls.Config{ServerName: sentinel + ".moat-test", InsecureSkipVerify: true})
		}
		fmt.Fprintf(c, "GET /%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", sentinel, sentinel)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("sentinel request to %s: %v", addr, err)
		}
		resp.Body.Close()
		c.Close()
	}
	s.waitIdle(t, "web server "+s.httpAddr)
}

// barrier holds requests until n are waiting at once: proof they were concurrent.
type barrier struct {
	mu   sync.Mutex
	n    int
	done chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, done: make(chan struct{})} }

func (b *barrier) wait() error {
	b.mu.Lock()
	b.n--
	if b.n == 0 {
		close(b.done)
	}
	b.mu.Unlock()
	select {
	case <-b.done:
		return nil
	case <-time.After(runTimeout / 2): // a hang guard: some requests never came
		return errors.New("barrier: not all requests arrived")
	}
}

// dnsServer answers A queries for *.moat-test from a table and logs every query.
type dnsServer struct {
	*evlog
	answers map[string][4]byte // name suffix (without the dot) -> address
	pc      net.PacketConn
}

func newDNSServer(answers map[string][4]byte) *dnsServer {
	return &dnsServer{evlog: newEvlog(), answers: answers}
}

func (d *dnsServer) serveUDP(pc net.PacketConn) {
	d.pc = pc
	go func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := d.answer(buf[:n], from.String(), pc.LocalAddr().String()); resp != nil {
				pc.WriteTo(resp, from)
			}
		}
	}()
}

func (d *dnsServer) serveTCP(ln net.Listener) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(serverTimeout))
				br := bufio.NewReader(c)
				for {
					var l [2]byte
					if _, err := io.ReadFull(br, l[:]); err != nil {
						return
					}
					msg := make([]byte, int(l[0])<<8|int(l[1]))
					if _, err := io.ReadFull(br, msg); err != nil {
						d.add(hit{Kind: "dns", Local: c.LocalAddr().String(), Remote: c.RemoteAddr().String(), Path: "tcp: truncated"})
						return
					}
					resp := d.answer(msg, c.RemoteAddr().String(), c.LocalAddr().String())
					if resp == nil {
						return
					}
					c.Write(append([]byte{byte(len(resp) >> 8), byte(len(resp))}, resp...))
				}
			}()
		}
	}()
}

// answer logs a query and builds the response; nil for garbage.
func (d *dnsServer) answer(msg []byte, from, local string) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		d.add(hit{Kind: "dns", Local: local, Remote: from, Path: "unparsable"})
		return nil
	}
	if h.Response {
		return nil // the answer to a sentinel the server sent itself
	}
	q, err := p.Question()
	if err != nil {
		d.add(hit{Kind: "dns", Local: local, Remote: from, Path: "no question"})
		return nil
	}
	name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	if strings.HasPrefix(name, sentinel) {
		d.sawSentinel(name)
	} else {
		d.add(hit{Kind: "dns", Local: local, Remote: from, Name: name, Path: q.Type.String()})
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	addr, known := d.lookup(name)
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	b.StartQuestions()
	b.Question(q)
	b.StartAnswers()
	if known && q.Type == dnsmessage.TypeA {
		b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}, dnsmessage.AResource{A: addr})
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

func (d *dnsServer) lookup(name string) ([4]byte, bool) {
	for suffix, a := range d.answers {
		if name == suffix || strings.HasSuffix(name, "."+suffix) {
			return a, true
		}
	}
	return [4]byte{}, false
}

// settle sends the sentinel query from the server's own socket to itself: that
// works in any network namespace, even one nobody else can enter.
func (d *dnsServer) settle(t *testing.T) {
	t.Helper()
	settleDatagram(t, d.evlog, "dns server", func(id string) error {
		_, err := d.pc.WriteTo(dnsQuery(id+".moat-test", dnsmessage.TypeA), d.pc.LocalAddr())
		return err
	})
}

func dnsQuery(name string, typ dnsmessage.Type) []byte {
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 1, RecursionDesired: true})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name + "."), Type: typ, Class: dnsmessage.ClassINET})
	out, err := b.Finish()
	if err != nil {
		panic(err)
	}
	return out
}
