package proxy

// Event reasons. They are stable names a log reader can match on.
const (
	ReasonDenied                         = "denied-by-rule"       // a rule refused the host (Decision.Default false)
	ReasonNotAllowed                     = "not-allowed"          // no rule allowed the host (Decision.Default true)
	ReasonLoopback                       = "address-loopback"     // see refusedRanges
	ReasonLinkLocal                      = "address-link-local"   // see refusedRanges
	ReasonMetadata                       = "address-metadata"     // see refusedRanges
	ReasonUnspecified                    = "address-unspecified"  // see refusedRanges
	ReasonMulticast                      = "address-multicast"    // see refusedRanges
	ReasonBroadcast                      = "address-broadcast"    // see refusedRanges
	ReasonHostAddr                       = "address-host"         // one of Server.HostAddrs
	ReasonSNIMismatch                    = "sni-mismatch"         // the TLS ClientHello names another host, or none
	ReasonBadTLS                         = "bad-tls"              // first byte 0x16 but no readable ClientHello
	ReasonHostHeader                     = "host-header-mismatch" // Host header names another host than the request
	ReasonBadRequest                     = "bad-request"          // a malformed HTTP, SOCKS5 or DNS request
	ReasonBadHost                        = "bad-host"             // a host name or address the parser refuses
	ReasonAuth                           = "auth-not-supported"   // SOCKS5 client offers no "no authentication" method
	ReasonCommand                        = "command-not-supported"
	ReasonAddrType                       = "address-type-not-supported"
	ReasonQType                          = "qtype-not-supported" // DNS query for something other than A or AAAA
	ReasonResolveFailed                  = "resolve-failed"
	ReasonDialFailed                     = "dial-failed"
	ReasonUpstreamFailed                 = "upstream-failed" // plain HTTP: no readable response
	actionAllow, actionDeny, actionError = "allow", "deny", "error"
)

// SOCKS5 reply codes (RFC 1928 section 6).
const (
	socksOK              = 0x00
	socksFailure         = 0x01
	socksNotAllowed      = 0x02
	socksHostUnreachable = 0x04
	socksRefused         = 0x05
	socksBadCommand      = 0x07
	socksBadAddrType     = 0x08
)

// The HTTP statuses of refusals, and their reason phrases (RFC 9110 15).
const (
	statusBadRequest = 400
	statusForbidden  = 403
	statusBadGateway = 502
)

var statusText = map[int]string{
	statusBadRequest: "Bad Request",
	statusForbidden:  "Forbidden",
	statusBadGateway: "Bad Gateway",
}

// reasonInfo says how each protocol reports a reason.
type reasonInfo struct {
	action string // actionDeny: refused; actionError: allowed, but it failed
	status int    // HTTP status for plain HTTP and CONNECT
	socks  byte   // SOCKS5 reply code
}

// reasons maps every reason to how it is reported. A reason missing here is a bug
// (info panics), which the tests catch.
var reasons = map[string]reasonInfo{
	ReasonDenied:         {actionDeny, statusForbidden, socksNotAllowed},
	ReasonNotAllowed:     {actionDeny, statusForbidden, socksNotAllowed},
	ReasonLoopback:       {actionDeny, statusForbidden, socksNotAllowed},
	ReasonLinkLocal:      {actionDeny, statusForbidden, socksNotAllowed},
	ReasonMetadata:       {actionDeny, statusForbidden, socksNotAllowed},
	ReasonUnspecified:    {actionDeny, statusForbidden, socksNotAllowed},
	ReasonMulticast:      {actionDeny, statusForbidden, socksNotAllowed},
	ReasonBroadcast:      {actionDeny, statusForbidden, socksNotAllowed},
	ReasonHostAddr:       {actionDeny, statusForbidden, socksNotAllowed},
	ReasonSNIMismatch:    {actionDeny, 0, 0}, // after the tunnel is up: the proxy closes it
	ReasonBadTLS:         {actionDeny, 0, 0},
	ReasonHostHeader:     {actionDeny, statusForbidden, socksNotAllowed},
	ReasonBadRequest:     {actionDeny, statusBadRequest, socksFailure},
	ReasonBadHost:        {actionDeny, statusBadRequest, socksNotAllowed},
	ReasonAuth:           {actionDeny, 0, 0}, // answered with method 0xFF
	ReasonCommand:        {actionDeny, statusBadRequest, socksBadCommand},
	ReasonAddrType:       {actionDeny, statusBadRequest, socksBadAddrType},
	ReasonQType:          {actionDeny, 0, 0},
	ReasonResolveFailed:  {actionError, statusBadGateway, socksHostUnreachable},
	ReasonDialFailed:     {actionError, statusBadGateway, socksHostUnreachable},
	ReasonUpstreamFailed: {actionError, statusBadGateway, socksFailure},
}

func info(reason string) reasonInfo {
	ri, ok := reasons[reason]
	if !ok {
		panic("proxy: bug: reason " + reason + " has no entry in reasons")
	}
	return ri
}
