package proxy

import (
	"errors"
	"strings"
	"testing"
)

func TestCanonHost(t *testing.T) {
	long63 := strings.Repeat("a", 63)
	name253 := strings.Repeat(long63+".", 3) + strings.Repeat("b", 61) // 3*64+61 = 253
	tests := []struct {
		name, in, want string
		ip             bool
	}{
		{"lower case", "Example.COM", "example.com", false},
		{"one trailing dot dropped", "example.com.", "example.com", false},
		{"underscore and hyphen", "_acme-x.ex-ample.com", "_acme-x.ex-ample.com", false},
		{"single label", "localhost", "localhost", false},
		{"punycode passes as is", "xn--bcher-kva.example", "xn--bcher-kva.example", false},
		{"63-byte label", long63 + ".com", long63 + ".com", false},
		{"253-byte name", name253, name253, false},
		{"253-byte name and a dot", name253 + ".", name253, false},
		{"numeric middle label is a name", "0x7f.example.com", "0x7f.example.com", false},
		{"dotted IPv4", "127.0.0.1", "127.0.0.1", true},
		{"IPv4 with trailing dot", "1.2.3.4.", "1.2.3.4", true},
		{"short IPv4 127.1", "127.1", "127.0.0.1", true},
		{"hex parts 0x7f.1", "0x7f.1", "127.0.0.1", true},
		{"upper-case hex 0X7F.1", "0X7F.1", "127.0.0.1", true},
		{"one decimal number", "2130706433", "127.0.0.1", true},
		{"one hex number", "0x7f000001", "127.0.0.1", true},
		{"octal part", "0177.0.0.1", "127.0.0.1", true},
		{"leading zeros are octal", "010.0.0.1", "8.0.0.1", true},
		{"bare zero", "0", "0.0.0.0", true},
		{"metadata as one number", "2852039166", "169.254.169.254", true},
		{"bracketed IPv6", "[::1]", "::1", true},
		{"unbracketed IPv6 (SOCKS domain)", "::1", "::1", true},
		{"IPv6 upper case", "[2001:DB8::1]", "2001:db8::1", true},
		{"IPv4-mapped dotted", "[::ffff:127.0.0.1]", "127.0.0.1", true},
		{"IPv4-mapped hex", "[::FFFF:7f00:1]", "127.0.0.1", true},

		{"empty", "", "", false},
		{"only a dot", ".", "", false},
		{"two trailing dots", "example.com..", "", false},
		{"empty label", "a..example.com", "", false},
		{"leading dot", ".example.com", "", false},
		{"space", "exa mple.com", "", false},
		{"NUL", "allowed.example\x00.evil.example", "", false},
		{"CR LF", "allowed.example\r\nX: y", "", false},
		{"tab", "allowed.example\t", "", false},
		{"DEL", "allowed\x7f.example", "", false},
		{"percent-encoding", "ex%61mple.com", "", false},
		{"userinfo", "allowed.example@evil.example", "", false},
		{"non-ASCII (IDN not converted)", "bücher.example", "", false},
		{"fullwidth digits", "１２７．０．０．１", "", false},
		{"slash", "evil.example/allowed.example", "", false},
		{"backslash", "evil.example\\allowed.example", "", false},
		{"wildcard", "*.example.com", "", false},
		{"colon in a name", "a:b", "", false},
		{"64-byte label", strings.Repeat("a", 64) + ".com", "", false},
		{"254-byte name", name253 + "b", "", false},
		{"five numeric parts", "1.2.3.4.5", "", false},
		{"numeric TLD", "example.123", "", false},
		{"hex TLD", "example.0x1", "", false},
		{"part over 255", "256.1.1.1", "", false},
		{"last part over its bytes", "1.2.65536", "", false},
		{"octal digit 8", "08.1.1.1", "", false},
		{"number over 32 bits", "4294967296", "", false},
		{"bracketed IPv4", "[127.0.0.1]", "", false},
		{"unclosed bracket", "[::1", "", false},
		{"closing bracket only", "::1]", "", false},
		{"zone", "fe80::1%eth0", "", false},
		{"escaped zone", "[fe80::1%25eth0]", "", false},
		{"brackets around a name", "[example.com]", "", false},
		{"nested brackets", "[[::1]]", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ip, err := canonHost(tt.in)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("canonHost(%q) = %q, want an error", tt.in, got)
				}
				if !errors.Is(err, errBadHost) {
					t.Fatalf("canonHost(%q) error %v does not wrap errBadHost", tt.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("canonHost(%q): %v", tt.in, err)
			}
			if got != tt.want || ip.IsValid() != tt.ip {
				t.Fatalf("canonHost(%q) = %q, ip %v; want %q, ip %v", tt.in, got, ip, tt.want, tt.ip)
			}
			if tt.ip && ip.String() != got {
				t.Fatalf("canonHost(%q): literal %q but address %v", tt.in, got, ip)
			}
			if again, _, err := canonHost(got); err != nil || again != got {
				t.Fatalf("canonHost is not idempotent on %q: %q, %v", got, again, err)
			}
		})
	}
}

func TestParseAuthority(t *testing.T) {
	tests := []struct {
		name, in string
		defPort  int
		want     string // target.String(), "" for an error
	}{
		{"name and port", "Example.com:443", 0, "example.com:443"},
		{"default port", "example.com", 80, "example.com:80"},
		{"IPv6 and port", "[::1]:8080", 0, "[::1]:8080"},
		{"IPv6 default port", "[2001:db8::1]", 80, "[2001:db8::1]:80"},
		{"odd IPv4 and port", "0x7f.1:22", 0, "127.0.0.1:22"},
		{"leading zero port", "example.com:0443", 0, "example.com:443"},
		{"trailing dot and port", "example.com.:443", 0, "example.com:443"},

		{"no port where one is needed", "example.com", 0, ""},
		{"port 0", "example.com:0", 0, ""},
		{"port 65536", "example.com:65536", 0, ""},
		{"empty port", "example.com:", 80, ""},
		{"signed port", "example.com:+80", 0, ""},
		{"port with space", "example.com: 80", 0, ""},
		{"userinfo", "user@example.com:443", 0, ""},
		{"userinfo with allowed host first", "allowed.example:443@evil.example:443", 0, ""},
		{"unbracketed IPv6", "::1:80", 0, ""},
		{"text after bracket", "[::1]x", 80, ""},
		{"unclosed bracket", "[::1:80", 0, ""},
		{"empty", "", 80, ""},
		{"port only", ":443", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseAuthority(tt.in, tt.defPort)
			switch {
			case tt.want == "" && err == nil:
				t.Fatalf("parseAuthority(%q) = %v, want an error", tt.in, got)
			case tt.want != "" && err != nil:
				t.Fatalf("parseAuthority(%q): %v", tt.in, err)
			case tt.want != "" && got.String() != tt.want:
				t.Fatalf("parseAuthority(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseAbsoluteTarget(t *testing.T) {
	tests := []struct {
		name, method, in string
		auth, path       string // auth "" for an error
	}{
		{"path", "GET", "http://example.com/a/b?c=d", "example.com", "/a/b?c=d"},
		{"upper-case scheme", "GET", "HTTP://example.com/", "example.com", "/"},
		{"no path", "GET", "http://example.com", "example.com", "/"},
		{"query without path", "GET", "http://example.com?x", "example.com", "/?x"},
		{"OPTIONS without path", "OPTIONS", "http://example.com:8080", "example.com:8080", "*"},
		{"at sign in the path is the path", "GET", "http://example.com/@evil.example", "example.com", "/@evil.example"},
		{"userinfo stays in the authority", "GET", "http://allowed.example@evil.example/", "allowed.example@evil.example", "/"},

		{"https", "GET", "https://example.com/", "", ""},
		{"origin form", "GET", "/index.html", "", ""},
		{"asterisk", "OPTIONS", "*", "", ""},
		{"other scheme", "GET", "ftp://example.com/", "", ""},
		{"no scheme", "GET", "example.com/", "", ""},
		{"fragment", "GET", "http://example.com/#x", "", ""},
		{"empty authority", "GET", "http:///path", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			auth, path, err := parseAbsoluteTarget(tt.method, tt.in)
			if tt.auth == "" {
				if err == nil {
					t.Fatalf("parseAbsoluteTarget(%q) = %q %q, want an error", tt.in, auth, path)
				}
				return
			}
			if err != nil || auth != tt.auth || path != tt.path {
				t.Fatalf("parseAbsoluteTarget(%q) = %q %q %v, want %q %q", tt.in, auth, path, err, tt.auth, tt.path)
			}
		})
	}
}
