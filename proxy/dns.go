package proxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// ServeDNS serves the DNS stub on a UDP socket until Close.
func (s *Server) ServeDNS(pc net.PacketConn) error {
	if err := s.start(pc); err != nil {
		return err
	}
	defer s.untrack(pc)
	inFlight := make(chan struct{}, maxDNSInFlight)
	buf := make([]byte, 64<<10)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			if err := s.serveErr("read DNS request on", pc.LocalAddr(), err); err != nil {
				return err
			}
			continue // a stray ICMP error or the like: the socket still serves
		}
		msg := append([]byte(nil), buf[:n]...)
		select {
		case inFlight <- struct{}{}:
		case <-s.ctx.Done():
			return ErrServerClosed
		}
		ok := s.goHandle(func() {
			defer func() { <-inFlight }()
			if resp := s.answerDNS(s.ctx, msg); resp != nil {
				pc.WriteTo(resp, addr)
			}
		})
		if !ok {
			return ErrServerClosed
		}
	}
}

// serveDNSConn serves DNS over one TCP connection: length-prefixed messages,
// answered in order, closed after IdleTimeout without a request.
func (s *Server) serveDNSConn(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		c.SetReadDeadline(time.Now().Add(s.idleTimeout()))
		var l [2]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(br, msg); err != nil {
			return
		}
		c.SetReadDeadline(time.Time{})
		resp := s.answerDNS(s.ctx, msg)
		if resp == nil {
			return
		}
		c.SetWriteDeadline(time.Now().Add(s.handshakeTimeout()))
		out := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(resp)), uint16(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

// answerDNS answers one request message, or returns nil for input that gets no
// answer (no parsable header, or a response rather than a query). Only an A or
// AAAA query for a name CheckName allows reaches Resolve; everything else is
// answered from here. The addresses answered are remembered for decideLiteral.
func (s *Server) answerDNS(ctx context.Context, msg []byte) []byte {
	const proto = "dns"
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		s.logRefusal(proto, &refusal{reason: ReasonBadRequest, detail: "DNS header: " + err.Error()})
		return nil
	}
	if h.Response {
		s.logRefusal(proto, &refusal{reason: ReasonBadRequest, detail: "a DNS response sent as a query"})
		return nil
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	refuse := func(rcode dnsmessage.RCode, q *dnsmessage.Question, r *refusal) []byte {
		s.logRefusal(proto, r)
		rh.RCode = rcode
		return buildDNS(rh, q, nil)
	}
	if h.OpCode != 0 {
		return refuse(dnsmessage.RCodeNotImplemented, nil, &refusal{reason: ReasonBadRequest, detail: fmt.Sprintf("DNS opcode %d", h.OpCode)})
	}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) != 1 {
		return refuse(dnsmessage.RCodeFormatError, nil, &refusal{reason: ReasonBadRequest, detail: fmt.Sprintf("DNS message with %d questions (%v)", len(qs), err)})
	}
	q := qs[0]
	if q.Class != dnsmessage.ClassINET || q.Type != dnsmessage.TypeA && q.Type != dnsmessage.TypeAAAA {
		name, _, _ := canonHost(q.Name.String())
		r := &refusal{reason: ReasonQType, host: name, detail: fmt.Sprintf("%v %v query for %q: only IN A and AAAA", q.Class, q.Type, q.Name.String())}
		return refuse(dnsmessage.RCodeNotImplemented, &q, r)
	}
	host, ip, err := canonHost(q.Name.String())
	if err == nil && ip.IsValid() {
		err = fmt.Errorf("%w %q: an address, not a name", errBadHost, q.Name.String())
	}
	if err != nil {
		return refuse(dnsmessage.RCodeRefused, &q, &refusal{reason: ReasonBadHost, detail: err.Error()})
	}
	d := s.checkName(host)
	if !d.Allow {
		return refuse(dnsmessage.RCodeRefused, &q, policyRefusal(target{host: host}, d))
	}
	addrs, err := s.resolve(ctx, host)
	if err != nil {
		rcode := dnsmessage.RCodeServerFailure
		var de *net.DNSError
		if errors.As(err, &de) && de.IsNotFound {
			rcode = dnsmessage.RCodeNameError
		}
		return refuse(rcode, &q, &refusal{reason: ReasonResolveFailed, host: host, rule: d.Rule, detail: err.Error()})
	}
	var answers []netip.Addr
	var notes []string
	for _, a := range addrs {
		a = a.WithZone("").Unmap()
		if a.Is4() != (q.Type == dnsmessage.TypeA) {
			continue
		}
		if reason, _ := s.refused(a); reason != "" {
			notes = append(notes, "dropped "+a.String()+" ("+reason+")")
			continue
		}
		if dl := s.checkName(a.String()); !dl.Allow && !dl.Default {
			notes = append(notes, "dropped "+a.String()+" ("+ReasonDenied+")")
			continue
		}
		if len(answers) < maxAnswersPerName {
			answers = append(answers, a)
		}
	}
	s.handed.add(host, answers)
	rh.RCode = dnsmessage.RCodeSuccess
	resp := buildDNS(rh, &q, answers)
	detail := q.Type.String() + " " + fmt.Sprint(answers)
	if len(notes) > 0 {
		detail += "; " + strings.Join(notes, ", ")
	}
	s.emit(Event{Action: actionAllow, Proto: proto, Host: host, Rule: d.Rule, Detail: detail})
	return resp
}

// buildDNS builds a response: the question echoed when there is one, and A or
// AAAA answers with a short TTL.
func buildDNS(h dnsmessage.Header, q *dnsmessage.Question, answers []netip.Addr) []byte {
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), h)
	b.EnableCompression()
	if q != nil {
		if b.StartQuestions() != nil || b.Question(*q) != nil {
			return nil
		}
	}
	if b.StartAnswers() != nil {
		return nil
	}
	for _, a := range answers {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: dnsTTL}
		var err error
		if a.Is4() {
			err = b.AResource(rh, dnsmessage.AResource{A: a.As4()})
		} else {
			err = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}
