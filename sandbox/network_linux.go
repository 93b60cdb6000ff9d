//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"

	"github.com/moat-sandbox/moat/internal/spec"
	"github.com/moat-sandbox/moat/proxy"
)

// netServer serves, from the supervisor in the host's network namespace, the
// sockets init opened inside the sandbox's: the proxy, the DNS stub and the
// forwarded host ports.
type netServer struct {
	srv       *proxy.Server
	listeners []net.Listener
	wg        sync.WaitGroup
}

// serveNet takes the sockets in the order spec.Net documents.
func serveNet(files []*os.File, n *spec.Net, srv *proxy.Server) (*netServer, error) {
	defer func() {
		for _, f := range files {
			f.Close() // the net package holds its own duplicates
		}
	}()
	if len(files) != 3+len(n.HostPorts) {
		return nil, &SetupError{Stage: "network", Err: fmt.Errorf("sandbox init passed %d sockets, want %d", len(files), 3+len(n.HostPorts))}
	}
	ns := &netServer{srv: srv}
	fail := func(err error) (*netServer, error) {
		ns.close()
		return nil, &SetupError{Stage: "network", Err: err}
	}
	proxyLn, err := net.FileListener(files[0])
	if err != nil {
		return fail(err)
	}
	dnsUDP, err := net.FilePacketConn(files[1])
	if err != nil {
		proxyLn.Close()
		return fail(err)
	}
	dnsTCP, err := net.FileListener(files[2])
	if err != nil {
		proxyLn.Close()
		dnsUDP.Close()
		return fail(err)
	}
	ns.goServe(func() { srv.Serve(proxyLn) })
	ns.goServe(func() { srv.ServeDNS(dnsUDP) })
	ns.goServe(func() { srv.ServeDNSTCP(dnsTCP) })
	for i, port := range n.HostPorts {
		ln, err := net.FileListener(files[3+i])
		if err != nil {
			return fail(err)
		}
		ns.listeners = append(ns.listeners, ln)
		ns.goServe(func() { forwardHostPort(ln, port, srv.Events) })
	}
	return ns, nil
}

func (ns *netServer) goServe(f func()) {
	ns.wg.Add(1)
	go func() { defer ns.wg.Done(); f() }()
}

// close stops serving; connections still open are cut.
func (ns *netServer) close() {
	if ns == nil {
		return
	}
	if ns.srv != nil {
		ns.srv.Close()
	}
	for _, l := range ns.listeners {
		l.Close()
	}
}

// forwardHostPort relays each connection to the sandbox's 127.0.0.1:port to the
// host's 127.0.0.1:port: the opt-in for a development database or server.
func forwardHostPort(ln net.Listener, port int, events func(proxy.Event)) {
	target := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			var d net.Dialer
			up, err := d.DialContext(context.Background(), "tcp", target.String())
			if events != nil {
				ev := proxy.Event{Kind: "net", Action: "allow", Proto: "host-port", Host: "127.0.0.1", Port: port, Addr: target.String(),
					Rule: "network.allowedDomains 127.0.0.1:" + strconv.Itoa(port)}
				if err != nil {
					ev.Action, ev.Reason = "deny", "dial-failed"
				}
				events(ev)
			}
			if err != nil {
				return
			}
			defer up.Close()
			relay(c, up)
		}()
	}
}

// relay copies both ways until both sides are done, passing on half-closes.
func relay(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go pipe(a, b)
	go pipe(b, a)
	wg.Wait()
}
