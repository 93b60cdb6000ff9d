package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
)

// oldReadResponse is how the proxy read a response before it had its own
// reader, kept as the reference: the head within the buffer, the tokens of the
// Connection fields from the raw head, then net/http.
func oldReadResponse(br *bufio.Reader, method string) (*http.Response, []string, error) {
	var head []byte
	for n := 1; ; {
		var err error
		head, err = br.Peek(n)
		if i := bytes.Index(head, []byte("\n\r\n")); i >= 0 {
			head = head[:i]
			break
		}
		if i := bytes.Index(head, []byte("\n\n")); i >= 0 {
			head = head[:i]
			break
		}
		if err != nil {
			return nil, nil, err
		}
		n = max(len(head)+1, br.Buffered())
	}
	var named []string
	for _, l := range strings.Split(string(head), "\n") {
		if name, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(name, "Connection") {
			for _, tok := range strings.Split(v, ",") {
				named = append(named, strings.TrimSpace(tok))
			}
		}
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	return resp, named, err
}

// oldCleanHeader is the proxy's former cleaning of a net/http response header.
func oldCleanHeader(hd http.Header, named []string) {
	for _, tok := range named {
		if tok != "" {
			hd.Del(tok)
		}
	}
	for k := range hd {
		if lk := strings.ToLower(k); hopByHop[lk] || strings.HasPrefix(lk, "proxy-") {
			delete(hd, k)
		}
	}
}

// netHTTPKind is the framing net/http chose for a response's body.
func netHTTPKind(r *http.Response) bodyKind {
	switch {
	case r.Body == http.NoBody:
		return bodyNone
	case len(r.TransferEncoding) > 0 && r.TransferEncoding[0] == "chunked":
		return bodyChunked
	case r.ContentLength > 0:
		return bodyLength
	}
	return bodyUntilClose
}

// stricter reports whether readResponse refuses what net/http accepted on
// purpose (see readResponse): a signed status code, a control byte in the
// reason phrase, white space between a field name and its colon.
func stricter(r *http.Response) bool {
	code, reason, _ := strings.Cut(r.Status, " ")
	if strings.Trim(code, "0123456789") != "" {
		return true
	}
	for i := 0; i < len(reason); i++ {
		if c := reason[i]; c < ' ' && c != '\t' || c == 0x7f {
			return true
		}
	}
	for k := range r.Header {
		if strings.Contains(k, " ") {
			return true
		}
	}
	return false
}

// withoutFraming returns a copy of hd without the fields the writer sets itself.
func withoutFraming(hd http.Header) http.Header {
	hd = hd.Clone()
	for _, k := range []string{"Content-Length", "Transfer-Encoding", "Connection"} {
		delete(hd, k)
	}
	return hd
}

var responseSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\n\r\n5;a=b\r\nhello\r\n6 ; c\r\n world\r\n0\r\nX-T: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chun\u212aed\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Content-Length\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-A, x-b\r\n\r\n1\r\na\r\n0\r\nX-A: 1\r\nX-B: 2\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nabc",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + strings.Repeat("x", 4000) + "\r\na\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\n\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
	"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nContent-Length:  5 \r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nContent-Length: 0x5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\nContent-Length: 3\r\n\r\n",
	"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nraw",
	"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n",
	"HTTP/1.1 200 OK\r\n\r\nuntil close",
	"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\nuntil close",
	"HTTP/2.0 200 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/0.9 200 OK\r\n\r\nx",
	"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 +20 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 -20 OK\r\n\r\n",
	"HTTP/1.1 020 OK\r\n\r\n",
	"HTTP/1.1  200  Fine\r\n\r\n",
	"HTTP/1.1 200 O\x01K\r\n\r\n",
	"HTTP/1.1 200 O\rK\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX-A: 1\r\n  folded\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\n folded first\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX A: b\r\n\r\n",
	"HTTP/1.1 200 OK\r\nPragma: no-cache\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 1\r\nProxy-Auth: x\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\nContent-Length: 1\n\nx",
	"\r\n\r\n",
	"",
	"HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", 70000) + "\r\n\r\n",
}

// FuzzResponseFraming reads arbitrary responses with readResponse and with the
// proxy's former net/http reader and requires the same verdict: both refuse
// (or readResponse refuses what stricter names), or both accept with the same
// status and body framing. The accepted response is then relayed, and what the
// client receives, read by net/http, must carry the same fields (but for the
// hop-by-hop ones) and the same body bytes as net/http read from the upstream,
// or both fail.
func FuzzResponseFraming(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s), false, false)
	}
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"), true, false)
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 7\r\n\r\n"), true, false)
	f.Add([]byte("HTTP/1.1 200 OK\r\n\r\n"), true, false)
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"), true, false)
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"), false, true)
	f.Fuzz(func(t *testing.T, data []byte, head, http10 bool) {
		method := "GET"
		if head {
			method = "HEAD"
		}
		want, named, werr := oldReadResponse(bufio.NewReaderSize(bytes.NewReader(data), maxHead), method)
		src := bytes.NewReader(data)
		ubr := bufio.NewReaderSize(src, maxHead)
		got, gerr := readResponse(ubr, method)
		switch {
		case werr != nil && gerr != nil:
			return
		case werr != nil:
			t.Fatalf("accepted what net/http refuses (%v)\n%q", werr, data)
		case gerr != nil:
			if stricter(want) {
				return
			}
			t.Fatalf("refused what net/http accepts: %v\n%q", gerr, data)
		}
		kind := got.body
		if kind == bodyLength && got.length == 0 {
			kind = bodyNone
		}
		if got.status != want.StatusCode || kind != netHTTPKind(want) {
			t.Fatalf("status %d, body %d; net/http: %d, %d\n%q", got.status, kind, want.StatusCode, netHTTPKind(want), data)
		}
		if kind == bodyLength && got.length != want.ContentLength {
			t.Fatalf("length %d, net/http %d\n%q", got.length, want.ContentLength, data)
		}

		got.clean()
		keep := !http10 && got.body != bodyUntilClose && got.status != 101
		var out bytes.Buffer
		rerr := relayResponse(bufio.NewWriter(&out), &out, ubr, src, got, http10, keep)
		wantBody, wantErr := io.ReadAll(want.Body)
		client, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out.Bytes())), &http.Request{Method: method})
		if err != nil {
			t.Fatalf("the client cannot read the relayed head: %v\n%q\nrelayed %q", err, data, out.Bytes())
		}
		gotBody, gotErr := io.ReadAll(client.Body)
		if (wantErr != nil) != (rerr != nil) {
			t.Fatalf("relay error %v; net/http body error %v\n%q", rerr, wantErr, data)
		}
		if rerr != nil && gotErr == nil && got.sendAs(http10) != bodyUntilClose {
			t.Fatalf("relay failed (%v) but the client read a complete body\n%q\nrelayed %q", rerr, data, out.Bytes())
		}
		if !bytes.Equal(gotBody, wantBody) {
			t.Fatalf("client body %q, net/http read %q (%v)\n%q", gotBody, wantBody, wantErr, data)
		}
		if client.StatusCode != want.StatusCode || client.Close == keep {
			t.Fatalf("client got status %d close %v, want %d close %v\n%q", client.StatusCode, client.Close, want.StatusCode, !keep, out.Bytes())
		}
		oldCleanHeader(want.Header, named)
		wh, ch := withoutFraming(want.Header), withoutFraming(client.Header)
		if len(wh) != len(ch) {
			t.Fatalf("client header %q, want %q\n%q", ch, wh, data)
		}
		for k, v := range wh {
			for i := range v {
				v[i] = textproto.TrimString(v[i]) // as Header.Write did
			}
			if strings.Join(ch[k], "\n") != strings.Join(v, "\n") {
				t.Fatalf("client header %q, want %q\n%q", ch, wh, data)
			}
		}
		if head && bodyAllowed(got.status) && !got.chunked && client.ContentLength != want.ContentLength {
			t.Fatalf("HEAD: client Content-Length %d, want %d\n%q", client.ContentLength, want.ContentLength, out.Bytes())
		}
	})
}

// What the client receives for each framing of the upstream's response.
func TestRelayResponse(t *testing.T) {
	tests := []struct {
		name, method string
		http10       bool // the client's request was HTTP/1.0
		upstream     string
		want         string // what the client receives
		fails        bool   // the relay reports an error (the body is incomplete)
	}{
		{"length", "GET", false,
			"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhelloEXTRA",
			"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello", false},
		{"repeated equal lengths", "GET", false,
			"HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length:  5\r\n\r\nhello",
			"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false},
		{"zero length", "GET", false,
			"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
			"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false},
		{"short length", "GET", false,
			"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello",
			"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", true},
		{"chunked, length dropped, extensions and trailer dropped", "GET", false,
			"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: Chunked\r\nTrailer: X-T\r\n\r\n5;a=b\r\nhello\r\n6;c \t\r\n world\r\n0\r\nX-T: 1\r\n\r\nNEXT",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", false},
		{"chunked, cut short", "GET", false,
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n wor",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n wor", true},
		{"chunked, bare LF", "GET", false,
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", true},
		{"chunked, bad trailer", "GET", false,
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T 1\r\n\r\n",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n", true},
		{"chunked to an HTTP/1.0 client", "GET", true,
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
			"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello world", false},
		{"until close", "GET", false,
			"HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\nrest of\r\n\r\nthe stream",
			"HTTP/1.1 200 OK\r\nX-A: 1\r\nConnection: close\r\n\r\nrest of\r\n\r\nthe stream", false},
		{"HTTP/1.0 upstream ignores Transfer-Encoding", "GET", false,
			"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
			"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n", false},
		{"HTTP/1.0 upstream with a length", "GET", false,
			"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nold",
			"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nold", false},
		{"HEAD with a length", "HEAD", false,
			"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n",
			"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", false},
		{"HEAD with a zero length", "HEAD", false,
			"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
			"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false},
		{"HEAD, chunked", "HEAD", false,
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 7\r\n\r\n",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false},
		{"HEAD, chunked, HTTP/1.0 client", "HEAD", true,
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
			"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", false},
		{"HEAD without framing stays open", "HEAD", false,
			"HTTP/1.1 200 OK\r\n\r\n",
			"HTTP/1.1 200 OK\r\n\r\n", false},
		{"204 with a body", "GET", false,
			"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
			"HTTP/1.1 204 No Content\r\n\r\n", false},
		{"304 with a length", "GET", false,
			"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 100\r\n\r\n",
			"HTTP/1.1 304 Not Modified\r\nEtag: \"x\"\r\n\r\n", false},
		{"304 to a POST", "POST", false,
			"HTTP/1.1 304 Not Modified\r\n\r\n",
			"HTTP/1.1 304 Not Modified\r\n\r\n", false},
		{"101 closes", "GET", false,
			"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nframes",
			"HTTP/1.1 101 Switching Protocols\r\nConnection: close\r\n\r\n", false},
		{"no reason phrase", "GET", false,
			"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok",
			"HTTP/1.1 200 \r\nContent-Length: 2\r\n\r\nok", false},
		{"code below 100", "GET", false,
			"HTTP/1.1 020 Odd\r\nContent-Length: 2\r\n\r\nok",
			"HTTP/1.1 020 Odd\r\nContent-Length: 2\r\n\r\nok", false},
		{"fields cleaned, canonical, sorted, folding joined", "GET", false,
			"HTTP/1.1 200 Fine\r\nx-b: 2\r\nConnection: X-Hop, close\r\nX-Hop: 1\r\nKeep-Alive: timeout=1\r\nProxy-Authenticate: Basic\r\nUpgrade: h2c\r\nTrailer: X-T\r\nTE: trailers\r\nX-A: 1\r\n  more\r\nx-b: 3\r\nContent-Length: 2\r\n\r\nok",
			"HTTP/1.1 200 Fine\r\nX-A: 1 more\r\nX-B: 2\r\nX-B: 3\r\nContent-Length: 2\r\n\r\nok", false},
		{"Pragma relayed as sent", "GET", false,
			"HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 0\r\n\r\n",
			"HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 0\r\n\r\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.NewReader(tt.upstream)
			ubr := bufio.NewReaderSize(src, maxHead)
			r, err := readResponse(ubr, tt.method)
			if err != nil {
				t.Fatal(err)
			}
			r.clean()
			keep := !tt.http10 && r.body != bodyUntilClose && r.status != 101
			var out bytes.Buffer
			err = relayResponse(bufio.NewWriter(&out), &out, ubr, src, r, tt.http10, keep)
			if (err != nil) != tt.fails {
				t.Errorf("relay error %v, want failure %v", err, tt.fails)
			}
			if out.String() != tt.want {
				t.Errorf("client got\n%q\nwant\n%q", out.String(), tt.want)
			}
		})
	}
}

// An informational response is relayed as a head alone, before the final one.
func TestWriteInterim(t *testing.T) {
	for _, tt := range []struct{ upstream, want string }{
		{"HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 100 Continue\r\n\r\n"},
		{"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\nConnection: x-a\r\nX-A: 1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
			"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"},
		{"HTTP/1.0 102 Processing\r\n\r\n", "HTTP/1.1 102 Processing\r\n\r\n"},
	} {
		r, err := readResponse(bufio.NewReader(strings.NewReader(tt.upstream)), "POST")
		if err != nil || !r.interim() {
			t.Fatalf("%q: %v, interim %v", tt.upstream, err, r != nil && r.interim())
		}
		r.clean()
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		r.writeHead(w, false, true)
		w.Flush()
		if out.String() != tt.want {
			t.Errorf("client got %q, want %q", out.String(), tt.want)
		}
	}
}

// Heads the proxy answers with 502, as net/http refuses them, and those it
// refuses on purpose where net/http does not.
func TestReadResponseRefuses(t *testing.T) {
	tests := []struct {
		name, head string
		netHTTP    bool // net/http accepts it
	}{
		{"nothing", "", false},
		{"unterminated head", "HTTP/1.1 200 OK\r\nX-A: 1\r\n", false},
		{"head too long", "HTTP/1.1 200 OK\r\nX-A: " + strings.Repeat("a", maxHead) + "\r\n\r\n", false},
		{"no status code", "HTTP/1.1\r\n\r\n", false},
		{"short status code", "HTTP/1.1 20 OK\r\n\r\n", false},
		{"negative status code", "HTTP/1.1 -20 OK\r\n\r\n", false},
		{"bad version", "HTTP/1.10 200 OK\r\n\r\n", false},
		{"not HTTP", "ICY 200 OK\r\n\r\n", false},
		{"first field line folded", "HTTP/1.1 200 OK\r\n X-A: 1\r\n\r\n", false},
		{"bad field name", "HTTP/1.1 200 OK\r\nX(A): 1\r\n\r\n", false},
		{"NUL in a value", "HTTP/1.1 200 OK\r\nX-A: a\x00b\r\n\r\n", false},
		{"CR in a value", "HTTP/1.1 200 OK\r\nX-A: a\rb\r\n\r\n", false},
		{"no colon", "HTTP/1.1 200 OK\r\nX-A\r\n\r\n", false},
		{"two transfer codings", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", false},
		{"two Transfer-Encoding fields", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", false},
		{"Kelvin sign in chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chun\u212aed\r\n\r\n", false},
		{"empty Transfer-Encoding", "HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n\r\n", false},
		{"lengths differ", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", false},
		{"length list", "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n", false},
		{"signed length", "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n", false},
		{"empty length", "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", false},
		{"length too large", "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\n", false},
		{"bad length on a 204", "HTTP/1.1 204 No Content\r\nContent-Length: x\r\n\r\n", false},
		{"bad length with chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: x\r\n\r\n", false},
		{"Trailer names Content-Length", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: x, content-length\r\n\r\n", false},

		{"signed status code", "HTTP/1.1 +20 OK\r\n\r\n", true},
		{"control byte in the reason", "HTTP/1.1 200 O\x01K\r\nContent-Length: 0\r\n\r\n", true},
		{"CR in the reason", "HTTP/1.1 200 O\rK\r\nContent-Length: 0\r\n\r\n", true},
		{"space before a colon", "HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello", true},
		{"space before a Transfer-Encoding colon", "HTTP/1.1 200 OK\r\nTransfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\nhello", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := readResponse(bufio.NewReaderSize(strings.NewReader(tt.head), maxHead), "GET"); err == nil {
				t.Fatalf("accepted %q", tt.head)
			}
			_, _, err := oldReadResponse(bufio.NewReaderSize(strings.NewReader(tt.head), maxHead), "GET")
			if (err == nil) != tt.netHTTP {
				t.Fatalf("net/http error %v; test says it accepts: %v", err, tt.netHTTP)
			}
		})
	}
}

// The proxy's refusals keep the reason phrases net/http gives their statuses.
func TestStatusText(t *testing.T) {
	for reason, ri := range reasons {
		if ri.status == 0 {
			continue
		}
		if got, want := statusText[ri.status], http.StatusText(ri.status); got != want {
			t.Errorf("%s: status %d text %q, want %q", reason, ri.status, got, want)
		}
	}
}

// The proxy's own answers, byte for byte.
func TestRefuseHTTPBytes(t *testing.T) {
	tests := []struct {
		r          refusal
		head, body string // head without Content-Length
	}{
		{refusal{reason: ReasonNotAllowed, host: "evil.example", port: 80, rule: "no rule allows this host", hint: "allow with --allow-net evil.example"},
			"HTTP/1.1 403 Forbidden\r\nX-Moat-Blocked: not-allowed\r\nContent-Type: text/plain; charset=utf-8\r\n",
			"moat: blocked evil.example:80: not-allowed\nmoat: rule: no rule allows this host\nmoat: hint: allow with --allow-net evil.example\n"},
		{refusal{reason: ReasonBadRequest, detail: "obsolete line folding"},
			"HTTP/1.1 400 Bad Request\r\nX-Moat-Blocked: bad-request\r\nContent-Type: text/plain; charset=utf-8\r\n",
			"moat: blocked the request: bad-request\nmoat: detail: obsolete line folding\n"},
		{refusal{reason: ReasonUpstreamFailed, host: "a.example", port: 8080, detail: "connection closed before a response"},
			"HTTP/1.1 502 Bad Gateway\r\nX-Moat-Error: upstream-failed\r\nContent-Type: text/plain; charset=utf-8\r\n",
			"moat: could not reach a.example:8080: upstream-failed\nmoat: detail: connection closed before a response\n"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		bw := bufio.NewWriter(&out)
		(&Server{}).refuseHTTP(bw, "http", &tt.r)
		want := tt.head + "Content-Length: " + strconv.Itoa(len(tt.body)) + "\r\nConnection: close\r\n\r\n" + tt.body
		if out.String() != want {
			t.Errorf("refusal\n%q\nwant\n%q", out.String(), want)
		}
	}
}
