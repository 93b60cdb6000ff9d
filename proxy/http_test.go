package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// webServer is an upstream HTTP server that records what it was sent.
type webServer struct {
	name string
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func (w *webServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.mu.Lock()
	w.reqs = append(w.reqs, r)
	w.body = append(w.body, string(b))
	w.mu.Unlock()
	fmt.Fprintf(rw, "hello from %s %s %s", w.name, r.Method, r.URL.RequestURI())
}

func (w *webServer) requests() []*http.Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.reqs)
}

// web starts an HTTP upstream for name at addr:port.
func (e *env) web(name, addr string, port int) *webServer {
	w := &webServer{name: name}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	srv := &http.Server{Handler: w}
	go srv.Serve(ln)
	e.t.Cleanup(func() { srv.Close() })
	e.route(addr, port, ln)
	if name != "" {
		e.host(name, addr)
	}
	return w
}

// rawHTTP sends raw bytes to the proxy and reads one response.
func rawHTTP(t *testing.T, proxyAddr, raw string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	for err == nil && resp.StatusCode == http.StatusContinue {
		resp, err = http.ReadResponse(br, nil)
	}
	if err != nil {
		t.Fatalf("reading the proxy's response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(strings.NewReader(string(b)))
	return resp
}

func body(r *http.Response) string {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(b)))
	return string(b)
}

func TestHTTPForward(t *testing.T) {
	tests := []struct {
		name   string
		raw    string // the request, with PORT for the test web server's port
		status int
		reason string // X-Moat-Blocked / X-Moat-Error and the event's reason; "" for allowed
		hits   int    // requests the allowed web server saw
	}{
		{"allowed", "GET http://allowed.example/a?b HTTP/1.1\r\nHost: allowed.example\r\n\r\n", 200, "", 1},
		{"allowed, no Host header", "GET http://allowed.example/ HTTP/1.1\r\n\r\n", 200, "", 1},
		{"allowed, HTTP/1.0", "GET http://allowed.example/ HTTP/1.0\r\n\r\n", 200, "", 1},
		{"Host differs in case and trailing dot", "GET http://allowed.example/ HTTP/1.1\r\nHost: ALLOWED.example.\r\n\r\n", 200, "", 1},
		{"Host with the default port", "GET http://allowed.example/ HTTP/1.1\r\nHost: allowed.example:80\r\n\r\n", 200, "", 1},
		{"upper-case scheme and host", "GET HTTP://ALLOWED.EXAMPLE/ HTTP/1.1\r\n\r\n", 200, "", 1},
		{"denied by rule", "GET http://denied.allowed.example/ HTTP/1.1\r\n\r\n", 403, ReasonDenied, 0},
		{"not allowed", "GET http://secret.attacker.example/ HTTP/1.1\r\n\r\n", 403, ReasonNotAllowed, 0},
		{"not allowed on this port", "GET http://allowed.example:8080/ HTTP/1.1\r\n\r\n", 403, ReasonNotAllowed, 0},
		{"Host names another host", "GET http://allowed.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n", 403, ReasonHostHeader, 0},
		{"Host names another port", "GET http://allowed.example/ HTTP/1.1\r\nHost: allowed.example:8080\r\n\r\n", 403, ReasonHostHeader, 0},
		{"two Host headers", "GET http://allowed.example/ HTTP/1.1\r\nHost: allowed.example\r\nHost: evil.example\r\n\r\n", 403, ReasonHostHeader, 0},
		{"Host with NUL", "GET http://allowed.example/ HTTP/1.1\r\nHost: allowed.example\x00evil\r\n\r\n", 400, ReasonBadRequest, 0},
		{"Host with a comma list", "GET http://allowed.example/ HTTP/1.1\r\nHost: allowed.example, evil.example\r\n\r\n", 403, ReasonHostHeader, 0},
		{"userinfo trick", "GET http://allowed.example@evil.example/ HTTP/1.1\r\n\r\n", 400, ReasonBadHost, 0},
		{"userinfo with backslash", "GET http://allowed.example\\@evil.example/ HTTP/1.1\r\n\r\n", 400, ReasonBadHost, 0},
		{"percent-encoded host", "GET http://allowed%2eexample/ HTTP/1.1\r\n\r\n", 400, ReasonBadHost, 0},
		{"NUL in host", "GET http://allowed.example\x00.evil/ HTTP/1.1\r\n\r\n", 400, ReasonBadRequest, 0},
		{"empty label", "GET http://allowed..example/ HTTP/1.1\r\n\r\n", 400, ReasonBadHost, 0},
		{"non-ASCII host", "GET http://bücher.example/ HTTP/1.1\r\n\r\n", 400, ReasonBadHost, 0},
		{"loopback as 127.1", "GET http://127.1:PORT/ HTTP/1.1\r\n\r\n", 403, ReasonNotAllowed, 0},
		{"loopback as 0x7f.1", "GET http://0x7f.1:PORT/ HTTP/1.1\r\n\r\n", 403, ReasonNotAllowed, 0},
		{"loopback as one number", "GET http://2130706433:PORT/ HTTP/1.1\r\n\r\n", 403, ReasonNotAllowed, 0},
		{"mapped IPv6 loopback", "GET http://[::ffff:127.0.0.1]:PORT/ HTTP/1.1\r\n\r\n", 403, ReasonNotAllowed, 0},
		{"metadata literal", "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\n\r\n", 403, ReasonNotAllowed, 0},
		{"allowed name resolving to metadata", "GET http://rebind.allowed.example/ HTTP/1.1\r\n\r\n", 403, ReasonMetadata, 0},
		{"allowed name resolving to loopback", "GET http://local.allowed.example/ HTTP/1.1\r\n\r\n", 403, ReasonLoopback, 0},
		{"https target", "GET https://allowed.example/ HTTP/1.1\r\n\r\n", 400, ReasonBadRequest, 0},
		{"origin-form request", "GET / HTTP/1.1\r\nHost: allowed.example\r\n\r\n", 400, ReasonBadRequest, 0},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, ReasonBadRequest, 0},
		{"obsolete line folding", "GET http://allowed.example/ HTTP/1.1\r\nX-A: 1\r\n continued\r\n\r\n", 400, ReasonBadRequest, 0},
		{"space before colon", "GET http://allowed.example/ HTTP/1.1\r\nHost : evil.example\r\n\r\n", 400, ReasonBadRequest, 0},
		{"TE and CL", "POST http://allowed.example/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, ReasonBadRequest, 0},
		{"gzip transfer coding", "POST http://allowed.example/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 400, ReasonBadRequest, 0},
		{"CL values differ", "POST http://allowed.example/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400, ReasonBadRequest, 0},
		{"allowed, no answer upstream", "GET http://down.allowed.example/ HTTP/1.1\r\n\r\n", 502, ReasonDialFailed, 0},
		{"allowed, no such name", "GET http://nxdomain.allowed.example/ HTTP/1.1\r\n\r\n", 502, ReasonResolveFailed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, []string{"allowed.example:80", "*.allowed.example"}, []string{"denied.allowed.example"})
			w := e.web("allowed.example", "198.18.0.1", 80)
			e.host("rebind.allowed.example", "169.254.169.254")
			e.host("local.allowed.example", "127.0.0.1")
			e.host("down.allowed.example", "198.18.0.99")
			port := fmt.Sprint(e.proxyAddr[strings.LastIndexByte(e.proxyAddr, ':')+1:])
			resp := rawHTTP(t, e.proxyAddr, strings.ReplaceAll(tt.raw, "PORT", port))
			e.close()
			got := resp.Header.Get("X-Moat-Blocked") + resp.Header.Get("X-Moat-Error")
			if resp.StatusCode != tt.status || got != tt.reason {
				t.Fatalf("status %d, reason %q; want %d, %q\n%s", resp.StatusCode, got, tt.status, tt.reason, body(resp))
			}
			if n := len(w.requests()); n != tt.hits {
				t.Fatalf("web server saw %d requests, want %d", n, tt.hits)
			}
			if tt.reason == "" {
				if !strings.HasPrefix(body(resp), "hello from allowed.example GET /") {
					t.Fatalf("body %q", body(resp))
				}
				if r := e.refusals(); len(r) != 0 {
					t.Fatalf("refusal events %v for an allowed request", r)
				}
				return
			}
			if r := e.refusals(); len(r) != 1 || r[0] != tt.reason {
				t.Fatalf("refusal events %v, want exactly [%s]", r, tt.reason)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" || !strings.Contains(body(resp), tt.reason) {
				t.Fatalf("refusal body %q (%s) does not say %s", body(resp), ct, tt.reason)
			}
			for _, a := range e.Dialed() {
				if a.Addr().IsLoopback() || a.Addr().Unmap().IsLinkLocalUnicast() {
					t.Fatalf("dialed %v", a)
				}
			}
		})
	}
}

// A refused request names the rule and the hint, and a refused name is never
// looked up.
func TestHTTPRefusalBodyAndNoLookup(t *testing.T) {
	e := newEnv(t, []string{"allowed.example"}, nil)
	resp := rawHTTP(t, e.proxyAddr, "GET http://secret.attacker.example/x HTTP/1.1\r\n\r\n")
	e.close()
	b := body(resp)
	for _, want := range []string{"secret.attacker.example:80", "not-allowed", "no rule allows this host", "allow with --allow-net secret.attacker.example"} {
		if !strings.Contains(b, want) {
			t.Errorf("body %q lacks %q", b, want)
		}
	}
	if r := e.Resolved(); len(r) != 0 {
		t.Errorf("looked up %v for a refused host", r)
	}
	ev := e.Events()
	if len(ev) != 1 || ev[0].Action != actionDeny || ev[0].Proto != "http" || ev[0].Host != "secret.attacker.example" || ev[0].Port != 80 || ev[0].Kind != "net" || ev[0].Hint == "" {
		t.Errorf("events %+v", ev)
	}
}

func TestHTTPHeaders(t *testing.T) {
	e := newEnv(t, []string{"allowed.example"}, nil)
	w := e.web("allowed.example", "198.18.0.1", 8080)
	raw := "POST http://allowed.example:8080/p HTTP/1.1\r\n" +
		"Host: allowed.example:8080\r\n" +
		"Proxy-Authorization: Basic c2VjcmV0\r\n" +
		"Proxy-Connection: keep-alive\r\n" +
		"Proxy-Anything: x\r\n" +
		"Connection: keep-alive, X-Secret\r\n" +
		"X-Secret: hop\r\n" +
		"Keep-Alive: timeout=5\r\n" +
		"TE: trailers\r\n" +
		"Upgrade: websocket\r\n" +
		"X-Keep: yes\r\n" +
		"Content-Length: 5\r\n\r\nhello"
	resp := rawHTTP(t, e.proxyAddr, raw)
	e.close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body(resp))
	}
	reqs := w.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests upstream", len(reqs))
	}
	r := reqs[0]
	for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "Proxy-Anything", "X-Secret", "Keep-Alive", "Te", "Upgrade"} {
		if v := r.Header.Get(h); v != "" {
			t.Errorf("upstream got %s: %s", h, v)
		}
	}
	if r.Header.Get("X-Keep") != "yes" || r.Host != "allowed.example:8080" || r.URL.RequestURI() != "/p" || w.body[0] != "hello" {
		t.Errorf("upstream got X-Keep %q, Host %q, URI %q, body %q", r.Header.Get("X-Keep"), r.Host, r.URL.RequestURI(), w.body[0])
	}
}

// Hop-by-hop response fields stay with the upstream connection, and responses
// of every framing reach the client intact.
func TestHTTPResponses(t *testing.T) {
	tests := []struct {
		name, method, upstream string
		want                   string // body
		keep                   bool   // the client connection stays open
	}{
		{"hop-by-hop fields", "GET", "HTTP/1.1 200 OK\r\nConnection: X-Hop, close\r\nX-Hop: 1\r\nKeep-Alive: timeout=1\r\nProxy-Authenticate: Basic\r\nUpgrade: h2c\r\nX-End: 1\r\nContent-Length: 2\r\n\r\nok", "ok", true},
		{"chunked", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", "ok", true},
		{"close-delimited", "GET", "HTTP/1.1 200 OK\r\n\r\nuntil close", "until close", false},
		{"HTTP/1.0 upstream", "GET", "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nold", "old", true},
		{"HEAD with a length", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", "", true},
		{"204", "GET", "HTTP/1.1 204 No Content\r\n\r\n", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, []string{"allowed.example"}, nil)
			e.host("allowed.example", "198.18.0.1")
			raw := strings.NewReplacer(`\r\n`, "\r\n").Replace(tt.upstream)
			e.upstream("198.18.0.1", 80, func(c net.Conn) {
				readHead(bufio.NewReader(c))
				io.WriteString(c, raw)
			})
			c, err := net.Dial("tcp", e.proxyAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "%s http://allowed.example/ HTTP/1.1\r\n\r\n", tt.method)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, &http.Request{Method: tt.method})
			if err != nil {
				t.Fatal(err)
			}
			if b := body(resp); b != tt.want {
				t.Fatalf("body %q, want %q", b, tt.want)
			}
			for _, h := range []string{"X-Hop", "Keep-Alive", "Proxy-Authenticate", "Upgrade"} {
				if v := resp.Header.Get(h); v != "" {
					t.Errorf("client got response header %s: %s", h, v)
				}
			}
			if tt.name == "hop-by-hop fields" && resp.Header.Get("X-End") != "1" {
				t.Errorf("end-to-end header lost: %v", resp.Header)
			}
			if resp.Close == tt.keep {
				t.Errorf("response Close = %v, want %v", resp.Close, !tt.keep)
			}
			// A second request on the same connection works exactly when it is kept.
			fmt.Fprintf(c, "%s http://allowed.example/ HTTP/1.1\r\n\r\n", tt.method)
			_, err = http.ReadResponse(br, &http.Request{Method: tt.method})
			if (err == nil) != tt.keep {
				t.Errorf("second request: %v, keep-alive %v", err, tt.keep)
			}
		})
	}
}

// A keep-alive connection is checked request by request.
func TestHTTPKeepAliveRechecks(t *testing.T) {
	e := newEnv(t, []string{"one.example", "two.example"}, nil)
	one := e.web("one.example", "198.18.0.1", 80)
	two := e.web("two.example", "198.18.0.2", 80)
	e.web("three.example", "198.18.0.3", 80)
	c, err := net.Dial("tcp", e.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	get := func(host string) *http.Response {
		t.Helper()
		fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("GET %s: %v", host, err)
		}
		body(resp)
		return resp
	}
	for _, step := range []struct {
		host   string
		status int
	}{{"one.example", 200}, {"two.example", 200}, {"one.example", 200}, {"three.example", 403}} {
		if r := get(step.host); r.StatusCode != step.status {
			t.Fatalf("GET %s: %d, want %d", step.host, r.StatusCode, step.status)
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("connection open after a refusal: %v", err)
	}
	e.close()
	if len(one.requests()) != 2 || len(two.requests()) != 1 {
		t.Fatalf("one saw %d, two saw %d", len(one.requests()), len(two.requests()))
	}
	var allows []string
	for _, ev := range e.Events() {
		if ev.Action == actionAllow {
			allows = append(allows, ev.Host)
		}
	}
	if fmt.Sprint(allows) != "[one.example two.example one.example]" || fmt.Sprint(e.refusals()) != "["+ReasonNotAllowed+"]" {
		t.Fatalf("allow events %v, refusals %v", allows, e.refusals())
	}
}

func TestHTTPBodies(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"content-length", "POST http://allowed.example/ HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world", "hello world"},
		{"chunked with extension and trailer", "POST http://allowed.example/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n", "hello world"},
		{"zero length", "POST http://allowed.example/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n", ""},
		{"expect continue", "PUT http://allowed.example/ HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok", "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, []string{"allowed.example"}, nil)
			w := e.web("allowed.example", "198.18.0.1", 80)
			resp := rawHTTP(t, e.proxyAddr, tt.raw)
			e.close()
			if resp.StatusCode != 200 || len(w.body) != 1 || w.body[0] != tt.want {
				t.Fatalf("status %d, upstream bodies %q, want %q", resp.StatusCode, w.body, tt.want)
			}
		})
	}
}

// The proxy relays through a standard client: net/http with a proxy URL.
func TestHTTPClientThroughProxy(t *testing.T) {
	e := newEnv(t, []string{"allowed.example"}, nil)
	e.web("allowed.example", "198.18.0.1", 80)
	proxyURL, err := url.Parse("http://" + e.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for i := range 3 {
		resp, err := cl.Get(fmt.Sprintf("http://allowed.example/n%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if b := body(resp); resp.StatusCode != 200 || b != fmt.Sprintf("hello from allowed.example GET /n%d", i) {
			t.Fatalf("status %d body %q", resp.StatusCode, b)
		}
		resp.Body.Close()
	}
	resp, err := cl.Get("http://evil.example/")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 403 || resp.Header.Get("X-Moat-Blocked") != ReasonNotAllowed {
		t.Fatalf("evil.example: %d %q", resp.StatusCode, resp.Header.Get("X-Moat-Blocked"))
	}
	resp.Body.Close()
}

// What a client receives through the proxy, byte for byte, for responses the
// upstream frames in each way. The client asks to close, so the proxy closes
// after the response.
func TestHTTPResponseBytes(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB: spliced past the buffer
	tests := []struct {
		name, request, upstream, want string
	}{
		{"interim, then chunked",
			"POST http://allowed.example/ HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
			"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x\r\nok\r\n0\r\nX-T: 1\r\n\r\n",
			"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"},
		{"chunked to an HTTP/1.0 client",
			"GET http://allowed.example/ HTTP/1.0\r\n\r\n",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
			"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello world"},
		{"large length",
			"GET http://allowed.example/ HTTP/1.1\r\nConnection: close\r\n\r\n",
			"HTTP/1.1 200 OK\r\nContent-Length: " + fmt.Sprint(len(big)) + "\r\n\r\n" + big + "trailing garbage",
			"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: " + fmt.Sprint(len(big)) + "\r\n\r\n" + big},
		{"until close",
			"GET http://allowed.example/ HTTP/1.1\r\n\r\n",
			"HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\n" + big,
			"HTTP/1.1 200 OK\r\nX-A: 1\r\nConnection: close\r\n\r\n" + big},
		{"204 with a chunked body",
			"GET http://allowed.example/ HTTP/1.1\r\nConnection: close\r\n\r\n",
			"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
			"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, []string{"allowed.example"}, nil)
			e.host("allowed.example", "198.18.0.1")
			e.upstream("198.18.0.1", 80, func(c net.Conn) {
				br := bufio.NewReader(c)
				h, err := readHead(br)
				if err != nil {
					return
				}
				if f, err := requestFraming(h); err == nil && f.length > 0 {
					io.CopyN(io.Discard, br, f.length)
				}
				io.WriteString(c, tt.upstream)
			})
			c, err := net.Dial("tcp", e.proxyAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, tt.request)
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				if len(got) > 300 {
					got = append(got[:300:300], "..."...)
				}
				t.Fatalf("client got\n%q", got)
			}
		})
	}
}

// A response the proxy cannot read is answered with 502 upstream-failed.
func TestHTTPBadResponse(t *testing.T) {
	for _, raw := range []string{
		"",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nab",
		"HTTP/1.1 200 OK\r\nX-A: " + strings.Repeat("a", maxHead) + "\r\n\r\n",
		"SSH-2.0-OpenSSH_9.6\r\n",
	} {
		e := newEnv(t, []string{"allowed.example"}, nil)
		e.host("allowed.example", "198.18.0.1")
		e.upstream("198.18.0.1", 80, func(c net.Conn) {
			readHead(bufio.NewReader(c))
			io.WriteString(c, raw)
		})
		resp := rawHTTP(t, e.proxyAddr, "GET http://allowed.example/ HTTP/1.1\r\n\r\n")
		e.close()
		if resp.StatusCode != 502 || resp.Header.Get("X-Moat-Error") != ReasonUpstreamFailed {
			t.Errorf("upstream %.60q: client got %d %q", raw, resp.StatusCode, body(resp))
		}
	}
}
