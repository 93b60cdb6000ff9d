package proxy

import "net/netip"

// refusedRange is an address range the proxy never dials for a name, and dials as
// a literal only when Check allows that literal itself.
type refusedRange struct {
	prefix netip.Prefix
	reason string
	why    string
}

// refusedRanges is checked in order, so the specific entries come before the
// ranges that contain them. IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are
// unmapped first and IPv4 embedded in NAT64 prefixes is checked as IPv4, so
// every IPv4 entry covers those forms too. Private ranges (10/8, 172.16/12,
// 192.168/16, fc00::/7, 100.64/10, 198.18/15) are not here: corporate hosts live
// there, and a rule must allow them by name or literal like any other host.
var refusedRanges = []refusedRange{
	{netip.MustParsePrefix("169.254.169.254/32"), ReasonMetadata, "instance metadata on AWS, GCP, Azure, OpenStack, Oracle and DigitalOcean: hands out the machine's cloud credentials"},
	{netip.MustParsePrefix("100.100.100.200/32"), ReasonMetadata, "Alibaba Cloud instance metadata: hands out the machine's cloud credentials"},
	{netip.MustParsePrefix("168.63.129.16/32"), ReasonMetadata, "Azure WireServer: VM agent configuration and extension settings for the machine"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), ReasonMetadata, "AWS instance metadata over IPv6 (Nitro): hands out the machine's cloud credentials"},
	{netip.MustParsePrefix("127.0.0.0/8"), ReasonLoopback, "the host's loopback: its databases, dev servers, agents and this proxy's own listeners"},
	{netip.MustParsePrefix("::1/128"), ReasonLoopback, "the host's IPv6 loopback"},
	{netip.MustParsePrefix("0.0.0.0/8"), ReasonUnspecified, "\"this network\": Linux delivers a connect to 0.0.0.0 to the host itself"},
	{netip.MustParsePrefix("::/128"), ReasonUnspecified, "the unspecified address: Linux delivers a connect to :: to the host itself"},
	{netip.MustParsePrefix("169.254.0.0/16"), ReasonLinkLocal, "IPv4 link-local: platform services (169.254.170.2 is the ECS task credential endpoint) and unconfigured neighbours"},
	{netip.MustParsePrefix("fe80::/10"), ReasonLinkLocal, "IPv6 link-local: neighbours on the host's own links, never a destination on the internet"},
	{netip.MustParsePrefix("224.0.0.0/4"), ReasonMulticast, "IPv4 multicast: not a TCP destination"},
	{netip.MustParsePrefix("ff00::/8"), ReasonMulticast, "IPv6 multicast: not a TCP destination"},
	{netip.MustParsePrefix("255.255.255.255/32"), ReasonBroadcast, "limited broadcast: not a TCP destination"},
}

// embeddedIPv4 lists IPv6 prefixes whose last 32 bits are an IPv4 address that a
// translator on the path (NAT64) or an old stack (IPv4-compatible addresses)
// may connect to, so the guard checks that IPv4 address too.
var embeddedIPv4 = []netip.Prefix{
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64 well-known prefix (RFC 6052)
	netip.MustParsePrefix("64:ff9b:1::/48"), // NAT64 local-use prefix (RFC 8215)
	netip.MustParsePrefix("::/96"),          // IPv4-compatible IPv6 (deprecated, RFC 4291)
}

// refused returns the reason and why an address may not be dialed unless Check
// allows its literal, or "" when it may.
func (s *Server) refused(a netip.Addr) (reason, why string) {
	a = a.WithZone("").Unmap()
	check := []netip.Addr{a}
	for _, p := range embeddedIPv4 {
		if a.Is6() && p.Contains(a) {
			b := a.As16()
			check = append(check, netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
			break
		}
	}
	for i, c := range check {
		prefix := ""
		if i > 0 {
			prefix = "embeds " + c.String() + ": "
		}
		// The ranges first: a loopback address is reported as loopback even
		// though it is also one of the host's own.
		for _, r := range refusedRanges {
			if r.prefix.Contains(c) {
				return r.reason, prefix + r.why
			}
		}
		for _, h := range s.ownAddrs() {
			if h.WithZone("").Unmap() == c {
				return ReasonHostAddr, prefix + "one of the host's own addresses: reaches its services as loopback does"
			}
		}
		if s.IsLocal != nil && s.IsLocal(c) {
			return ReasonHostAddr, prefix + "one of the host's own addresses: reaches its services as loopback does"
		}
	}
	return "", ""
}

// ownAddrs returns what HostAddrs returns, calling it the first time only.
func (s *Server) ownAddrs() []netip.Addr {
	s.hostOnce.Do(func() {
		if s.HostAddrs != nil {
			s.hostAddrs = s.HostAddrs()
		}
	})
	return s.hostAddrs
}
