package proxy

import (
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// sink counts what a connection sends until EOF and answers with the count.
func sink(c net.Conn) {
	n, _ := io.Copy(io.Discard, c)
	binary.Write(c, binary.BigEndian, n)
}

// BenchmarkThroughput streams 1 MiB per op to an upstream over loopback:
// directly, and through a CONNECT and a SOCKS5 tunnel (splice when both ends
// are TCP). Compare the MB/s.
func BenchmarkThroughput(b *testing.B) {
	for _, mode := range []string{"direct", "connect", "socks5"} {
		b.Run(mode, func(b *testing.B) {
			e := newEnv(b, []string{"bulk.example"}, nil)
			e.host("bulk.example", "198.18.0.1")
			ln := e.upstream("198.18.0.1", 443, sink)
			var c net.Conn
			if mode == "direct" {
				var err error
				if c, err = net.Dial("tcp", ln.Addr().String()); err != nil {
					b.Fatal(err)
				}
			} else {
				var refused string
				if c, refused = openTunnel(b, e, mode, "bulk.example", 443); c == nil {
					b.Fatal(refused)
				}
			}
			defer c.Close()
			chunk := make([]byte, 1<<20)
			chunk[0] = 'x' // not a TLS record
			b.SetBytes(int64(len(chunk)))
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
			c.(interface{ CloseWrite() error }).CloseWrite()
			var n int64
			if err := binary.Read(c, binary.BigEndian, &n); err != nil || n != int64(b.N)*int64(len(chunk)) {
				b.Fatalf("upstream got %d bytes, %v", n, err)
			}
			b.StopTimer()
		})
	}
}

// BenchmarkRequest measures one request or connection setup per op: plain HTTP
// GETs on a keep-alive client connection (each through the proxy is checked and
// gets its own upstream connection), a new tunnel with a one-byte echo, and a
// DNS lookup through the stub.
func BenchmarkRequest(b *testing.B) {
	e := newEnv(b, []string{"web.example", "echo.example"}, nil)
	webLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	web := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go web.Serve(webLn)
	defer web.Close()
	e.route("198.18.0.1", 80, webLn)
	e.host("web.example", "198.18.0.1")
	echoLn := e.upstream("198.18.0.2", 7, echo)
	e.host("echo.example", "198.18.0.2")
	proxyURL, _ := url.Parse("http://" + e.proxyAddr)

	get := func(b *testing.B, cl *http.Client, u string) {
		for range b.N {
			resp, err := cl.Get(u)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	b.Run("http-direct", func(b *testing.B) {
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		get(b, &http.Client{Transport: tr}, "http://"+webLn.Addr().String()+"/")
	})
	b.Run("http-proxy", func(b *testing.B) {
		tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
		defer tr.CloseIdleConnections()
		get(b, &http.Client{Transport: tr}, "http://web.example/")
	})
	oneByte := func(b *testing.B, c net.Conn) {
		c.Write([]byte{'p'})
		var buf [1]byte
		if _, err := io.ReadFull(c, buf[:]); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	b.Run("tcp-direct-open", func(b *testing.B) {
		for range b.N {
			c, err := net.Dial("tcp", echoLn.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			oneByte(b, c)
		}
	})
	for _, proto := range []string{"connect", "socks5"} {
		b.Run(proto+"-open", func(b *testing.B) {
			for range b.N {
				c, refused := openTunnel(b, e, proto, "echo.example", 7)
				if c == nil {
					b.Fatal(refused)
				}
				oneByte(b, c)
			}
		})
	}
	b.Run("dns-udp", func(b *testing.B) {
		c, err := net.Dial("udp", e.dnsAddr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		msg := query(1, q("web.example.", dnsmessage.TypeA))
		buf := make([]byte, 512)
		for range b.N {
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.Write(msg)
			if _, err := c.Read(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
}
