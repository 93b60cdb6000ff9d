package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// hopByHop are the request and response fields that concern one connection
// (RFC 9110 7.6.1), never forwarded. Proxy-* fields are dropped too, and so are
// the fields a Connection header names.
var hopByHop = map[string]bool{
	"connection":        true,
	"keep-alive":        true,
	"proxy-connection":  true,
	"te":                true,
	"trailer":           true,
	"transfer-encoding": true,
	"upgrade":           true,
}

// serveHTTP serves proxy requests on one client connection: absolute-form
// requests, each checked on its own, until the connection closes or a CONNECT
// turns it into a tunnel.
func (s *Server) serveHTTP(c net.Conn, br *bufio.Reader) {
	bw := bufio.NewWriter(c)
	timeout := s.handshakeTimeout()
	tunnel := false
	defer func() {
		if !tunnel {
			lingerClose(c)
		}
	}()
	for {
		c.SetReadDeadline(time.Now().Add(timeout))
		h, err := readHead(br)
		c.SetReadDeadline(time.Time{})
		if err != nil {
			if errors.Is(err, errBadRequest) {
				s.refuseHTTP(bw, "http", &refusal{reason: ReasonBadRequest, detail: err.Error()})
			}
			return // EOF or timeout between requests: nothing was asked
		}
		if h.method == "CONNECT" {
			tunnel = s.serveCONNECT(c, br, bw, h)
			return
		}
		if !s.forward(c, br, bw, h) {
			return
		}
		timeout = s.idleTimeout()
	}
}

// serveCONNECT opens a tunnel for a CONNECT request and reports whether it did.
func (s *Server) serveCONNECT(c net.Conn, br *bufio.Reader, bw *bufio.Writer, h *requestHead) bool {
	const proto = "connect"
	t, err := parseAuthority(h.target, 0)
	if err != nil {
		s.refuseHTTP(bw, proto, &refusal{reason: ReasonBadHost, detail: err.Error()})
		return false
	}
	if r := checkHostHeader(h, t, true); r != nil {
		s.refuseHTTP(bw, proto, r)
		return false
	}
	if len(h.values("Transfer-Encoding")) > 0 || len(h.values("Content-Length")) > 0 {
		s.refuseHTTP(bw, proto, &refusal{reason: ReasonBadRequest, host: t.host, port: t.port, detail: "CONNECT with a body"})
		return false
	}
	d, up, ap, r := s.open(t)
	if r != nil {
		s.refuseHTTP(bw, proto, r)
		return false
	}
	defer s.untrack(up)
	defer up.Close()
	s.logAllow(proto, d, ap)
	bw.WriteString("HTTP/1.1 200 Connection established\r\n\r\n")
	if bw.Flush() != nil {
		return true
	}
	pre, _ := br.Peek(br.Buffered())
	s.tunnel(proto, c, up, pre, d, ap)
	return true
}

// checkHostHeader requires a Host field, when there is one, to name the request
// target: the same canonical host and the same port. Without a port, Host means
// port 80 for a plain request and the target's port for CONNECT.
func checkHostHeader(h *requestHead, t target, connect bool) *refusal {
	vals := h.values("Host")
	r := &refusal{reason: ReasonHostHeader, host: t.host, port: t.port,
		hint: "send a Host header naming the host and port of the request target"}
	switch len(vals) {
	case 0:
		return nil
	case 1:
	default:
		r.detail = "more than one Host header"
		return r
	}
	def := 80
	if connect {
		def = t.port
	}
	ht, err := parseAuthority(vals[0], def)
	if err != nil {
		r.detail = "Host header: " + err.Error()
		return r
	}
	if ht.host != t.host || ht.port != t.port {
		r.detail = fmt.Sprintf("Host header names %s, request is for %s", ht, t)
		return r
	}
	return nil
}

// forward serves one absolute-form request: checks, one upstream connection,
// the response relayed back. It reports whether the client connection can
// carry another request.
func (s *Server) forward(c net.Conn, br *bufio.Reader, bw *bufio.Writer, h *requestHead) bool {
	const proto = "http"
	auth, path, err := parseAbsoluteTarget(h.method, h.target)
	if err != nil {
		reason := ReasonBadRequest
		if errors.Is(err, errBadHost) {
			reason = ReasonBadHost
		}
		s.refuseHTTP(bw, proto, &refusal{reason: reason, detail: err.Error()})
		return false
	}
	t, err := parseAuthority(auth, 80)
	if err != nil {
		s.refuseHTTP(bw, proto, &refusal{reason: ReasonBadHost, detail: err.Error()})
		return false
	}
	if r := checkHostHeader(h, t, false); r != nil {
		s.refuseHTTP(bw, proto, r)
		return false
	}
	body, err := requestFraming(h)
	if err != nil {
		s.refuseHTTP(bw, proto, &refusal{reason: ReasonBadRequest, host: t.host, port: t.port, detail: err.Error()})
		return false
	}
	d, up, ap, r := s.open(t)
	if r != nil {
		s.refuseHTTP(bw, proto, r)
		return false
	}
	defer s.untrack(up)
	defer up.Close()
	s.logAllow(proto, d, ap)

	ubw := bufio.NewWriter(up)
	writeForwardHead(ubw, h, t, path, body)
	if err := ubw.Flush(); err != nil {
		s.refuseHTTP(bw, proto, &refusal{reason: ReasonUpstreamFailed, host: d.eventHost(), port: t.port, addr: ap.String(), detail: err.Error()})
		return false
	}
	bodyDone := make(chan error, 1)
	switch {
	case body.chunked:
		go func() { bodyDone <- copyChunked(ubw, br) }()
	case body.length > 0:
		go func() {
			_, err := ubw.ReadFrom(&limitedReader{br, body.length})
			if err == nil {
				err = ubw.Flush()
			}
			bodyDone <- err
		}()
	default:
		bodyDone <- nil
	}

	ubr := bufio.NewReaderSize(up, maxHead)
	resp, err := readResponse(ubr, h.method)
	for err == nil && resp.interim() {
		resp.clean()
		resp.writeHead(bw, h.minor == 0, true)
		if err = bw.Flush(); err == nil {
			resp, err = readResponse(ubr, h.method)
		}
	}
	if err != nil {
		up.Close()
		c.SetReadDeadline(time.Now()) // stop the body copy, if it still reads
		<-bodyDone
		s.refuseHTTP(bw, proto, &refusal{reason: ReasonUpstreamFailed, host: d.eventHost(), port: t.port, addr: ap.String(), detail: err.Error()})
		return false
	}
	resp.clean()
	keep := !h.wantsClose() && resp.sendAs(h.minor == 0) != bodyUntilClose && resp.status != 101
	werr := relayResponse(bw, c, ubr, up, resp, h.minor == 0, keep)
	up.Close()
	var berr error
	select {
	case berr = <-bodyDone:
	default:
		// The response is done and the client may still be sending: stop
		// reading. A body that was complete still reports success.
		c.SetReadDeadline(time.Now())
		berr = <-bodyDone
		c.SetReadDeadline(time.Time{})
	}
	return keep && werr == nil && berr == nil
}

// limitedReader is io.LimitedReader that fails on a short body.
type limitedReader struct {
	r *bufio.Reader
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if err != nil && l.n > 0 {
		return n, fmt.Errorf("request body %d bytes short: %w", l.n, err)
	}
	return n, nil
}

// writeForwardHead writes the request to send upstream: origin-form target,
// canonical Host, the client's end-to-end fields, our own framing fields, and
// Connection: close (one upstream connection per request).
func writeForwardHead(w *bufio.Writer, h *requestHead, t target, path string, body framing) {
	fmt.Fprintf(w, "%s %s HTTP/1.%d\r\n", h.method, path, h.minor)
	host := t.host
	if t.ip.Is6() {
		host = "[" + host + "]"
	}
	if t.port != 80 {
		host += ":" + strconv.Itoa(t.port)
	}
	w.WriteString("Host: " + host + "\r\n")
	named := map[string]bool{}
	for _, tok := range h.tokens("Connection") {
		named[tok] = true
	}
	for _, f := range h.fields {
		k := strings.ToLower(f.name)
		if hopByHop[k] || named[k] || strings.HasPrefix(k, "proxy-") || k == "host" || k == "content-length" {
			continue
		}
		w.WriteString(f.name + ": " + f.value + "\r\n")
	}
	switch {
	case body.chunked:
		w.WriteString("Transfer-Encoding: chunked\r\n")
	case body.hasLength:
		w.WriteString("Content-Length: " + strconv.FormatInt(body.length, 10) + "\r\n")
	}
	w.WriteString("Connection: close\r\n\r\n")
}

// refuseHTTP answers a refused or failed request and logs it. The body is short
// text for people; X-Moat-Blocked (refusals) or X-Moat-Error (failures) carries
// the reason for programs. The connection is closed afterwards.
func (s *Server) refuseHTTP(bw *bufio.Writer, proto string, r *refusal) {
	s.logRefusal(proto, r)
	ri := info(r.reason)
	what := "the request"
	if r.host != "" {
		what = joinHostPort(r.host, r.port)
	}
	var b strings.Builder
	header := "X-Moat-Blocked"
	if ri.action == actionError {
		header = "X-Moat-Error"
		fmt.Fprintf(&b, "moat: could not reach %s: %s\n", what, r.reason)
	} else {
		fmt.Fprintf(&b, "moat: blocked %s: %s\n", what, r.reason)
	}
	if r.rule != "" {
		fmt.Fprintf(&b, "moat: rule: %s\n", r.rule)
	}
	if r.detail != "" {
		fmt.Fprintf(&b, "moat: detail: %s\n", r.detail)
	}
	if r.hint != "" {
		fmt.Fprintf(&b, "moat: hint: %s\n", r.hint)
	}
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n%s: %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		ri.status, statusText[ri.status], header, r.reason, b.Len(), b.String())
	bw.Flush()
}

// lingerClose half-closes a client connection and reads what it still sends
// for a moment before the caller closes it, so a client in the middle of
// sending a body reads the refusal instead of a reset.
func lingerClose(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok || tc.CloseWrite() != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	io.CopyN(io.Discard, c, 256<<10)
}
