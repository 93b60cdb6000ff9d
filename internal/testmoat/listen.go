package testmoat

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Listener is a test's evidence of connections: a host listener that records the
// first line each client sends (or each datagram), counting them all.
type Listener struct {
	addr  string
	mu    sync.Mutex
	count int
	got   []string
}

// Addr is where it listens ("127.0.0.1:4242", a socket path, "@abstract").
func (l *Listener) Addr() string { return l.addr }

// Host and Port split a TCP or UDP Addr.
func (l *Listener) Host() string { h, _, _ := net.SplitHostPort(l.addr); return h }
func (l *Listener) Port() string { _, p, _ := net.SplitHostPort(l.addr); return p }

func (l *Listener) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count++
	if len(l.got) < 50 {
		l.got = append(l.got, line)
	}
}

// Snapshot returns how many clients came and the first 50 lines they sent.
func (l *Listener) Snapshot() (int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count, append([]string(nil), l.got...)
}

// Lines returns the first 50 lines clients sent.
func (l *Listener) Lines() []string { _, got := l.Snapshot(); return got }

// Serve listens on a stream network ("tcp4", "tcp6", "unix") until the test ends.
func Serve(t *testing.T, network, addr string) *Listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	l := &Listener{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				line, _ := bufio.NewReader(c).ReadString('\n')
				l.add(strings.TrimSpace(line))
			}()
		}
	}()
	return l
}

// ServeUDP listens on a datagram network ("udp4", "unixgram") until the test ends.
func ServeUDP(t *testing.T, network, addr string) *Listener {
	t.Helper()
	pc, err := net.ListenPacket(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	l := &Listener{addr: pc.LocalAddr().String()}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			l.add(strings.TrimSpace(string(buf[:n])))
		}
	}()
	return l
}
