package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Decision is the policy's verdict for one destination.
type Decision struct {
	Allow bool
	// Default reports a refusal because no rule matched, as opposed to a rule
	// that refused the host. The proxy maps an address its DNS stub handed out
	// back to the name only after a Default refusal of the literal, and drops a
	// resolved address only when its literal is refused with Default false. The
	// zero value (false) is the safe one.
	Default bool
	Rule    string // which rule decided, e.g. `settings.json:12 network.allowedDomains[0]`, or "no rule allows this host"
	Hint    string // how to change it, e.g. "allow with --allow-net example.com"
}

// Event is one line of the run's event log: a connection, request or lookup
// allowed, refused, or allowed but failed.
type Event struct {
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"`   // always "net"
	Action string    `json:"action"` // "allow", "deny", or "error" (allowed, but resolving or dialing failed)
	Proto  string    `json:"proto"`  // "http", "connect", "socks5" or "dns"
	Host   string    `json:"host,omitempty"`
	Port   int       `json:"port,omitempty"`
	Addr   string    `json:"addr,omitempty"`   // the address dialed or refused, ip:port
	Reason string    `json:"reason,omitempty"` // one of the Reason constants; empty for allow
	Rule   string    `json:"rule,omitempty"`   // the rule that decided, when one did
	Hint   string    `json:"hint,omitempty"`
	Detail string    `json:"detail,omitempty"` // what exactly was wrong, for people
}

// Defaults for the Server's zero-valued limits.
const (
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultIdleTimeout      = 60 * time.Second
	DefaultDialTimeout      = 10 * time.Second
	DefaultMaxConns         = 1024
	dnsTTL                  = 10 // seconds
	maxDNSInFlight          = 128
)

// Server is the network filter. Set the fields, then call the Serve methods; do
// not change the fields after that. The zero values of everything but Check are
// usable. The functions are called from many goroutines at once.
type Server struct {
	// Check decides a destination. host is canonical: a lower-case ASCII name
	// without a trailing dot, or an IP literal (IPv6 without brackets, IPv4-mapped
	// as IPv4). port is 1-65535, or 0 when the DNS stub asks and CheckName is
	// nil. Required.
	Check func(host string, port int) Decision
	// CheckName decides whether the DNS stub may resolve a name (or, for an
	// address a name resolved to, whether a rule refuses that literal). It
	// should allow a name some rule allows on some port. nil means Check(host, 0),
	// which for a policy like moat's only matches rules without a port.
	CheckName func(host string) Decision
	// Ask, when set, is given each connection's destination that no rule decides
	// (Check refused it with Default) and returns the decision to apply instead:
	// a person may allow it. It may block; the connection waits, without a
	// deadline, for the answer. A name it allows is still resolved and each
	// address guarded; so is a literal. The DNS stub never asks.
	Ask func(host string, port int, d Decision) Decision
	// Resolve looks a name up, once per connection or DNS query. nil means
	// net.DefaultResolver.LookupNetIP(ctx, "ip", host).
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to an address that passed every check, with network "tcp".
	// nil means a net.Dialer. Return a *net.TCPConn where you can: the relay
	// then uses splice(2).
	Dial func(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error)
	// Events receives one Event per refusal and per allowed connection, request
	// or lookup, from many goroutines at once. May be nil. Not called after
	// Close returns.
	Events func(Event)
	// HostAddrs lists the host's own addresses, refused like loopback. It is
	// called once, when the first address is checked, so a Server that is
	// never asked to connect or resolve never lists them. May be nil.
	HostAddrs func() []netip.Addr
	// IsLocal, when set, reports whether an address is the host's own at the
	// moment of asking: an address the host gains after HostAddrs was called
	// (a VPN comes up, docker0 appears) is refused like the others.
	IsLocal func(netip.Addr) bool

	HandshakeTimeout time.Duration // SOCKS5 negotiation, an HTTP request head, a TLS ClientHello once begun
	IdleTimeout      time.Duration // between HTTP requests on a connection, and on a DNS-over-TCP connection
	DialTimeout      time.Duration // each Resolve, and each address tried
	MaxConns         int           // TCP connections served at once, proxy and DNS together; Accept waits for a free slot

	once    sync.Once
	mu      sync.Mutex
	closed  bool
	closers map[io.Closer]struct{} // listeners, packet conns and open connections
	wg      sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
	slots   chan struct{}
	handed  handouts

	hostOnce  sync.Once
	hostAddrs []netip.Addr // what HostAddrs returned
}

func (s *Server) init() {
	s.once.Do(func() {
		s.ctx, s.cancel = context.WithCancel(context.Background())
		s.closers = map[io.Closer]struct{}{}
		n := s.MaxConns
		if n <= 0 {
			n = DefaultMaxConns
		}
		s.slots = make(chan struct{}, n)
	})
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func (s *Server) handshakeTimeout() time.Duration {
	return orDefault(s.HandshakeTimeout, DefaultHandshakeTimeout)
}
func (s *Server) idleTimeout() time.Duration { return orDefault(s.IdleTimeout, DefaultIdleTimeout) }
func (s *Server) dialTimeout() time.Duration { return orDefault(s.DialTimeout, DefaultDialTimeout) }

// track registers c to be closed by Close; false means the server is closed and c
// was closed. Callers must call done (untrack) when they finish with c.
func (s *Server) track(c io.Closer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	s.closers[c] = struct{}{}
	return true
}

func (s *Server) untrack(c io.Closer) {
	s.mu.Lock()
	delete(s.closers, c)
	s.mu.Unlock()
}

// goHandle runs f in a goroutine Close waits for; false means the server is closed.
func (s *Server) goHandle(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close stops every Serve loop, closes their listeners and every open
// connection, and waits for the handlers to return.
func (s *Server) Close() error {
	s.init()
	s.mu.Lock()
	s.closed = true
	for c := range s.closers {
		c.Close()
	}
	s.closers = map[io.Closer]struct{}{}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

// Serve serves the HTTP proxy (absolute-form requests and CONNECT) and SOCKS5
// on ln, telling them apart by the first byte. It closes ln and returns
// ErrServerClosed after Close.
func (s *Server) Serve(ln net.Listener) error {
	return s.serveStream(ln, s.serveProxyConn)
}

// ServeDNSTCP serves the DNS stub over TCP (RFC 1035 length-prefixed messages).
func (s *Server) ServeDNSTCP(ln net.Listener) error {
	return s.serveStream(ln, s.serveDNSConn)
}

func (s *Server) serveStream(ln net.Listener, handle func(net.Conn)) error {
	if err := s.start(ln); err != nil {
		return err
	}
	defer s.untrack(ln)
	var backoff time.Duration
	for {
		select {
		case s.slots <- struct{}{}:
		case <-s.ctx.Done():
			return ErrServerClosed
		}
		c, err := ln.Accept()
		if err != nil {
			<-s.slots
			if err := s.serveErr("accept on", ln.Addr(), err); err != nil {
				return err
			}
			// EMFILE and the like: wait and try again, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-s.ctx.Done():
				return ErrServerClosed
			}
			continue
		}
		backoff = 0
		ok := s.goHandle(func() {
			defer func() { <-s.slots }()
			if !s.track(c) {
				return
			}
			defer s.untrack(c)
			defer c.Close()
			handle(c)
		})
		if !ok {
			c.Close()
			<-s.slots
			return ErrServerClosed
		}
	}
}

// start readies a Serve method's socket, which Close closes from now on; an
// error means the socket is closed and the method returns the error.
func (s *Server) start(c io.Closer) error {
	s.init()
	if s.Check == nil {
		c.Close()
		return ErrNoCheck
	}
	if !s.track(c) {
		return ErrServerClosed
	}
	return nil
}

// serveErr is the error a Serve method returns after err from its socket, or
// nil when the socket still serves.
func (s *Server) serveErr(op string, addr net.Addr, err error) error {
	if s.isClosed() {
		return ErrServerClosed
	}
	if errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("proxy: %s %v: %w", op, addr, err)
	}
	return nil
}

// serveProxyConn tells SOCKS5 from HTTP by the first byte.
func (s *Server) serveProxyConn(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(s.handshakeTimeout()))
	br := bufio.NewReaderSize(c, maxLine)
	first, err := br.Peek(1)
	if err != nil {
		return // closed or silent: nothing was asked, nothing to log
	}
	if first[0] == socksVersion {
		s.serveSOCKS(c, br)
		return
	}
	s.serveHTTP(c, br)
}

// emit sends an event; the reason's action is filled in when empty.
func (s *Server) emit(e Event) {
	if s.Events == nil {
		return
	}
	e.Kind = "net"
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if e.Action == "" {
		e.Action = info(e.Reason).action
	}
	s.Events(e)
}

// checkName is the DNS stub's policy.
func (s *Server) checkName(host string) Decision {
	if s.CheckName != nil {
		return s.CheckName(host)
	}
	return s.Check(host, 0)
}

func (s *Server) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, s.dialTimeout())
	defer cancel()
	if s.Resolve != nil {
		return s.Resolve(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

func (s *Server) dial(ctx context.Context, a netip.AddrPort) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.dialTimeout())
	defer cancel()
	if s.Dial != nil {
		return s.Dial(ctx, "tcp", a)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", a.String())
}
