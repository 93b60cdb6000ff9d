// Package connbroker decides a sandboxed process's connect and listen calls in the
// supervisor, when the process shares the host's network: it reads each address once from
// the process, and connects or listens on the process's socket itself (pidfd_getfd), to its
// own copy of an allowed address, so a racing rewrite of the process's memory changes
// nothing.
package connbroker

import (
	"fmt"
	"net/netip"
	"syscall"
)

// Policy is what a sandboxed process may reach.
type Policy struct {
	// TCP lists the addresses any TCP socket may connect to: moat's proxy. IPv4-mapped IPv6
	// addresses match their IPv4 form.
	TCP []netip.AddrPort
	// Unix lists pathname unix sockets that may be connected to (absolute paths; symlinks
	// are followed once, when the broker is made). Connects through any other name of the
	// same socket file (a relative path, a symlink) are allowed too: sockets are matched by
	// device and inode.
	Unix []string
	// LocalBinding lets listen() succeed on TCP sockets bound to a loopback address, and
	// connect() reach such listeners of the sandbox's own. Without it no TCP socket may
	// listen. Unix sockets may always listen, and their own listeners be connected to.
	LocalBinding bool
	// DNS lists the nameservers (resolv.conf's, port 53) whose TCP connects go to
	// DNSStub instead: moat's DNS stub, which answers only names the policy allows. The
	// process believes it reached its nameserver; nothing is sent there.
	DNS     []netip.AddrPort
	DNSStub netip.AddrPort
}

// ReasonDNS is the Reason of a connect to a nameserver that the DNS stub took.
const ReasonDNS = "a nameserver: moat's DNS stub answers"

// Event describes one decided call, for logs ("blocked connect to 1.2.3.4:443").
type Event struct {
	Pid     int           // the calling thread
	Call    string        // "connect" or "listen"
	Addr    string        // the address asked for, as the broker read it
	Allowed bool          // the broker carried the call out (it may still have failed: Errno)
	Errno   syscall.Errno // what the call returned; 0 for success
	Reason  string        // why it was refused, or how it was allowed
}

func (e Event) String() string {
	verb := "allowed"
	if !e.Allowed {
		verb = "blocked"
	}
	s := fmt.Sprintf("%s %s to %s by process %d", verb, e.Call, e.Addr, e.Pid)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Errno != 0 {
		s += " (" + e.Errno.Error() + ")"
	}
	return s
}
