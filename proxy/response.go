package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
)

// bodyKind is how a response body is delimited (RFC 9112 6.3).
type bodyKind int

const (
	bodyNone       bodyKind = iota // HEAD, 1xx, 204, 304
	bodyLength                     // Content-Length (0 included)
	bodyChunked                    // Transfer-Encoding: chunked
	bodyUntilClose                 // neither: the body ends when the upstream closes
)

// response is an upstream's response head, as readResponse parsed it.
type response struct {
	status  int
	reason  string               // the reason phrase, as sent
	header  textproto.MIMEHeader // without Transfer-Encoding and Content-Length
	chunked bool                 // Transfer-Encoding: chunked, from an HTTP/1.1 or later upstream
	length  int64                // Content-Length, -1 for none
	head    bool                 // the response to a HEAD request
	body    bodyKind
}

// readResponse reads one response head from an upstream the way net/http's
// ReadResponse reads it, so that a response is refused or framed exactly as
// before the proxy had its own reader:
//
//   - The head must end within br's buffer (maxHead).
//   - Status line: "HTTP/d.d", one or more spaces, a three-digit code, and
//     the reason after one more space. HTTP/1.0 and earlier ignore
//     Transfer-Encoding.
//   - Fields are read by net/textproto: token names, no control bytes but tab
//     in values, obsolete line folding replaced by a space, no leading white
//     space before the first field.
//   - Transfer-Encoding must be one field saying "chunked" (any ASCII case).
//   - Content-Length: digits only after trimming white space, below 2^63;
//     repeated fields must carry the same value.
//   - With chunked, Trailer must not name Transfer-Encoding, Trailer or
//     Content-Length.
//   - The body: none for HEAD, 1xx, 204 and 304; then chunked if
//     Transfer-Encoding says so (Content-Length is ignored); then
//     Content-Length; else until the upstream closes.
//
// Deliberately stricter than net/http, as RFC 9112 asks:
//
//   - A status code with a sign ("+20") is refused: it is three digits.
//   - Control bytes but tab in the reason phrase are refused, as they are in
//     field values.
//   - A field name followed by white space before its colon ("Content-Length :
//     5") is refused: net/http keeps it as a field named "Content-Length "
//     and the proxy would relay it, for the client to frame the body by it.
//     RFC 9112 5.1 tells a proxy to remove the space or refuse.
//
// Deliberately not done: net/http adds "Cache-Control: no-cache" to a head with
// "Pragma: no-cache" and no Cache-Control; the proxy relays the head as sent,
// which means the same to every cache (RFC 9111 5.4).
func readResponse(br *bufio.Reader, method string) (*response, error) {
	if err := peekHead(br); err != nil {
		return nil, err
	}
	tp := textproto.NewReader(br)
	line, err := tp.ReadLine()
	if err != nil {
		return nil, unexpectedEOF(err)
	}
	proto, status, ok := strings.Cut(line, " ")
	if !ok {
		return nil, fmt.Errorf("malformed status line %q", line)
	}
	code, reason, _ := strings.Cut(strings.TrimLeft(status, " "), " ")
	if len(code) != 3 || strings.Trim(code, "0123456789") != "" {
		return nil, fmt.Errorf("malformed status code %q", code)
	}
	major, minor, ok := parseHTTPVersion(proto)
	if !ok {
		return nil, fmt.Errorf("malformed HTTP version %q", proto)
	}
	for i := 0; i < len(reason); i++ {
		if c := reason[i]; c < ' ' && c != '\t' || c == 0x7f {
			return nil, fmt.Errorf("control byte in reason phrase %q", reason)
		}
	}
	hd, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, unexpectedEOF(err)
	}
	for k := range hd {
		if strings.IndexByte(k, ' ') >= 0 {
			return nil, fmt.Errorf("white space between header field name %q and its colon", strings.TrimRight(k, " "))
		}
	}
	r := &response{reason: reason, header: hd, length: -1, head: method == "HEAD"}
	r.status, _ = strconv.Atoi(code)

	// Transfer-Encoding, as net/http's parseTransferEncoding.
	if te, ok := hd["Transfer-Encoding"]; ok {
		delete(hd, "Transfer-Encoding")
		if major > 1 || major == 1 && minor >= 1 {
			if len(te) != 1 {
				return nil, fmt.Errorf("too many transfer encodings: %q", te)
			}
			if !isChunkedCoding(te[0]) {
				return nil, fmt.Errorf("unsupported transfer encoding %q", te[0])
			}
			r.chunked = true
		}
	}
	// Content-Length, as net/http's fixLength and parseContentLength.
	if cl := hd["Content-Length"]; len(cl) > 0 {
		first := textproto.TrimString(cl[0])
		for _, v := range cl[1:] {
			if textproto.TrimString(v) != first {
				return nil, fmt.Errorf("differing Content-Length fields: %q", cl)
			}
		}
		n, err := strconv.ParseUint(first, 10, 63)
		if err != nil {
			return nil, fmt.Errorf("bad Content-Length %q", first)
		}
		r.length = int64(n)
	}
	delete(hd, "Content-Length")
	// Trailer, as net/http's fixTrailer.
	if r.chunked {
		for _, v := range hd["Trailer"] {
			for _, k := range strings.Split(v, ",") {
				switch textproto.CanonicalMIMEHeaderKey(textproto.TrimString(k)) {
				case "Transfer-Encoding", "Trailer", "Content-Length":
					return nil, fmt.Errorf("bad trailer key %q", textproto.TrimString(k))
				}
			}
		}
	}
	switch {
	case r.head || !bodyAllowed(r.status):
		r.body = bodyNone
	case r.chunked:
		r.body = bodyChunked
	case r.length >= 0:
		r.body = bodyLength
	default:
		r.body = bodyUntilClose
	}
	return r, nil
}

// peekHead makes sure a whole response head is in br's buffer: a line ending
// followed by an empty line. A longer head is refused.
func peekHead(br *bufio.Reader) error {
	for n := 1; ; {
		head, err := br.Peek(n)
		if bytes.Contains(head, []byte("\n\r\n")) || bytes.Contains(head, []byte("\n\n")) {
			return nil
		}
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return fmt.Errorf("response head longer than %d bytes", br.Size())
			}
			if len(head) == 0 && err == io.EOF {
				return errors.New("connection closed before a response")
			}
			return fmt.Errorf("reading the response head: %w", unexpectedEOF(err))
		}
		n = max(len(head)+1, br.Buffered()) // all that is there, else one byte more
	}
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseHTTPVersion parses "HTTP/d.d", as net/http's ParseHTTPVersion.
func parseHTTPVersion(v string) (major, minor int, ok bool) {
	if len(v) != len("HTTP/1.1") || !strings.HasPrefix(v, "HTTP/") || v[6] != '.' ||
		v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9' {
		return 0, 0, false
	}
	return int(v[5] - '0'), int(v[7] - '0'), true
}

// isChunkedCoding reports whether s is "chunked" in any ASCII case (not
// Unicode: "chun\u212Aed", with a Kelvin sign, is not chunked).
func isChunkedCoding(s string) bool {
	const chunked = "chunked"
	if len(s) != len(chunked) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != chunked[i] {
			return false
		}
	}
	return true
}

// bodyAllowed reports whether a response with this status may have a body.
func bodyAllowed(status int) bool {
	return !(status >= 100 && status < 200 || status == 204 || status == 304)
}

// interim reports whether r is an informational response the final one follows.
// 101 Switching Protocols is final: the connection is not HTTP after it.
func (r *response) interim() bool {
	return r.status >= 100 && r.status < 200 && r.status != 101
}

// clean drops the hop-by-hop and Proxy-* fields and the fields the Connection
// fields name.
func (r *response) clean() {
	for _, v := range r.header["Connection"] {
		for _, tok := range strings.Split(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				r.header.Del(tok)
			}
		}
	}
	for k := range r.header {
		if lk := strings.ToLower(k); hopByHop[lk] || strings.HasPrefix(lk, "proxy-") {
			delete(r.header, k)
		}
	}
}

// sendAs is how the body is framed for the client: as the upstream framed it,
// except that a client that sent an HTTP/1.0 request, which cannot read
// chunked, gets the chunks' data until the connection closes.
func (r *response) sendAs(http10 bool) bodyKind {
	if r.body == bodyChunked && http10 {
		return bodyUntilClose
	}
	return r.body
}

// writeHead writes the head for the client: the status line as HTTP/1.1 with
// the upstream's code and reason, the fields in the order of their names (as
// net/http's Header.Write: canonical names, values trimmed), then
// Connection: close unless keep, then the framing fields:
//
//	1xx, 204, 304                       none
//	HEAD, upstream sent chunked         Transfer-Encoding: chunked (none to HTTP/1.0)
//	HEAD, upstream sent a length        Content-Length: n
//	HEAD, neither                       none
//	body of length n                    Content-Length: n (0 included)
//	chunked body                        Transfer-Encoding: chunked
//	until close, or chunked to HTTP/1.0 none (the caller passes keep false)
func (r *response) writeHead(w *bufio.Writer, http10, keep bool) {
	w.WriteString("HTTP/1.1 ")
	w.Write([]byte{'0' + byte(r.status/100), '0' + byte(r.status/10%10), '0' + byte(r.status%10), ' '})
	w.WriteString(r.reason)
	w.WriteString("\r\n")
	keys := make([]string, 0, len(r.header))
	for k := range r.header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range r.header[k] {
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(textproto.TrimString(v)) // folding may leave a space at the end
			w.WriteString("\r\n")
		}
	}
	if !keep {
		w.WriteString("Connection: close\r\n")
	}
	switch {
	case !bodyAllowed(r.status):
	case r.head && r.chunked:
		if !http10 {
			w.WriteString("Transfer-Encoding: chunked\r\n")
		}
	case r.head && r.length >= 0:
		w.WriteString("Content-Length: " + strconv.FormatInt(r.length, 10) + "\r\n")
	case r.head:
	case r.sendAs(http10) == bodyLength:
		w.WriteString("Content-Length: " + strconv.FormatInt(r.length, 10) + "\r\n")
	case r.sendAs(http10) == bodyChunked:
		w.WriteString("Transfer-Encoding: chunked\r\n")
	}
	w.WriteString("\r\n")
}

// relayResponse writes r to the client: the head through bw, then the body from
// ubr, which reads from the upstream connection up. A body of known length or
// one that ends at close goes to the client connection c directly once ubr's
// buffer is drained, which lets Linux splice it between the two sockets
// instead of copying it through user space. A chunked body is re-framed chunk
// by chunk (extensions and trailer fields dropped), flushed whenever the
// upstream has sent no more for now. An error means the client did not get the
// whole body: a short body of known length or a chunked body without its last
// chunk, which the client sees as incomplete once the connection closes.
func relayResponse(bw *bufio.Writer, c io.Writer, ubr *bufio.Reader, up io.Reader, r *response, http10, keep bool) error {
	r.writeHead(bw, http10, keep)
	if err := bw.Flush(); err != nil {
		return err
	}
	switch r.sendAs(http10) {
	case bodyLength:
		return relayN(c, ubr, up, r.length)
	case bodyUntilClose:
		if r.body == bodyChunked {
			return relayChunked(bw, ubr, false)
		}
		if b := ubr.Buffered(); b > 0 {
			if _, err := io.CopyN(c, ubr, int64(b)); err != nil {
				return err
			}
		}
		_, err := io.Copy(c, up)
		return err
	case bodyChunked:
		return relayChunked(bw, ubr, true)
	}
	return nil
}

// relayN copies n bytes to c: what ubr has buffered, then straight from up.
func relayN(c io.Writer, ubr *bufio.Reader, up io.Reader, n int64) error {
	if b := int64(ubr.Buffered()); b > 0 && n > 0 {
		m, err := io.CopyN(c, ubr, min(b, n))
		if err != nil {
			return err
		}
		n -= m
	}
	if n > 0 {
		if _, err := io.CopyN(c, up, n); err != nil {
			return unexpectedEOF(err)
		}
	}
	return nil
}

// maxChunkLine is the longest chunk-size line, extensions included, as in
// net/http.
const maxChunkLine = 4096

// relayChunked copies a chunked body from ubr to bw, with chunk framing when
// chunked is true and as plain data otherwise. It reads the body exactly as
// net/http's chunked reader does: CRLF line ends, no other CR in a size line,
// sizes of up to 16 hex digits with white space allowed before the extension,
// at most 16 KiB of extensions beyond 16 bytes per chunk and twice its data,
// then the trailer section as a header (net/http's readTrailer). What was read
// is flushed to the client also when the body turns out malformed: a chunked
// body then lacks its last chunk, which tells the client it is incomplete.
func relayChunked(bw *bufio.Writer, ubr *bufio.Reader, chunked bool) error {
	err := copyChunks(bw, ubr, chunked)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func copyChunks(bw *bufio.Writer, ubr *bufio.Reader, chunked bool) error {
	var excess int64
	for {
		line, err := ubr.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return errors.New("chunk size line too long")
			}
			return unexpectedEOF(err)
		}
		if i := bytes.IndexByte(line, '\r'); i < 0 {
			return errors.New("chunk size line ends with a bare LF")
		} else if i != len(line)-2 {
			return errors.New("CR in a chunk size line")
		}
		line = line[:len(line)-2]
		if len(line) >= maxChunkLine {
			return errors.New("chunk size line too long")
		}
		excess += int64(len(line)) + 2
		line = bytes.TrimRight(line, " \t")
		line, _, _ = bytes.Cut(line, []byte(";"))
		n, err := parseChunkSize(line)
		if err != nil {
			return err
		}
		// The same arithmetic as net/http, wrapping included.
		excess -= 16 + (2 * int64(n))
		excess = max(excess, 0)
		if excess > 16<<10 {
			return errors.New("chunked encoding contains too much non-data")
		}
		if n == 0 {
			if err := skipTrailer(ubr); err != nil {
				return err
			}
			if chunked {
				bw.WriteString("0\r\n\r\n")
			}
			return nil
		}
		if chunked {
			bw.WriteString(strconv.FormatUint(n, 16) + "\r\n")
		}
		for n > 0 {
			k := min(n, 1<<62)
			if _, err := io.CopyN(bw, ubr, int64(k)); err != nil {
				return unexpectedEOF(err)
			}
			n -= k
		}
		var crlf [2]byte
		if _, err := io.ReadFull(ubr, crlf[:]); err != nil {
			return unexpectedEOF(err)
		}
		if crlf != [2]byte{'\r', '\n'} {
			return errors.New("chunk data not followed by CRLF")
		}
		if chunked {
			bw.WriteString("\r\n")
		}
		if ubr.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return err
			}
		}
	}
}

// parseChunkSize parses 1 to 16 hex digits.
func parseChunkSize(s []byte) (uint64, error) {
	if len(s) == 0 {
		return 0, errors.New("empty chunk size")
	}
	if len(s) > 16 {
		return 0, errors.New("chunk size too large")
	}
	var n uint64
	for _, c := range s {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, fmt.Errorf("chunk size %q is not hex", s)
		}
		n = n<<4 | uint64(c)
	}
	return n, nil
}

// skipTrailer reads the trailer section after the last chunk, as net/http's
// readTrailer does: an empty line, or fields whose end (CRLF CRLF) is within
// ubr's buffer and that net/textproto reads.
func skipTrailer(ubr *bufio.Reader) error {
	buf, err := ubr.Peek(2)
	if bytes.Equal(buf, []byte("\r\n")) {
		ubr.Discard(2)
		return nil
	}
	if len(buf) < 2 {
		return errors.New("unexpected EOF reading the trailer")
	}
	if err != nil {
		return err
	}
	for n := 4; ; n++ {
		buf, err := ubr.Peek(n)
		if bytes.HasSuffix(buf, []byte("\r\n\r\n")) {
			break
		}
		if err != nil {
			return errors.New("trailer section too long")
		}
	}
	if _, err := textproto.NewReader(ubr).ReadMIMEHeader(); err != nil {
		if err == io.EOF {
			return errors.New("unexpected EOF reading the trailer")
		}
		return err
	}
	return nil
}
