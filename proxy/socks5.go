package proxy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// SOCKS5 protocol constants (RFC 1928).
const (
	socksVersion    = 0x05
	socksNoAuth     = 0x00
	socksNoMethod   = 0xff
	socksCmdConnect = 0x01
	socksAtypIPv4   = 0x01
	socksAtypDomain = 0x03
	socksAtypIPv6   = 0x04
)

// readSOCKSGreeting reads the method negotiation and reports whether the client
// offers "no authentication", the only method served.
func readSOCKSGreeting(r io.Reader) (bool, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return false, err
	}
	if hdr[0] != socksVersion || hdr[1] == 0 {
		return false, fmt.Errorf("%w: SOCKS greeting version %d with %d methods", errBadRequest, hdr[0], hdr[1])
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return false, err
	}
	for _, m := range methods {
		if m == socksNoAuth {
			return true, nil
		}
	}
	return false, nil
}

// readSOCKSRequest reads a whole request and returns its destination, or the
// reason to refuse it with (target filled as far as it was read) and an error.
func readSOCKSRequest(r io.Reader) (target, string, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return target{}, ReasonBadRequest, err
	}
	if hdr[0] != socksVersion {
		return target{}, ReasonBadRequest, fmt.Errorf("%w: SOCKS request version %d", errBadRequest, hdr[0])
	}
	var t target
	var herr error
	switch hdr[3] {
	case socksAtypIPv4, socksAtypIPv6:
		b := make([]byte, 4)
		if hdr[3] == socksAtypIPv6 {
			b = make([]byte, 16)
		}
		if _, err := io.ReadFull(r, b); err != nil {
			return target{}, ReasonBadRequest, err
		}
		a, _ := netip.AddrFromSlice(b)
		t.ip = a.Unmap()
		t.host = t.ip.String()
	case socksAtypDomain:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return target{}, ReasonBadRequest, err
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(r, b); err != nil {
			return target{}, ReasonBadRequest, err
		}
		t.host, t.ip, herr = canonHost(string(b))
	default:
		return target{}, ReasonAddrType, fmt.Errorf("%w: SOCKS address type %d", errBadRequest, hdr[3])
	}
	var p [2]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return target{}, ReasonBadRequest, err
	}
	t.port = int(binary.BigEndian.Uint16(p[:]))
	switch {
	case hdr[1] != socksCmdConnect:
		return t, ReasonCommand, fmt.Errorf("%w: SOCKS command %d (only CONNECT)", errBadRequest, hdr[1])
	case herr != nil:
		return target{}, ReasonBadHost, herr
	case t.port == 0:
		return t, ReasonBadHost, fmt.Errorf("%w: port 0", errBadHost)
	}
	return t, "", nil
}

// serveSOCKS serves one SOCKS5 connection: no authentication, CONNECT only.
func (s *Server) serveSOCKS(c net.Conn, br *bufio.Reader) {
	const proto = "socks5"
	c.SetDeadline(time.Now().Add(s.handshakeTimeout()))
	ok, err := readSOCKSGreeting(br)
	if err != nil {
		if errors.Is(err, errBadRequest) { // else the client went away: nothing was asked
			s.refuseSOCKS(c, proto, &refusal{reason: ReasonBadRequest, detail: err.Error()}, false)
		}
		return
	}
	if !ok {
		c.Write([]byte{socksVersion, socksNoMethod})
		s.logRefusal(proto, &refusal{reason: ReasonAuth, detail: "the client offers no \"no authentication\" method",
			hint: "the proxy needs no credentials: configure the client without a user name and password"})
		return
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return
	}
	t, reason, err := readSOCKSRequest(br)
	if err != nil {
		if reason == ReasonBadRequest && !errors.Is(err, errBadRequest) {
			return // the client went away mid-request
		}
		s.refuseSOCKS(c, proto, &refusal{reason: reason, host: t.host, port: t.port, detail: err.Error()}, true)
		return
	}
	c.SetDeadline(time.Time{})
	d, up, ap, r := s.open(t)
	if r != nil {
		s.refuseSOCKS(c, proto, r, true)
		return
	}
	defer s.untrack(up)
	defer up.Close()
	// The bound address is left 0.0.0.0:0: the host's own address is none of
	// the sandbox's business, and clients do not use it for CONNECT.
	s.logAllow(proto, d, ap)
	if _, err := c.Write(socksReply(socksOK)); err != nil {
		return
	}
	pre, _ := br.Peek(br.Buffered())
	s.tunnel(proto, c, up, pre, d, ap)
}

func socksReply(code byte) []byte {
	return []byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0}
}

// refuseSOCKS logs a refusal and, after the greeting, answers it with its reply code.
func (s *Server) refuseSOCKS(c net.Conn, proto string, r *refusal, reply bool) {
	if reply {
		code := r.socks
		if code == 0 {
			code = info(r.reason).socks
		}
		c.Write(socksReply(code))
	}
	s.logRefusal(proto, r)
}
