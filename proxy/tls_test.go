package proxy

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"io"
	"math/big"
	"net"
	"slices"
	"testing"
	"time"
)

// u16 prefixes b with its length in two bytes.
func u16(b []byte) []byte { return append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...) }

// sniExt is a server_name extension with one host_name.
func sniExt(name string) []byte {
	return sniList([]byte{0}, string(u16([]byte(name))))
}

// sniList is a server_name extension whose list holds the given raw parts.
func sniList(parts ...any) []byte {
	var list []byte
	for _, p := range parts {
		switch p := p.(type) {
		case []byte:
			list = append(list, p...)
		case string:
			list = append(list, p...)
		}
	}
	return append([]byte{0, 0}, u16(u16(list))...)
}

// helloBody is a minimal ClientHello body with the given extensions (nil: no
// extensions block at all).
func helloBody(exts [][]byte) []byte {
	b := []byte{3, 3}
	b = append(b, make([]byte, 32)...) // random
	b = append(b, 0)                   // session id
	b = append(b, u16([]byte{0x13, 0x01})...)
	b = append(b, 1, 0) // compression: null
	if exts != nil {
		b = append(b, u16(bytes.Join(exts, nil))...)
	}
	return b
}

// record wraps a handshake body into one TLS record.
func record(body []byte) []byte {
	msg := append([]byte{handshakeClientHello, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
	return append([]byte{0x16, 3, 1}, u16(msg)...)
}

func helloWithExts(t testing.TB, exts ...[]byte) []byte { return record(helloBody(exts)) }

func helloWithSNI(t testing.TB, name string) []byte { return record(helloBody([][]byte{sniExt(name)})) }

// appendInRecord appends extra bytes inside the last record of raw.
func appendInRecord(raw, extra []byte) []byte {
	out := slices.Clone(raw)
	i := 0
	for last := 0; i < len(out); i += 5 + int(binary.BigEndian.Uint16(out[i+3:i+5])) {
		last = i
		if i+5+int(binary.BigEndian.Uint16(out[i+3:i+5])) >= len(out) {
			i = last
			break
		}
	}
	n := binary.BigEndian.Uint16(out[i+3:i+5]) + uint16(len(extra))
	binary.BigEndian.PutUint16(out[i+3:i+5], n)
	return append(out, extra...)
}

func TestParseClientHello(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		sni  string
		has  bool
		bad  bool
	}{
		{"one name", helloBody([][]byte{sniExt("example.com")}), "example.com", true, false},
		{"name among other extensions", helloBody([][]byte{{0, 10, 0, 2, 0, 29}, sniExt("example.com"), {0, 43, 0, 3, 2, 3, 4}}), "example.com", true, false},
		{"no server_name", helloBody([][]byte{{0, 10, 0, 2, 0, 29}}), "", false, false},
		{"empty extensions block", helloBody([][]byte{}), "", false, false},
		{"no extensions block", helloBody(nil), "", false, false},
		{"GREASE extension", helloBody([][]byte{{0x0a, 0x0a, 0, 0}, sniExt("example.com")}), "example.com", true, false},

		{"server_name twice", helloBody([][]byte{sniExt("example.com"), sniExt("evil.example")}), "", false, true},
		{"other extension twice", helloBody([][]byte{{0, 10, 0, 0}, {0, 10, 0, 0}, sniExt("example.com")}), "", false, true},
		{"two names", helloBody([][]byte{sniList([]byte{0}, string(u16([]byte("a.example"))), []byte{0}, string(u16([]byte("b.example"))))}), "", false, true},
		{"name type 1", helloBody([][]byte{sniList([]byte{1}, string(u16([]byte("example.com"))))}), "", false, true},
		{"empty name", helloBody([][]byte{sniList([]byte{0, 0, 0})}), "", false, true},
		{"empty name list", helloBody([][]byte{{0, 0, 0, 2, 0, 0}}), "", false, true},
		{"name longer than its list", helloBody([][]byte{sniList([]byte{0, 0, 200}, "example.com")}), "", false, true},
		{"extension longer than the block", append(helloBody(nil), 0, 8, 0, 0, 0, 20, 1, 2, 3, 4), "", false, true},
		{"bytes after the extensions", append(helloBody([][]byte{sniExt("example.com")}), 0), "", false, true},
		{"truncated random", []byte{3, 3, 1, 2}, "", false, true},
		{"session id over 32 bytes", append(append([]byte{3, 3}, make([]byte, 32)...), 33), "", false, true},
		{"odd cipher suites", append(append(append([]byte{3, 3}, make([]byte, 32)...), 0), 0, 1, 0x13), "", false, true},
		{"empty", nil, "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sni, has, err := parseClientHello(tt.body)
			if tt.bad {
				if err == nil || !errors.Is(err, errBadTLS) {
					t.Fatalf("parseClientHello = %q %v %v, want errBadTLS", sni, has, err)
				}
				return
			}
			if err != nil || sni != tt.sni || has != tt.has {
				t.Fatalf("parseClientHello = %q %v %v, want %q %v", sni, has, err, tt.sni, tt.has)
			}
		})
	}
}

func TestReadClientHello(t *testing.T) {
	hello := helloWithSNI(t, "example.com")
	tests := []struct {
		name string
		in   []byte
		bad  bool
	}{
		{"one record", hello, false},
		{"fragmented", fragment(hello, 10), false},
		{"one byte a record", fragment(hello, 1), false},
		{"record type 0x17", append([]byte{0x17}, hello[1:]...), true},
		{"version 2", append([]byte{0x16, 2}, hello[2:]...), true},
		{"zero-length record", append([]byte{0x16, 3, 1, 0, 0}, hello...), true},
		{"record over 16 KiB", []byte{0x16, 3, 1, 0x50, 0}, true},
		{"ClientHello over 64 KiB", append([]byte{0x16, 3, 1, 0, 4, 1, 0x01, 0, 1}, make([]byte, 16)...), true},
		{"server hello", []byte{0x16, 3, 1, 0, 4, 2, 0, 0, 0}, true},
		{"truncated", hello[:len(hello)-1], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			if !tt.bad {
				in = append(in, "rest"...)
			}
			r := bytes.NewReader(in)
			raw, body, err := readClientHello(r)
			if tt.bad {
				if err == nil {
					t.Fatalf("readClientHello accepted it")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(raw, tt.in) {
				t.Fatalf("raw is %d bytes, want the %d records", len(raw), len(tt.in))
			}
			if rest, _ := io.ReadAll(r); string(rest) != "rest" {
				t.Fatalf("read past the ClientHello: %q left", rest)
			}
			if sni, _, err := parseClientHello(body); err != nil || sni != "example.com" {
				t.Fatalf("body: %q %v", sni, err)
			}
		})
	}
}

func selfSigned(t testing.TB, name string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// echo2 echoes on any connection until EOF.
func echo2(c net.Conn) {
	io.Copy(c, c)
	c.Close()
}
