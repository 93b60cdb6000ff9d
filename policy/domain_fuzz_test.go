package policy

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzDomainMatch parses arbitrary patterns and matches them against arbitrary
// hosts and ports, checking the properties the network filter relies on: case
// and one trailing dot never matter, a port rule matches only its port, a
// wildcard matches only strict subdomains and never an address, a name rule
// matches only that name, an address rule only that address.
func FuzzDomainMatch(f *testing.F) {
	for _, s := range []struct {
		pattern, host string
		port          uint16
	}{
		{"example.com", "EXAMPLE.com.", 443},
		{"*.tailscale.com", "scale.com", 443},
		{"*.example.com", "a.b.example.com", 80},
		{"*.example.com", "example.com", 80},
		{"example.com:443", "example.com", 80},
		{"[::1]:8080", "[::1]", 8080},
		{"127.0.0.1", "::ffff:127.0.0.1", 1},
		{"*", "1.2.3.4", 22},
		{"*.0.0.1", "127.0.0.1", 1},
		{"localhost", "LOCALHOST.", 3000},
	} {
		f.Add(s.pattern, s.host, s.port)
	}
	f.Fuzz(func(t *testing.T, pattern, host string, port16 uint16) {
		r, pr := parseDomain(pattern, true, true)
		if pr != nil {
			return
		}
		port := int(port16)
		if r.Host != strings.ToLower(r.Host) || r.Host == "" || r.Port < 0 || r.Port > 65535 {
			t.Fatalf("parseDomain(%q) = %+v", pattern, r)
		}
		got := r.Match(host, port)

		if up := asciiUpper(host); r.Match(up, port) != got {
			t.Fatalf("%q: case matters for %q", pattern, host)
		}
		// One trailing dot is a name's business; "[::1]." is no host form.
		if !strings.HasSuffix(host, ".") && !strings.ContainsAny(host, "[]:") && r.Match(host+".", port) != got {
			t.Fatalf("%q: a trailing dot matters for %q", pattern, host)
		}
		if r.Port != 0 && port != r.Port && got {
			t.Fatalf("%q matches %q on port %d", pattern, host, port)
		}
		anyPort := r
		anyPort.Port = 0
		if r.Port != 0 && r.Match(host, r.Port) != anyPort.Match(host, r.Port) {
			t.Fatalf("%q: the port changes the host match for %q", pattern, host)
		}
		if !got {
			return
		}
		h := strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "."))
		addr, isAddr := netip.ParseAddr(h)
		switch suffix, wild := strings.CutPrefix(r.Host, "*."); {
		case r.Host == "*":
		case wild:
			if isAddr == nil {
				t.Fatalf("wildcard %q matches the address %q", pattern, host)
			}
			if h == suffix || !strings.HasSuffix(h, "."+suffix) {
				t.Fatalf("wildcard %q matches %q, not a strict subdomain", pattern, host)
			}
		default:
			ra, err := netip.ParseAddr(r.Host)
			switch {
			case err == nil && isAddr == nil:
				if ra.Unmap() != addr.WithZone("").Unmap() {
					t.Fatalf("address rule %q matches %q", pattern, host)
				}
			case err == nil || isAddr == nil:
				t.Fatalf("%q matches %q across name and address", pattern, host)
			case h != r.Host:
				t.Fatalf("name rule %q matches %q", pattern, host)
			}
		}
	})
}

func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
