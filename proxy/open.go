package proxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
)

// dest is a destination that passed every check.
type dest struct {
	target              // as the client asked for it, canonical
	name   string       // the name Check allowed: target.host, a name a handed-out address maps back to, or "" for an allowed literal
	addrs  []netip.Addr // checked, in the order to try them
	rule   string
}

// refusal is a request the proxy refuses, or one it allowed that failed.
type refusal struct {
	reason     string
	host       string
	port       int
	addr       string // the address refused or last dialed
	rule, hint string
	detail     string
	socks      byte // SOCKS5 reply code overriding the reason's
}

func policyRefusal(t target, d Decision) *refusal {
	r := &refusal{reason: ReasonDenied, host: t.host, port: t.port, rule: d.Rule, hint: d.Hint}
	if d.Default {
		r.reason = ReasonNotAllowed
	}
	return r
}

// open checks a destination and dials it. The caller untracks and closes the
// connection.
func (s *Server) open(t target) (*dest, net.Conn, netip.AddrPort, *refusal) {
	d, r := s.decide(s.ctx, t)
	if r != nil {
		return nil, nil, netip.AddrPort{}, r
	}
	up, ap, r := s.connect(s.ctx, d)
	if r != nil {
		return nil, nil, ap, r
	}
	return d, up, ap, nil
}

// decide checks a destination: the policy for the name or literal, then, for a
// name, one lookup and the address guard for each address it returns.
func (s *Server) decide(ctx context.Context, t target) (*dest, *refusal) {
	if t.ip.IsValid() {
		return s.decideLiteral(t)
	}
	d := s.ask(t, s.Check(t.host, t.port))
	if !d.Allow {
		return nil, policyRefusal(t, d)
	}
	addrs, err := s.resolve(ctx, t.host)
	if err == nil && len(addrs) == 0 {
		err = errors.New("no addresses")
	}
	if err != nil {
		return nil, &refusal{reason: ReasonResolveFailed, host: t.host, port: t.port, rule: d.Rule, detail: err.Error()}
	}
	var ok []netip.Addr
	var first *refusal
	for _, a := range addrs {
		a = a.WithZone("").Unmap()
		if r := s.checkAddr(t.host, a, t.port); r != nil {
			if first == nil {
				first = r
			}
			continue
		}
		if len(ok) < maxAnswersPerName {
			ok = append(ok, a)
		}
	}
	if len(ok) == 0 {
		return nil, first
	}
	return &dest{target: t, name: t.host, addrs: ok, rule: d.Rule}, nil
}

// decideLiteral allows an IP literal that Check allows, or one the DNS stub
// handed out for a name that Check allows on this port.
func (s *Server) decideLiteral(t target) (*dest, *refusal) {
	lit := s.Check(t.host, t.port)
	if lit.Allow {
		return &dest{target: t, addrs: []netip.Addr{t.ip}, rule: lit.Rule}, nil
	}
	if lit.Default {
		for _, n := range s.handed.names(t.ip) {
			d := s.Check(n, t.port)
			if !d.Allow {
				continue
			}
			if r := s.checkAddr(n, t.ip, t.port); r != nil {
				return nil, r
			}
			return &dest{target: t, name: n, addrs: []netip.Addr{t.ip}, rule: d.Rule}, nil
		}
		// A person's answer is not a rule: an address it allows still passes the
		// address guard.
		if lit = s.ask(t, lit); lit.Allow {
			if reason, why := s.refused(t.ip); reason != "" {
				return nil, &refusal{reason: reason, host: t.host, port: t.port, addr: netip.AddrPortFrom(t.ip, uint16(t.port)).String(),
					detail: t.ip.String() + " is " + why, hint: "only a rule that lists the address itself allows it"}
			}
			return &dest{target: t, addrs: []netip.Addr{t.ip}, rule: lit.Rule}, nil
		}
	}
	return nil, policyRefusal(t, lit)
}

// ask hands a destination no rule decides (Check refused it by Default) to
// Server.Ask, when set, and returns its decision instead.
func (s *Server) ask(t target, d Decision) Decision {
	if d.Allow || !d.Default || s.Ask == nil {
		return d
	}
	return s.Ask(t.host, t.port, d)
}

// checkAddr is the address guard for an address host resolved to: a rule
// refusing the literal wins, a rule allowing it wins over the refused ranges.
func (s *Server) checkAddr(host string, a netip.Addr, port int) *refusal {
	ap := netip.AddrPortFrom(a, uint16(port)).String()
	lit := s.Check(a.String(), port)
	switch {
	case lit.Allow:
		return nil
	case !lit.Default:
		return &refusal{reason: ReasonDenied, host: host, port: port, addr: ap, rule: lit.Rule, hint: lit.Hint,
			detail: "a rule refuses the address " + a.String()}
	}
	if reason, why := s.refused(a); reason != "" {
		return &refusal{reason: reason, host: host, port: port, addr: ap, detail: a.String() + " is " + why,
			hint: "to reach it anyway, allow the address itself (" + ap + "); allowing a name is not enough"}
	}
	return nil
}

// connect dials the checked addresses in order until one answers.
func (s *Server) connect(ctx context.Context, d *dest) (net.Conn, netip.AddrPort, *refusal) {
	var last netip.AddrPort
	var lastErr error
	for _, a := range d.addrs {
		last = netip.AddrPortFrom(a, uint16(d.port))
		c, err := s.dial(ctx, last)
		if err == nil {
			if !s.track(c) {
				return nil, last, &refusal{reason: ReasonDialFailed, host: d.host, port: d.port, addr: last.String(), detail: "proxy closing"}
			}
			return c, last, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	r := &refusal{reason: ReasonDialFailed, host: d.eventHost(), port: d.port, addr: last.String(), rule: d.rule, detail: lastErr.Error()}
	if errors.Is(lastErr, syscall.ECONNREFUSED) {
		r.socks = socksRefused
	}
	return nil, last, r
}

// eventHost is the host to log: the name an address was mapped back to, if any.
func (d *dest) eventHost() string {
	if d.name != "" {
		return d.name
	}
	return d.host
}

func (s *Server) logRefusal(proto string, r *refusal) {
	s.emit(Event{Proto: proto, Host: r.host, Port: r.port, Addr: r.addr, Reason: r.reason, Rule: r.rule, Hint: r.hint, Detail: r.detail})
}

func (s *Server) logAllow(proto string, d *dest, ap netip.AddrPort) {
	s.emit(Event{Action: actionAllow, Proto: proto, Host: d.eventHost(), Port: d.port, Addr: ap.String(), Rule: d.rule})
}
