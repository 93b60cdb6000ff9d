package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

const (
	maxLine    = 16 << 10 // one request or header line; also the client read buffer
	maxHead    = 64 << 10 // a whole request head
	maxHeaders = 200
)

// requestHead is an HTTP/1.x request line and header, as parsed by readHead.
type requestHead struct {
	method, target string
	minor          int // HTTP/1.minor: 0 or 1
	fields         []field
}

type field struct{ name, value string } // name as the client wrote it

// values returns the values of the header fields named name (any case).
func (h *requestHead) values(name string) []string {
	var v []string
	for _, f := range h.fields {
		if strings.EqualFold(f.name, name) {
			v = append(v, f.value)
		}
	}
	return v
}

// tokens returns the comma-separated, lower-cased tokens of the fields named name.
func (h *requestHead) tokens(name string) []string {
	var t []string
	for _, v := range h.values(name) {
		for _, tok := range strings.Split(v, ",") {
			if tok = strings.ToLower(strings.TrimSpace(tok)); tok != "" {
				t = append(t, tok)
			}
		}
	}
	return t
}

// wantsClose reports whether the client asked to close after this request.
func (h *requestHead) wantsClose() bool {
	for _, t := range h.tokens("Connection") {
		if t == "close" {
			return true
		}
	}
	return h.minor == 0
}

// lineReader reads CRLF- or LF-terminated lines within a byte budget.
type lineReader struct {
	br     *bufio.Reader
	budget int
}

// line returns the next line without its terminator. It fails with errTooLong
// past the budget or maxLine, io.EOF at a clean end, io.ErrUnexpectedEOF in a line.
func (r *lineReader) line() (string, error) {
	b, err := r.br.ReadSlice('\n')
	r.budget -= len(b)
	switch {
	case errors.Is(err, bufio.ErrBufferFull) || r.budget < 0:
		return "", fmt.Errorf("%w: line or head %w", errBadRequest, errTooLong)
	case err == io.EOF && len(b) > 0:
		return "", io.ErrUnexpectedEOF
	case err != nil:
		return "", err
	}
	b = b[:len(b)-1]
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return string(b), nil
}

// readHead reads one request head strictly (RFC 9112): a request line of exactly
// three parts, HTTP/1.0 or HTTP/1.1, token field names directly followed by ':',
// no obsolete line folding, no control bytes but tab in values. A clean EOF
// before the request returns io.EOF; malformed input wraps errBadRequest.
func readHead(br *bufio.Reader) (*requestHead, error) {
	lr := &lineReader{br: br, budget: maxHead}
	var reqLine string
	for blank := 0; ; blank++ {
		l, err := lr.line()
		if err != nil {
			return nil, err
		}
		if l != "" {
			reqLine = l
			break
		}
		if blank == 4 { // RFC 9112 2.2: ignore a few empty lines before a request
			return nil, fmt.Errorf("%w: empty lines instead of a request", errBadRequest)
		}
	}
	parts := strings.Split(reqLine, " ")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: request line is not \"METHOD target HTTP/1.1\"", errBadRequest)
	}
	h := &requestHead{method: parts[0], target: parts[1]}
	if !isToken(h.method) {
		return nil, fmt.Errorf("%w: method %q", errBadRequest, h.method)
	}
	for i := 0; i < len(h.target); i++ {
		if c := h.target[i]; c <= ' ' || c == 0x7f {
			return nil, fmt.Errorf("%w: control byte in request target", errBadRequest)
		}
	}
	if h.target == "" {
		return nil, fmt.Errorf("%w: empty request target", errBadRequest)
	}
	switch parts[2] {
	case "HTTP/1.1":
		h.minor = 1
	case "HTTP/1.0":
	default:
		return nil, fmt.Errorf("%w: version %q (only HTTP/1.0 and HTTP/1.1)", errBadRequest, parts[2])
	}
	for {
		l, err := lr.line()
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, err
		}
		if l == "" {
			return h, nil
		}
		if l[0] == ' ' || l[0] == '\t' {
			return nil, fmt.Errorf("%w: obsolete line folding", errBadRequest)
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok || !isToken(name) {
			return nil, fmt.Errorf("%w: header line is not \"Name: value\"", errBadRequest)
		}
		value = strings.Trim(value, " \t")
		for i := 0; i < len(value); i++ {
			if c := value[i]; c < ' ' && c != '\t' || c == 0x7f {
				return nil, fmt.Errorf("%w: control byte in header %s", errBadRequest, name)
			}
		}
		if len(h.fields) == maxHeaders {
			return nil, fmt.Errorf("%w: more than %d header fields", errBadRequest, maxHeaders)
		}
		h.fields = append(h.fields, field{name, value})
	}
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// parseAbsoluteTarget splits an absolute-form http:// request target into its
// authority and the origin-form path to send upstream.
func parseAbsoluteTarget(method, t string) (auth, path string, err error) {
	scheme, rest, ok := strings.Cut(t, "://")
	switch {
	case ok && strings.EqualFold(scheme, "http"):
	case ok && strings.EqualFold(scheme, "https"):
		return "", "", fmt.Errorf("%w: https:// URL in a plain proxy request; clients use CONNECT for https (set https_proxy)", errBadRequest)
	case strings.HasPrefix(t, "/") || t == "*":
		return "", "", fmt.Errorf("%w: origin-form request to the proxy; send absolute-form (GET http://host/path)", errBadRequest)
	default:
		return "", "", fmt.Errorf("%w: request target is not an http:// URL", errBadRequest)
	}
	if strings.IndexByte(rest, '#') >= 0 {
		return "", "", fmt.Errorf("%w: fragment in request target", errBadRequest)
	}
	i := strings.IndexAny(rest, "/?")
	if i < 0 {
		i = len(rest)
	}
	auth, path = rest[:i], rest[i:]
	switch {
	case auth == "":
		return "", "", fmt.Errorf("%w: no host in request target", errBadHost)
	case path == "" && method == "OPTIONS":
		path = "*"
	case path == "" || path[0] == '?':
		path = "/" + path
	}
	return auth, path, nil
}

// framing is how a request's body is delimited.
type framing struct {
	chunked   bool
	length    int64
	hasLength bool
}

// requestFraming reads Transfer-Encoding and Content-Length strictly: chunked is
// the only coding, never with a Content-Length, and repeated lengths must agree.
func requestFraming(h *requestHead) (framing, error) {
	te, cl := h.tokens("Transfer-Encoding"), h.values("Content-Length")
	if len(h.values("Transfer-Encoding")) > 0 {
		switch {
		case len(cl) > 0:
			return framing{}, fmt.Errorf("%w: both Transfer-Encoding and Content-Length", errBadRequest)
		case h.minor == 0:
			return framing{}, fmt.Errorf("%w: Transfer-Encoding in an HTTP/1.0 request", errBadRequest)
		case len(te) != 1 || te[0] != "chunked":
			return framing{}, fmt.Errorf("%w: Transfer-Encoding %q (only chunked)", errBadRequest, strings.Join(te, ", "))
		}
		return framing{chunked: true}, nil
	}
	f := framing{length: -1}
	for _, v := range cl {
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if p == "" || len(p) > 18 || strings.Trim(p, "0123456789") != "" {
				return framing{}, fmt.Errorf("%w: Content-Length %q", errBadRequest, v)
			}
			n, _ := strconv.ParseInt(p, 10, 64)
			if f.hasLength && n != f.length {
				return framing{}, fmt.Errorf("%w: Content-Length values differ", errBadRequest)
			}
			f.length, f.hasLength = n, true
		}
	}
	if !f.hasLength {
		f.length = 0
	}
	return f, nil
}

// copyChunked copies a chunked body from src to dst, re-framed: chunk extensions
// and trailer fields are dropped, sizes are checked.
func copyChunked(dst *bufio.Writer, src *bufio.Reader) error {
	lr := &lineReader{br: src, budget: 1 << 62}
	for {
		l, err := lr.line()
		if err != nil {
			return err
		}
		sz, _, _ := strings.Cut(l, ";")
		sz = strings.TrimRight(sz, " \t")
		if sz == "" || len(sz) > 15 || strings.Trim(strings.ToLower(sz), "0123456789abcdef") != "" {
			return fmt.Errorf("%w: chunk size %q", errBadRequest, sz)
		}
		n, _ := strconv.ParseInt(sz, 16, 64)
		fmt.Fprintf(dst, "%x\r\n", n)
		if n == 0 {
			for trailers := 0; ; trailers++ {
				l, err := lr.line()
				if err != nil {
					return err
				}
				if l == "" {
					break
				}
				if trailers == maxHeaders {
					return fmt.Errorf("%w: too many trailer fields", errBadRequest)
				}
			}
			dst.WriteString("\r\n")
			return dst.Flush()
		}
		if _, err := io.CopyN(dst, src, n); err != nil {
			return err
		}
		var crlf [2]byte
		if _, err := io.ReadFull(src, crlf[:]); err != nil {
			return err
		}
		if crlf != [2]byte{'\r', '\n'} {
			return fmt.Errorf("%w: chunk not followed by CRLF", errBadRequest)
		}
		dst.WriteString("\r\n")
		if err := dst.Flush(); err != nil {
			return err
		}
	}
}
