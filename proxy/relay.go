package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// tunnel relays between client and up once the client's first bytes pass: a TLS
// ClientHello must name the destination. pre holds client bytes the handshake
// parser already buffered. Both directions are copied with io.Copy between the
// connections themselves, so two *net.TCPConn use splice(2); EOF in one
// direction half-closes the other side's write half, an error closes both.
// The caller closes both connections afterwards.
func (s *Server) tunnel(proto string, client, up net.Conn, pre []byte, d *dest, ap netip.AddrPort) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := io.Copy(client, up)
		finish(client, up, err)
	}()
	fwd, r, err := s.firstBytes(client, pre, d)
	if r != nil {
		r.addr = ap.String()
		s.logRefusal(proto, r)
		client.Close()
		up.Close()
		<-done
		return
	}
	if len(fwd) > 0 {
		_, err = up.Write(fwd)
	}
	if err == nil {
		_, err = io.Copy(up, client)
	}
	if err == io.EOF {
		err = nil
	}
	finish(up, client, err)
	<-done
}

// finish ends one direction of a relay into dst: a clean EOF half-closes dst,
// an error closes both connections so the other direction ends too.
func finish(dst, src net.Conn, err error) {
	if err == nil {
		if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			return
		}
	}
	dst.Close()
	src.Close()
}

// firstBytes reads the client's first bytes (pre, or one byte read now; no
// deadline: a quiet client on an established tunnel is fine) and, when they
// start a TLS handshake record, the whole ClientHello, under the handshake
// timeout. It returns the bytes to forward, or a refusal.
func (s *Server) firstBytes(client net.Conn, pre []byte, d *dest) ([]byte, *refusal, error) {
	for len(pre) == 0 {
		var b [1]byte
		n, err := client.Read(b[:])
		if n > 0 {
			pre = b[:n]
			break
		}
		if err != nil {
			return nil, nil, err
		}
	}
	client.SetReadDeadline(time.Now().Add(s.handshakeTimeout()))
	defer client.SetReadDeadline(time.Time{})
	if pre[0]&0x80 != 0 {
		// Perhaps a ClientHello in SSL 2.0's record format, which servers that
		// speak TLS 1.0 to 1.2 may still take: it can't carry a server_name, so
		// it is refused as one without.
		pre, err := fill(client, pre, 5)
		if err != nil || !isSSL2ClientHello(pre) {
			return pre, nil, err
		}
		return nil, &refusal{reason: ReasonBadTLS, host: d.eventHost(), port: d.port,
			detail: "ClientHello in the SSL 2.0 record format, which names no server",
			hint:   "a TLS client must send its ClientHello in TLS records, with server_name"}, nil
	}
	if pre[0] != recordTypeHandshake {
		if !isTLSRecordType(pre[0]) {
			return pre, nil, nil
		}
		// Another TLS record first (an alert, change_cipher_spec): lenient servers
		// (Go's crypto/tls) skip it and read the ClientHello after it, which would
		// go unchecked. A TLS client starts with its ClientHello. A record header's
		// second byte is the version's major: 3 in every TLS version, but Go takes
		// a first record of any version below 0x1000.
		for len(pre) < 2 {
			var b [1]byte
			n, err := client.Read(b[:])
			if err != nil && n == 0 {
				return nil, nil, err
			}
			pre = append(pre, b[:n]...)
		}
		if pre[1] >= 0x10 {
			return pre, nil, nil
		}
		return nil, &refusal{reason: ReasonBadTLS, host: d.eventHost(), port: d.port,
			detail: fmt.Sprintf("TLS record of type %#x before the ClientHello", pre[0]),
			hint:   "a TLS tunnel must start with the ClientHello"}, nil
	}
	br := bytes.NewReader(pre)
	raw, body, err := readClientHello(io.MultiReader(br, client))
	rest := pre[len(pre)-br.Len():]
	var sni string
	var has bool
	if err == nil {
		sni, has, err = parseClientHello(body)
	}
	if err != nil {
		return nil, &refusal{reason: ReasonBadTLS, host: d.eventHost(), port: d.port, detail: err.Error(),
			hint: "a tunnel whose first byte is 0x16 must start with a TLS ClientHello"}, nil
	}
	if r := s.checkSNI(d, sni, has); r != nil {
		return nil, r, nil
	}
	return append(raw, rest...), nil, nil
}

// checkSNI: for a destination asked for by name, the ClientHello must name that
// host. For an IP literal (allowed itself or mapped back to a name), a
// ClientHello without a name passes, and one with a name passes when the name
// is the literal, the mapped name, or a host Check allows on the port.
func (s *Server) checkSNI(d *dest, sni string, has bool) *refusal {
	r := &refusal{reason: ReasonSNIMismatch, host: d.eventHost(), port: d.port,
		hint: "the TLS server name must be the host the tunnel was opened for"}
	if !has {
		if !d.ip.IsValid() {
			r.detail = "ClientHello without a server name, tunnel opened for " + d.host
			return r
		}
		return nil
	}
	h, _, err := canonHost(sni)
	if err != nil {
		r.detail = "ClientHello server name: " + err.Error()
		return r
	}
	if h == d.host || h == d.name {
		return nil
	}
	if !d.ip.IsValid() {
		r.detail = "ClientHello names " + h + ", tunnel opened for " + d.host
		return r
	}
	if dec := s.Check(h, d.port); !dec.Allow {
		r.detail = "ClientHello names " + h + ", which the policy refuses, tunnel opened for " + d.host
		r.rule, r.hint = dec.Rule, dec.Hint
		return r
	}
	return nil
}

// fill reads from client until pre has n bytes. A client that stops short (a
// protocol whose first message is shorter, waiting for the server) ends the
// wait at the read deadline: pre is then returned as it is, without error.
func fill(client net.Conn, pre []byte, n int) ([]byte, error) {
	for len(pre) < n {
		b := make([]byte, n-len(pre))
		m, err := client.Read(b)
		pre = append(pre, b[:m]...)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return pre, nil
		}
		if err != nil && m == 0 {
			if err == io.EOF {
				return pre, nil
			}
			return nil, err
		}
	}
	return pre, nil
}
