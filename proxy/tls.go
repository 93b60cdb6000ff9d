package proxy

import (
	"encoding/binary"
	"fmt"
	"io"
)

const (
	recordTypeHandshake  = 0x16
	handshakeClientHello = 0x01
	maxRecordLen         = 1<<14 + 256 // TLSPlaintext limit plus slack for old clients
	maxClientHello       = 64 << 10    // post-quantum key shares make ~2 KiB; this is generous
	extServerName        = 0x0000
)

// isTLSRecordType reports whether b is a TLS record's content type other than
// handshake: change_cipher_spec, alert, application_data, heartbeat.
func isTLSRecordType(b byte) bool { return b >= 0x14 && b <= 0x18 && b != recordTypeHandshake }

// isSSL2ClientHello says whether b starts an SSL 2.0-format record (a two-byte
// header with the top bit set) holding a CLIENT-HELLO (type 1) of version 2.0
// or of SSL 3.0 to TLS 1.3 (the "compatible" hello of old clients).
func isSSL2ClientHello(b []byte) bool {
	return len(b) >= 5 && b[0]&0x80 != 0 && b[2] == 1 &&
		((b[3] == 0 && b[4] == 2) || (b[3] == 3 && b[4] <= 4))
}

// readClientHello reads TLS handshake records from r until it has one whole
// handshake message, which must be a ClientHello, and returns the raw records
// read and the ClientHello body. It reads exactly the records, nothing more.
func readClientHello(r io.Reader) (raw, body []byte, err error) {
	var hs []byte
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return raw, nil, fmt.Errorf("%w: record header: %w", errBadTLS, err)
		}
		raw = append(raw, hdr[:]...)
		n := int(binary.BigEndian.Uint16(hdr[3:]))
		if hdr[0] != recordTypeHandshake || hdr[1] != 3 || n == 0 || n > maxRecordLen {
			return raw, nil, fmt.Errorf("%w: record type %#x version %#x%02x length %d", errBadTLS, hdr[0], hdr[1], hdr[2], n)
		}
		if len(raw)+n > maxClientHello+5*16 {
			return raw, nil, fmt.Errorf("%w: %w", errBadTLS, errTooLong)
		}
		start := len(raw)
		raw = append(raw, make([]byte, n)...)
		if _, err := io.ReadFull(r, raw[start:]); err != nil {
			return raw[:start], nil, fmt.Errorf("%w: record: %w", errBadTLS, err)
		}
		hs = append(hs, raw[start:]...)
		if len(hs) < 4 {
			continue
		}
		if hs[0] != handshakeClientHello {
			return raw, nil, fmt.Errorf("%w: handshake message type %d", errBadTLS, hs[0])
		}
		msgLen := int(hs[1])<<16 | int(hs[2])<<8 | int(hs[3])
		if msgLen > maxClientHello {
			return raw, nil, fmt.Errorf("%w: %w", errBadTLS, errTooLong)
		}
		if len(hs) >= 4+msgLen {
			// Bytes after the message in the same record belong to the next
			// handshake message, which a client never sends before the server speaks.
			if len(hs) > 4+msgLen {
				return raw, nil, fmt.Errorf("%w: data after the ClientHello", errBadTLS)
			}
			return raw, hs[4:], nil
		}
	}
}

// cursor reads big-endian fields from a byte slice; any overrun sets bad.
type cursor struct {
	b   []byte
	bad bool
}

func (c *cursor) bytes(n int) []byte {
	if c.bad || n < 0 || n > len(c.b) {
		c.bad = true
		return nil
	}
	v := c.b[:n]
	c.b = c.b[n:]
	return v
}

func (c *cursor) u8() int {
	v := c.bytes(1)
	if v == nil {
		return 0
	}
	return int(v[0])
}

func (c *cursor) u16() int {
	v := c.bytes(2)
	if v == nil {
		return 0
	}
	return int(binary.BigEndian.Uint16(v))
}

// vec returns a length-prefixed vector (lenBytes 1 or 2) as its own cursor.
func (c *cursor) vec(lenBytes int) *cursor {
	n := c.u8()
	if lenBytes == 2 {
		n = n<<8 | c.u8()
	}
	b := c.bytes(n)
	return &cursor{b: b, bad: c.bad}
}

// parseClientHello returns the server_name (host_name) of a ClientHello body
// (RFC 8446 4.1.2, RFC 6066 3), and whether there is one. It refuses what a
// server might read differently than the proxy does: duplicate extensions, more
// than one name, name types other than host_name, and trailing bytes.
func parseClientHello(body []byte) (sni string, ok bool, err error) {
	c := &cursor{b: body}
	c.bytes(2 + 32) // legacy_version, random
	if sid := c.vec(1); len(sid.b) > 32 {
		return "", false, fmt.Errorf("%w: session id of %d bytes", errBadTLS, len(sid.b))
	}
	if cs := c.vec(2); len(cs.b) < 2 || len(cs.b)%2 != 0 {
		return "", false, fmt.Errorf("%w: cipher suites", errBadTLS)
	}
	if cm := c.vec(1); len(cm.b) < 1 {
		return "", false, fmt.Errorf("%w: compression methods", errBadTLS)
	}
	if c.bad {
		return "", false, fmt.Errorf("%w: truncated", errBadTLS)
	}
	if len(c.b) == 0 {
		return "", false, nil // no extensions (SSL 3.0 style)
	}
	exts := c.vec(2)
	if c.bad || len(c.b) != 0 {
		return "", false, fmt.Errorf("%w: extensions block length", errBadTLS)
	}
	seen := map[int]bool{}
	for len(exts.b) > 0 && !exts.bad {
		typ := exts.u16()
		data := exts.vec(2)
		if exts.bad {
			break
		}
		if seen[typ] {
			return "", false, fmt.Errorf("%w: extension %d twice", errBadTLS, typ)
		}
		seen[typ] = true
		if typ != extServerName {
			continue
		}
		list := data.vec(2)
		if data.bad || len(data.b) != 0 || len(list.b) == 0 {
			return "", false, fmt.Errorf("%w: server_name extension length", errBadTLS)
		}
		nameType := list.u8()
		name := list.vec(2)
		if list.bad || name.bad || len(list.b) != 0 {
			return "", false, fmt.Errorf("%w: server_name list holds more than one name", errBadTLS)
		}
		if nameType != 0 {
			return "", false, fmt.Errorf("%w: server_name type %d", errBadTLS, nameType)
		}
		if len(name.b) == 0 {
			return "", false, fmt.Errorf("%w: empty server_name", errBadTLS)
		}
		sni, ok = string(name.b), true
	}
	if exts.bad {
		return "", false, fmt.Errorf("%w: truncated extension", errBadTLS)
	}
	return sni, ok, nil
}
