package proxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/policy"
)

// The test network: names resolve to addresses in 198.18.0.0/24 (a benchmarking
// range the guard does not refuse), and the test Dial maps those to real
// listeners on 127.0.0.1. So the real guard runs, and any address the guard
// should have refused shows up in the dial log.

// rules is a policy in moat's model: deny rules first, then allow rules, else
// refused by default. Patterns are "host" or "host:port", as policy.DomainRule.
type rules struct {
	allow, deny []policy.DomainRule
}

func parseRules(allow, deny []string) rules {
	var r rules
	conv := func(ps []string, list string) []policy.DomainRule {
		var out []policy.DomainRule
		for i, p := range ps {
			dr := policy.DomainRule{Pattern: p, Host: p, Origin: fmt.Sprintf("test %s[%d]", list, i)}
			if strings.HasPrefix(p, "[") {
				end := strings.IndexByte(p, ']')
				dr.Host = p[1:end]
				if rest := p[end+1:]; rest != "" {
					dr.Port, _ = strconv.Atoi(rest[1:])
				}
			} else if h, port, ok := strings.Cut(p, ":"); ok && !strings.Contains(port, ":") {
				dr.Host = h
				dr.Port, _ = strconv.Atoi(port)
			}
			out = append(out, dr)
		}
		return out
	}
	r.allow = conv(allow, "allow")
	r.deny = conv(deny, "deny")
	return r
}

func (r rules) Check(host string, port int) Decision {
	for _, d := range r.deny {
		if d.Match(host, port) {
			return Decision{Rule: d.Origin, Hint: "remove it from the deny list"}
		}
	}
	for _, a := range r.allow {
		if a.Match(host, port) {
			return Decision{Allow: true, Rule: a.Origin}
		}
	}
	return Decision{Default: true, Rule: "no rule allows this host", Hint: "allow with --allow-net " + host}
}

// CheckName allows a name some allow rule matches on any port, unless a deny
// rule without a port matches it.
func (r rules) CheckName(host string) Decision {
	for _, d := range r.deny {
		if d.Port == 0 && d.Match(host, 0) {
			return Decision{Rule: d.Origin}
		}
	}
	for _, a := range r.allow {
		if a.Match(host, a.Port) {
			return Decision{Allow: true, Rule: a.Origin}
		}
	}
	return Decision{Default: true, Rule: "no rule allows this host"}
}

type env struct {
	t         testing.TB
	srv       *Server
	proxyAddr string
	dnsAddr   string // UDP
	dnsTCP    string

	mu       sync.Mutex
	hosts    map[string][]netip.Addr   // name → addresses
	routes   map[netip.AddrPort]string // dialed address → real listener
	resolved []string
	dialed   []netip.AddrPort
	events   []Event
	closed   bool
}

// newEnv starts a Server with the rules, configured further by opts, on fresh
// listeners.
func newEnv(t testing.TB, allow, deny []string, opts ...func(*Server)) *env {
	t.Helper()
	e := &env{t: t, hosts: map[string][]netip.Addr{}, routes: map[netip.AddrPort]string{}}
	r := parseRules(allow, deny)
	e.srv = &Server{
		Check:     r.Check,
		CheckName: r.CheckName,
		Resolve:   e.resolve,
		Dial:      e.dial,
		Events: func(ev Event) {
			e.mu.Lock()
			e.events = append(e.events, ev)
			e.mu.Unlock()
		},
		HandshakeTimeout: 2 * time.Second,
	}
	for _, o := range opts {
		o(e.srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.proxyAddr = ln.Addr().String()
	go e.srv.Serve(ln)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.dnsAddr = pc.LocalAddr().String()
	go e.srv.ServeDNS(pc)
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.dnsTCP = tl.Addr().String()
	go e.srv.ServeDNSTCP(tl)
	t.Cleanup(e.close)
	return e
}

// close stops the server and waits for its handlers, so every event is in.
func (e *env) close() {
	e.mu.Lock()
	done := e.closed
	e.closed = true
	e.mu.Unlock()
	if !done {
		e.srv.Close()
	}
}

func (e *env) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resolved = append(e.resolved, host)
	if a, ok := e.hosts[host]; ok {
		return slices.Clone(a), nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (e *env) dial(ctx context.Context, network string, a netip.AddrPort) (net.Conn, error) {
	e.mu.Lock()
	e.dialed = append(e.dialed, a)
	real, ok := e.routes[a]
	e.mu.Unlock()
	if network != "tcp" {
		return nil, fmt.Errorf("test dial: network %q", network)
	}
	if !ok {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", real)
}

// host makes name resolve to addrs.
func (e *env) host(name string, addrs ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range addrs {
		e.hosts[name] = append(e.hosts[name], netip.MustParseAddr(a))
	}
}

// route makes a dial of addr:port reach the listener ln.
func (e *env) route(addr string, port int, ln net.Listener) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.routes[netip.AddrPortFrom(netip.MustParseAddr(addr), uint16(port))] = ln.Addr().String()
}

// upstream starts a listener served by handle and routes addr:port to it.
func (e *env) upstream(addr string, port int, handle func(net.Conn)) net.Listener {
	e.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	if addr != "" {
		e.route(addr, port, ln)
	}
	return ln
}

func (e *env) Events() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
}

func (e *env) Dialed() []netip.AddrPort {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.dialed)
}

func (e *env) Resolved() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.resolved)
}

// refusals returns the reasons of the deny and error events, in order.
func (e *env) refusals() []string {
	var r []string
	for _, ev := range e.Events() {
		if ev.Action != actionAllow {
			r = append(r, ev.Reason)
		}
	}
	return r
}

// echo copies everything back and half-closes at EOF.
func echo(c net.Conn) {
	io.Copy(c, c)
	c.(*net.TCPConn).CloseWrite()
	io.Copy(io.Discard, c)
}

// recorder is an upstream that records the bytes each connection sent.
type recorder struct {
	mu   sync.Mutex
	got  [][]byte
	conn int
}

func (r *recorder) handle(c net.Conn) {
	r.mu.Lock()
	r.conn++
	r.mu.Unlock()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c)
	r.mu.Lock()
	r.got = append(r.got, b)
	r.mu.Unlock()
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []byte
	for _, b := range r.got {
		all = append(all, b...)
	}
	return all
}

// bufConn reads through the bufio.Reader that read the proxy's answer.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *bufConn) CloseWrite() error { return c.Conn.(*net.TCPConn).CloseWrite() }

// connectVia sends CONNECT target (with the given extra header lines) and
// returns the proxy's response and, on 200, the tunnel.
func connectVia(t testing.TB, proxyAddr, target string, header ...string) (*http.Response, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	req := "CONNECT " + target + " HTTP/1.1\r\n"
	if len(header) == 0 {
		req += "Host: " + target + "\r\n"
	}
	for _, h := range header {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		c.Close()
		return resp, nil
	}
	return resp, &bufConn{c, br}
}

// socksRequest builds a SOCKS5 request.
func socksRequest(cmd, atyp byte, host string, port int) []byte {
	b := []byte{socksVersion, cmd, 0, atyp}
	switch atyp {
	case socksAtypIPv4:
		a := netip.MustParseAddr(host).As4()
		b = append(b, a[:]...)
	case socksAtypIPv6:
		a := netip.MustParseAddr(host).As16()
		b = append(b, a[:]...)
	default:
		b = append(b, byte(len(host)))
		b = append(b, host...)
	}
	return binary.BigEndian.AppendUint16(b, uint16(port))
}

// socksVia negotiates no-auth, sends req and returns the reply code and, on
// success, the tunnel.
func socksVia(t testing.TB, proxyAddr string, req []byte) (byte, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte{socksVersion, 1, socksNoAuth}); err != nil {
		t.Fatal(err)
	}
	var m [2]byte
	if _, err := io.ReadFull(c, m[:]); err != nil || m != [2]byte{socksVersion, socksNoAuth} {
		t.Fatalf("SOCKS method reply %x, %v", m, err)
	}
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	var rep [10]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		c.Close()
		t.Fatalf("SOCKS reply: %v", err)
	}
	c.SetDeadline(time.Time{})
	if rep[1] != socksOK {
		c.Close()
		return rep[1], nil
	}
	return rep[1], c
}

// roundTrip writes msg into a tunnel, half-closes, and reads to EOF.
func roundTrip(t testing.TB, c net.Conn, msg []byte) []byte {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(msg)
		if err == nil {
			err = c.(interface{ CloseWrite() error }).CloseWrite()
		}
		errc <- err
	}()
	got, err := io.ReadAll(c)
	if werr := <-errc; werr != nil {
		t.Fatalf("write through tunnel: %v", werr)
	}
	if err != nil {
		t.Fatalf("read through tunnel: %v", err)
	}
	return got
}
