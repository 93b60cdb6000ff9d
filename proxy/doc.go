// Package proxy is moat's network filter: an HTTP proxy, a SOCKS5 proxy and a DNS
// stub that let a sandboxed command reach the hosts a policy allows, and nothing
// else. It knows nothing of namespaces or of moat's settings: it serves the
// listeners it is given and takes the policy as functions.
//
// # Use
//
//	srv := &proxy.Server{
//		Check: func(host string, port int) proxy.Decision {
//			if host == "github.com" && port == 443 {
//				return proxy.Decision{Allow: true, Rule: "settings.json:3 network.allowedDomains[0]"}
//			}
//			return proxy.Decision{Default: true, Rule: "no rule allows this host",
//				Hint: "allow with --allow-net " + host}
//		},
//		CheckName: func(host string) proxy.Decision { ... }, // may the DNS stub resolve it
//		Events:    func(e proxy.Event) { mu.Lock(); enc.Encode(e); mu.Unlock() }, // a json.Encoder
//		HostAddrs: hostAddrs, // func() []netip.Addr: the host's own addresses, called once when first needed
//	}
//	go srv.Serve(proxyListener)    // HTTP proxy, CONNECT and SOCKS5 on one port
//	go srv.ServeDNS(dnsUDP)        // DNS stub, UDP
//	go srv.ServeDNSTCP(dnsTCP)     // DNS stub, TCP
//	...
//	srv.Close() // stops all three, closes every connection, waits for the handlers
//
// Inside the sandbox, point http_proxy, https_proxy and all_proxy at the one port
// (http://127.0.0.1:PORT or socks5h://127.0.0.1:PORT) and resolv.conf at the stub.
//
// # What is served
//
// One listener carries three protocols, told apart by the first byte (0x05 is
// SOCKS5, anything else HTTP/1.x):
//
//   - HTTP forward proxy: absolute-form requests, "GET http://host[:port]/path".
//     Each request on a keep-alive connection is checked on its own and goes over
//     its own upstream connection (with Connection: close); the path is sent in
//     origin form with a canonical Host field, and hop-by-hop fields (Connection
//     and the fields it names, Keep-Alive, TE, Trailer, Upgrade, Transfer-Encoding)
//     and every Proxy-* field are dropped both ways. Request bodies are framed
//     strictly: chunked or Content-Length, never both; heads are limited to 64
//     KiB both ways. https:// targets and origin-form requests are refused
//     (clients use CONNECT for https). Responses are read as net/http reads
//     them, with the proxy's own reader (see readResponse): no body for HEAD,
//     1xx, 204 and 304, then chunked, then Content-Length, else until the
//     upstream closes; other transfer codings, differing lengths and malformed
//     heads get 502. The client gets them as HTTP/1.1: a body of known length
//     spliced, a chunked one re-chunked without extensions and trailer fields
//     (de-chunked, until close, for an HTTP/1.0 client), one that ends at close
//     with Connection: close. 1xx responses are relayed before the final one.
//   - HTTP CONNECT host:port, then a tunnel.
//   - SOCKS5 (RFC 1928): "no authentication" only; CONNECT only (BIND and UDP
//     ASSOCIATE get reply 0x07); address types IPv4, IPv6 and domain name. The
//     reply's bound address is always 0.0.0.0:0.
//   - DNS stub over UDP and TCP: A and AAAA queries for allowed names only.
//
// # Checks, in order
//
//  1. Host syntax. Hosts are parsed strictly and made canonical before anything
//     else: lower case, one trailing dot dropped, ASCII letters, digits, '-' and
//     '_' in labels of 1-63 bytes, 253 in all. Refused: control bytes, NUL,
//     spaces, '%' (percent-encoding, IPv6 zones), userinfo ("http://a@b/"),
//     other punctuation, empty labels, and non-ASCII: internationalized names must
//     arrive as punycode ("xn--bcher-kva.example"), which is what curl, browsers
//     and Go send. (Converting with golang.org/x/net/idna would pull
//     golang.org/x/text into the module.) IPv4 in every inet_aton form ("127.1",
//     "0x7f.1", "2130706433", "0177.0.0.1") becomes the dotted literal; a host
//     whose last label is a number and that is no such form is refused. IPv6 is
//     unbracketed, and IPv4-mapped IPv6 becomes IPv4. Port 0 is refused.
//  2. Policy: Check(host, port) with the canonical host. For an IP literal that
//     Check refuses by default (Decision.Default), the proxy looks the address up
//     among those its DNS stub answered during this Server's life: if it was
//     handed out for a name (most recent first) that Check allows on this port,
//     the connection is checked and logged as that name, and dials that address
//     after the address guard of step 3.
//     This serves clients that resolve before they connect (curl with socks5://
//     rather than socks5h://). The table keeps 4096 addresses and 8 names per
//     address, least recently answered dropped first.
//  3. Address guard, for a name: the name is resolved once (Resolve); each
//     address is refused when Check refuses its literal with a rule, or when it
//     is in a refused range (loopback, unspecified, link-local, multicast,
//     broadcast, cloud metadata: see refusedRanges in guard.go for each with its
//     reason; IPv4-mapped and NAT64 forms count as their IPv4 address) or among
//     HostAddrs, unless Check allows the literal itself ("127.0.0.1:8080"). A
//     rule for the name is not enough to reach loopback. Private ranges are not
//     refused. The addresses left are dialed in order until one connects: Dial
//     is always called with a checked address, never a name, and nothing is
//     looked up twice. This also keeps the proxy from reaching itself or being
//     chained to another proxy on the host's loopback.
//  4. Plain HTTP: a Host field, if present, must name the request target's host
//     and port (canonical compare; no port means 80).
//  5. Tunnels (CONNECT and SOCKS5): the client's first bytes are read before
//     they are forwarded; server-first protocols still work, as the other
//     direction flows at once. If the first byte is 0x16 the proxy reads the TLS
//     ClientHello (records may be fragmented; 64 KiB at most, HandshakeTimeout
//     once begun) and refuses the tunnel unless, for a destination asked for by
//     name, its server_name is that name; for an IP literal, it has no
//     server_name, or names the literal, the name the address maps back to, or
//     a host Check allows on the port. Duplicate extensions or several names are
//     refused. A ClientHello in SSL 2.0's record format (which can't name a
//     server) is refused. Anything else that does not start with 0x16 passes
//     (ssh, git).
//
// After the checks a tunnel is plain io.Copy between the two connections, which
// for two *net.TCPConn is splice(2); EOF in one direction becomes CloseWrite on
// the other side. Handshakes, request heads and ClientHellos have timeouts;
// established tunnels have none.
//
// # DNS stub
//
// Only IN A and AAAA queries with one question for a name CheckName allows are
// resolved, with Resolve, and answered with at most 8 addresses that pass the
// address guard (refused ranges and HostAddrs are never answered, not even when
// a rule allows the literal: a client inside the sandbox would connect to its
// own loopback; nor are addresses whose literal CheckName refuses with a rule),
// with TTL 10 s. Nothing else causes an upstream query:
//
//	denied name, malformed name, address as a name   REFUSED
//	other types (TXT, MX, ANY, HTTPS...), class      NOTIMP
//	opcode other than QUERY                          NOTIMP
//	not one question, malformed question             FORMERR
//	no parsable header, a response                   no answer
//	Resolve fails: not found / other                 NXDOMAIN / SERVFAIL
//
// REFUSED rather than NXDOMAIN for denied names: it does not claim the name does
// not exist, and resolvers do not cache it as such. Port-specific rules: a name
// is resolvable when CheckName allows it, which should mean some rule allows it
// on some port; the port is then checked on connect. Without CheckName the stub
// calls Check(host, 0).
//
// # Refusals and events
//
// Every refusal calls Events once and answers in the protocol's way:
//
//   - HTTP and CONNECT: status 403 (policy, guard, Host mismatch), 400 (malformed
//     request or host) or 502 (allowed but resolving, dialing or the upstream
//     failed), a short text/plain body saying what was blocked, the rule and the
//     hint, a header X-Moat-Blocked: <reason> (X-Moat-Error for 502), and the
//     connection closed.
//   - SOCKS5: reply 0x02 (policy, guard, bad host), 0x04 (resolve or dial
//     failed), 0x05 (connection refused), 0x07 (command), 0x08 (address type),
//     0x01 (malformed); method 0xFF when "no authentication" is not offered.
//   - A ClientHello that fails is logged and the tunnel closed.
//
// Allowed connections, requests and lookups are logged with Action "allow" and
// the Rule that allowed them; a tunnel is logged when it opens, so a later
// sni-mismatch adds a "deny" event for it. Reasons are the Reason constants.
//
// # Limitations
//
//   - Inside TLS the proxy sees nothing: an allowed host that routes by the inner
//     Host header (a CDN, "domain fronting") reaches what it routes to. Encrypted
//     Client Hello hides the inner name behind the outer server_name, which is
//     what is checked.
//   - Inside a tunnel only a TLS ClientHello is checked: plain HTTP sent through
//     CONNECT or SOCKS5 to an allowed host:port carries whatever Host it likes.
//   - An address the DNS stub handed out for several names (a CDN) maps back to
//     the most recent of them that Check allows on the port; which one the
//     client meant is not known, so any of them may be reached that way.
//   - A non-TLS protocol whose first byte is 0x16 is refused as bad-tls.
//   - Plain HTTP opens one upstream connection per request; Upgrade (WebSocket
//     over ws://) is not forwarded. Use CONNECT for long-lived protocols.
//   - Trailer fields of chunked bodies are dropped, both ways.
//   - UDP other than DNS, and QUIC, are not proxied.
package proxy
