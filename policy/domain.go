package policy

import (
	"net/netip"
	"strconv"
	"strings"
)

// DomainRule is one validated entry of network.allowedDomains, network.deniedDomains
// or credentials.envVars[].injectHosts.
type DomainRule struct {
	Pattern string // as written
	// Host is the lower-case host part: a name ("api.github.com"), a wildcard
	// ("*.github.com": any strict subdomain), "*" (everything; deniedDomains only),
	// or an IP literal in canonical form (IPv6 without brackets).
	Host   string
	Port   int    // 1-65535, or 0 for any port
	Origin string // "settings.json:12 network.allowedDomains[0]"
}

// Match reports whether a destination host and port match the rule. host may be a
// name or an IP literal (IPv6 with or without brackets); it is compared without
// case and without a trailing dot. A wildcard never matches an IP literal, and
// "*.example.com" does not match example.com itself.
func (r DomainRule) Match(host string, port int) bool {
	if r.Port != 0 && r.Port != port {
		return false
	}
	if r.Host == "*" {
		return true
	}
	h := strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "."))
	if a, err := netip.ParseAddr(h); err == nil {
		ra, err := netip.ParseAddr(r.Host)
		if err != nil {
			return false // names and wildcards never match an IP literal
		}
		return ra.Unmap() == a.WithZone("").Unmap()
	}
	if suffix, ok := strings.CutPrefix(r.Host, "*."); ok {
		return len(h) > len(suffix)+1 && strings.HasSuffix(h, "."+suffix)
	}
	return h == r.Host
}

// parseDomain validates one domain pattern the way srt does, and a little more
// strictly: label characters, label and name length, no control or non-ASCII bytes.
// withPort allows a ":port" suffix; star allows a bare "*" (deniedDomains).
func parseDomain(raw string, withPort, star bool) (DomainRule, *problem) {
	const example = `write a host name such as "example.com", a wildcard such as "*.example.com", optionally with ":443", or a bracketed IPv6 literal such as "[::1]:8080"`
	r := DomainRule{Pattern: raw}
	if raw == "" {
		return r, bad(errf(ErrDomain, "empty domain pattern"), example)
	}
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c < 0x20 || c == 0x7f:
			return r, bad(errf(ErrDomain, "domain pattern %q contains a control byte", raw), "remove it; "+example)
		case c == ' ':
			return r, bad(errf(ErrDomain, "domain pattern %q contains a space", raw), "write one pattern per array element")
		case c >= 0x80:
			return r, bad(errf(ErrDomain, "domain pattern %q contains non-ASCII characters", raw),
				"write internationalized names in their punycode form (xn--...)")
		}
	}
	if strings.Contains(raw, "://") {
		return r, bad(errf(ErrDomain, "domain pattern %q is a URL", raw), "drop the scheme and any path: write just the host, e.g. \"example.com\"")
	}
	if strings.Contains(raw, "/") {
		return r, bad(errf(ErrDomain, "domain pattern %q contains a path", raw), "drop everything from the first \"/\": rules match hosts, not URLs")
	}
	host, portStr, hasPort := raw, "", false
	if strings.HasPrefix(raw, "[") {
		end := strings.IndexByte(raw, ']')
		if end < 0 {
			return r, bad(errf(ErrDomain, "domain pattern %q has an unclosed \"[\"", raw), example)
		}
		host = raw[1:end]
		switch rest := raw[end+1:]; {
		case rest == "":
		case strings.HasPrefix(rest, ":"):
			portStr, hasPort = rest[1:], true
		default:
			return r, bad(errf(ErrDomain, "domain pattern %q has text after \"]\"", raw), example)
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return r, bad(errf(ErrDomain, "%q in domain pattern %q is not an IPv6 address", host, raw),
				"brackets are only for IPv6 literals such as [::1] or [2001:db8::1]; zones (%eth0) are not accepted")
		}
		r.Host = a.String()
	} else {
		switch strings.Count(raw, ":") {
		case 0:
		case 1:
			i := strings.LastIndexByte(raw, ':')
			host, portStr, hasPort = raw[:i], raw[i+1:], true
		default:
			return r, bad(errf(ErrDomain, "domain pattern %q looks like an unbracketed IPv6 literal", raw),
				"write IPv6 literals in brackets, e.g. \"[2001:db8::1]\" or \"[2001:db8::1]:443\": unbracketed, a trailing :443 is ambiguous")
		}
	}
	if hasPort {
		if !withPort {
			return r, bad(errf(ErrDomain, "domain pattern %q has a port, which is not accepted here", raw), "drop the \":port\"; injection is per host")
		}
		p, err := strconv.Atoi(portStr)
		if err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != portStr {
			return r, bad(errf(ErrDomain, "port %q in domain pattern %q is not a number 1-65535", portStr, raw),
				"write the port in decimal without leading zeros, e.g. \"example.com:443\"")
		}
		r.Port = p
	}
	if r.Host != "" { // IPv6 literal, done
		return r, nil
	}
	host = strings.ToLower(host)
	switch {
	case host == "":
		return r, bad(errf(ErrDomain, "domain pattern %q has no host before the port", raw), example)
	case host == "*":
		if !star {
			return r, bad(errf(ErrDomain, "bare \"*\" is not accepted in an allow list"), "list the domains to allow; \"*\" would allow the whole internet")
		}
		r.Host = "*"
		return r, nil
	case host == "localhost":
		r.Host = host
		return r, nil
	}
	name, wild := strings.CutPrefix(host, "*.")
	if strings.Contains(name, "*") {
		return r, bad(errf(ErrDomain, "domain pattern %q uses \"*\" other than as a leading \"*.\"", raw),
			"wildcards match subdomains only: write \"*.example.com\"")
	}
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
		return r, bad(errf(ErrDomain, "domain pattern %q has an empty label", raw), "remove the leading, trailing or doubled dot")
	}
	labels := strings.Split(name, ".")
	if last := labels[len(labels)-1]; len(last) > 0 && (last[0] >= '0' && last[0] <= '9') {
		// No top-level domain starts with a digit; these are IPv4 addresses in
		// forms (127.1, 0x7f.1, 2130706433, 010.0.0.1) that the proxy reads as
		// addresses, so a rule written this way would never match.
		if a, err := netip.ParseAddr(name); err != nil || !a.Is4() {
			return r, bad(errf(ErrDomain, "domain pattern %q looks like an IPv4 address in a non-standard form", raw),
				"write IPv4 addresses in dotted decimal without leading zeros, e.g. \"127.0.0.1\"")
		}
	}
	if a, err := netip.ParseAddr(name); err == nil && a.Is4() && !wild {
		r.Host = a.String()
		return r, nil
	}
	if len(labels) < 2 {
		if wild {
			return r, bad(errf(ErrDomain, "wildcard %q is too broad", raw),
				"a wildcard needs at least two labels after \"*.\", e.g. \"*.example.com\" rather than \"*.com\"")
		}
		return r, bad(errf(ErrDomain, "domain pattern %q has no dot", raw),
			"write a fully qualified name such as \"host.example.com\" (\"localhost\" is the only single-label name accepted)")
	}
	if len(name) > 253 {
		return r, bad(errf(ErrDomain, "domain pattern %q is longer than 253 characters", raw), "no DNS name is that long")
	}
	for _, l := range labels {
		if len(l) > 63 {
			return r, bad(errf(ErrDomain, "label %q in domain pattern %q is longer than 63 characters", l, raw), "no DNS label is that long")
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return r, bad(errf(ErrDomain, "domain pattern %q contains %q", raw, string(c)), "host names contain only letters, digits, '-' and '_'")
			}
		}
	}
	r.Host = host
	return r, nil
}
