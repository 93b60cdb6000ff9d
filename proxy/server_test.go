package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// 200 tunnels open at the same time, through each protocol, all carry data.
func TestConcurrentTunnels(t *testing.T) {
	const n = 200
	for _, proto := range []string{"connect", "socks5"} {
		t.Run(proto, func(t *testing.T) {
			e := newEnv(t, []string{"allowed.example"}, nil)
			e.host("allowed.example", "198.18.0.1")
			e.upstream("198.18.0.1", 443, echo)
			var open, done sync.WaitGroup
			open.Add(n)
			done.Add(n)
			errs := make(chan error, n)
			for i := range n {
				go func() {
					defer done.Done()
					c, refused := openTunnel(t, e, proto, "allowed.example", 443)
					open.Done()
					if c == nil {
						errs <- fmt.Errorf("tunnel %d refused: %s", i, refused)
						return
					}
					defer c.Close()
					open.Wait() // every tunnel is open before any data flows
					msg := bytes.Repeat([]byte{byte('a' + i%26)}, 64<<10)
					c.SetDeadline(time.Now().Add(30 * time.Second))
					go func() {
						c.Write(msg)
						c.(interface{ CloseWrite() error }).CloseWrite()
					}()
					got, err := io.ReadAll(c)
					if err != nil || !bytes.Equal(got, msg) {
						errs <- fmt.Errorf("tunnel %d: %d bytes back, %v", i, len(got), err)
					}
				}()
			}
			done.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			e.close()
			allows := 0
			for _, ev := range e.Events() {
				if ev.Action == actionAllow {
					allows++
				}
			}
			if allows != n {
				t.Errorf("%d allow events, want %d", allows, n)
			}
		})
	}
}

// Close ends every Serve loop and every open tunnel, and Serve after Close fails.
func TestClose(t *testing.T) {
	e := newEnv(t, []string{"allowed.example"}, nil)
	e.host("allowed.example", "198.18.0.1")
	e.upstream("198.18.0.1", 443, echo)
	c, refused := openTunnel(t, e, "connect", "allowed.example", 443)
	if c == nil {
		t.Fatal(refused)
	}
	defer c.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- e.srv.Serve(ln) }()
	time.Sleep(10 * time.Millisecond)
	closed := make(chan struct{})
	go func() {
		e.close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return with a tunnel open")
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve returned %v", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("tunnel still open after Close")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("listener still accepting after Close")
	}
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := e.srv.Serve(ln2); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Close returned %v", err)
	}
	pc, _ := net.ListenPacket("udp", "127.0.0.1:0")
	if err := e.srv.ServeDNS(pc); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("ServeDNS after Close returned %v", err)
	}
	n := len(e.Events())
	time.Sleep(20 * time.Millisecond)
	if len(e.Events()) != n {
		t.Fatal("events after Close returned")
	}
}

func TestNoCheck(t *testing.T) {
	var s Server
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(ln); !errors.Is(err, ErrNoCheck) {
		t.Fatalf("Serve without Check: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("listener left open")
	}
}

// MaxConns bounds the connections served at once; the others wait in Accept.
func TestMaxConns(t *testing.T) {
	e := newEnv(t, []string{"allowed.example"}, nil)
	e.srv.Close()
	s := &Server{Check: e.srv.Check, Resolve: e.resolve, Dial: e.dial, MaxConns: 2}
	defer s.Close()
	e.host("allowed.example", "198.18.0.1")
	e.upstream("198.18.0.1", 443, echo)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(ln)
	e.proxyAddr = ln.Addr().String()
	var tunnels []net.Conn
	for range 2 {
		c, refused := openTunnel(t, e, "connect", "allowed.example", 443)
		if c == nil {
			t.Fatal(refused)
		}
		tunnels = append(tunnels, c)
	}
	third, err := net.Dial("tcp", e.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	fmt.Fprintf(third, "CONNECT allowed.example:443 HTTP/1.1\r\n\r\n")
	third.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := third.Read(make([]byte, 1)); err == nil {
		t.Fatal("a third connection was served with MaxConns 2")
	}
	tunnels[0].Close()
	third.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 12)
	if _, err := io.ReadFull(third, buf); err != nil || string(buf) != "HTTP/1.1 200" {
		t.Fatalf("third connection after a slot freed: %q %v", buf, err)
	}
	tunnels[1].Close()
}

// Events are one JSON object each, empty fields left out.
func TestEventJSON(t *testing.T) {
	ev := Event{Time: time.Unix(0, 0).UTC(), Kind: "net", Action: actionDeny, Proto: "connect", Host: "evil.example", Port: 443, Reason: ReasonNotAllowed}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"time":"1970-01-01T00:00:00Z","kind":"net","action":"deny","proto":"connect","host":"evil.example","port":443,"reason":"not-allowed"}`
	if string(b) != want {
		t.Fatalf("%s\nwant %s", b, want)
	}
}
