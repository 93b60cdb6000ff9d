package proxy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

const (
	maxNameLen  = 253
	maxLabelLen = 63
)

// canonHost checks a host as a client wrote it and returns its canonical form:
// a lower-case ASCII name without a trailing dot, or, for an address, the IP
// literal (IPv6 without brackets, IPv4-mapped IPv6 as IPv4) and the address.
//
// Accepted: names of letters, digits, '-' and '_' in dot-separated labels of 1-63
// bytes, 253 bytes in all, with at most one trailing dot; IPv6 literals with or
// without brackets; IPv4 in every form inet_aton and the WHATWG URL parser take
// ("127.1", "0x7f.1", "2130706433", "0177.0.0.1"). A name whose last label is a
// number is such an IPv4 form or refused, so "1.2.3.4.5" and "example.123" are
// refused rather than looked up as names. Refused: the empty host, control
// bytes, spaces, '%' (percent-encoding and IPv6 zones), userinfo ('@'), every
// other punctuation, and non-ASCII: internationalized names must arrive in
// their punycode form ("xn--bcher-kva.example"), which is what clients send.
func canonHost(raw string) (string, netip.Addr, error) {
	h := raw
	if h == "" {
		return "", netip.Addr{}, fmt.Errorf("%w: empty host", errBadHost)
	}
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case c < 0x20 || c == 0x7f:
			return "", netip.Addr{}, fmt.Errorf("%w %q: control byte", errBadHost, raw)
		case c == ' ':
			return "", netip.Addr{}, fmt.Errorf("%w %q: space", errBadHost, raw)
		case c == '%':
			return "", netip.Addr{}, fmt.Errorf("%w %q: percent-encoding or IPv6 zone", errBadHost, raw)
		case c == '@':
			return "", netip.Addr{}, fmt.Errorf("%w %q: userinfo", errBadHost, raw)
		case c >= 0x80:
			return "", netip.Addr{}, fmt.Errorf("%w %q: non-ASCII; send the punycode (xn--) form", errBadHost, raw)
		}
	}
	if strings.HasPrefix(h, "[") || strings.HasSuffix(h, "]") {
		if len(h) < 2 || h[0] != '[' || h[len(h)-1] != ']' || !strings.Contains(h, ":") {
			return "", netip.Addr{}, fmt.Errorf("%w %q: brackets around something other than an IPv6 address", errBadHost, raw)
		}
		h = h[1 : len(h)-1]
	}
	if strings.Contains(h, ":") {
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is6() {
			return "", netip.Addr{}, fmt.Errorf("%w %q: not an IPv6 address", errBadHost, raw)
		}
		a = a.Unmap()
		return a.String(), a, nil
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "" || len(h) > maxNameLen {
		return "", netip.Addr{}, fmt.Errorf("%w %q: empty or longer than %d bytes", errBadHost, raw, maxNameLen)
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > maxLabelLen {
			return "", netip.Addr{}, fmt.Errorf("%w %q: empty label or label longer than %d bytes", errBadHost, raw, maxLabelLen)
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", netip.Addr{}, fmt.Errorf("%w %q: %q is not a host name character", errBadHost, raw, string(c))
			}
		}
	}
	if isNumericLabel(labels[len(labels)-1]) {
		a, ok := parseIPv4Loose(labels)
		if !ok {
			return "", netip.Addr{}, fmt.Errorf("%w %q: ends in a number but is not an IPv4 address", errBadHost, raw)
		}
		return a.String(), a, nil
	}
	return h, netip.Addr{}, nil
}

// isNumericLabel reports whether a label is a number in the WHATWG URL sense
// (decimal digits, or "0x" and hex digits), which makes the host an IPv4 address.
func isNumericLabel(l string) bool {
	if rest, ok := strings.CutPrefix(l, "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return strings.Trim(l, "0123456789") == ""
}

// parseIPv4Loose parses an IPv4 address the way inet_aton and the WHATWG URL
// parser do: one to four parts, each decimal, octal (leading 0) or hex (0x); the
// last part fills the remaining bytes. labels are lower case.
func parseIPv4Loose(labels []string) (netip.Addr, bool) {
	if len(labels) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, l := range labels {
		base, digits := 10, l
		switch {
		case strings.HasPrefix(l, "0x"):
			base, digits = 16, l[2:]
		case len(l) > 1 && l[0] == '0':
			base, digits = 8, l[1:]
		}
		var n uint64
		if digits != "" {
			var err error
			if n, err = strconv.ParseUint(digits, base, 32); err != nil {
				return netip.Addr{}, false
			}
		}
		if i < len(labels)-1 {
			if n > 255 {
				return netip.Addr{}, false
			}
			v = v<<8 | n
			continue
		}
		rest := uint(4 - i) // bytes the last part fills
		if n >= 1<<(8*rest) {
			return netip.Addr{}, false
		}
		v = v<<(8*rest) | n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// target is a canonical destination: host is a name or IP literal as canonHost
// returns it, ip is valid for literals.
type target struct {
	host string
	ip   netip.Addr
	port int
}

func (t target) String() string { return joinHostPort(t.host, t.port) }

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// parseAuthority parses "host", "host:port", "[v6]" or "[v6]:port". Without a
// port it returns defPort, or fails when defPort is 0. Userinfo is refused.
func parseAuthority(auth string, defPort int) (target, error) {
	host, portStr, hasPort := auth, "", false
	if strings.HasPrefix(auth, "[") {
		end := strings.IndexByte(auth, ']')
		if end < 0 {
			return target{}, fmt.Errorf("%w %q: unclosed \"[\"", errBadHost, auth)
		}
		host = auth[:end+1]
		switch rest := auth[end+1:]; {
		case rest == "":
		case rest[0] == ':':
			portStr, hasPort = rest[1:], true
		default:
			return target{}, fmt.Errorf("%w %q: text after \"]\"", errBadHost, auth)
		}
	} else if i := strings.LastIndexByte(auth, ':'); i >= 0 {
		if strings.Count(auth, ":") > 1 {
			return target{}, fmt.Errorf("%w %q: IPv6 address without brackets", errBadHost, auth)
		}
		host, portStr, hasPort = auth[:i], auth[i+1:], true
	}
	port := defPort
	if hasPort {
		var err error
		if port, err = parsePort(portStr); err != nil {
			return target{}, fmt.Errorf("%w %q: %w", errBadHost, auth, err)
		}
	} else if defPort == 0 {
		return target{}, fmt.Errorf("%w %q: no port", errBadHost, auth)
	}
	h, ip, err := canonHost(host)
	if err != nil {
		return target{}, err
	}
	return target{host: h, ip: ip, port: port}, nil
}

// parsePort parses 1-65535 in decimal digits only.
func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("port %q is not a number 1-65535", s)
	}
	p, _ := strconv.Atoi(s)
	if p < 1 || p > 65535 {
		return 0, fmt.Errorf("port %q is not a number 1-65535", s)
	}
	return p, nil
}
