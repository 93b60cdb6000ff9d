package sandbox

import (
	"errors"
	"net"
	"strconv"
	"sync"

	"github.com/moat-sandbox/moat/proxy"
)

// Request is a connection the policy leaves undecided: no rule allows or denies
// its host. Cmd.Approve is asked about it; an error means no one could be asked
// (no terminal), and the connection is refused.
type Request struct {
	Host string // canonical: a lower-case name, or an IP literal
	Port int
}

// Approval is an answer to a Request.
type Approval int

const (
	// Deny refuses the connection, and every later one to the same host and port
	// in this run, without asking again.
	Deny Approval = iota
	// AllowOnce allows this connection; the next one is asked about again.
	AllowOnce
	// AllowRun allows connections to the host and port until the command exits.
	AllowRun
	// AllowAlways is AllowRun, for an answer the approver also recorded for
	// later runs (the moat CLI writes a rule to the user's config).
	AllowAlways
	// DenyAll refuses the connection and every undecided one after it in this
	// run, without asking again.
	DenyAll
)

// approvals keeps a run's answers, so a person is asked once per host and port,
// and one question at a time.
type approvals struct {
	ask func(Request) (Approval, error)

	asking sync.Mutex // one question at a time
	mu     sync.Mutex
	answer map[string]Approval // host:port -> AllowRun, AllowAlways or Deny
	names  map[string]bool     // hosts allowed for the run on some port, for the DNS stub
	refuse bool                // DenyAll was answered
}

func newApprovals(ask func(Request) (Approval, error)) *approvals {
	return &approvals{ask: ask, answer: map[string]Approval{}, names: map[string]bool{}}
}

// decide is the proxy's Ask: d is the policy's default refusal of host:port.
func (a *approvals) decide(host string, port int, d proxy.Decision) proxy.Decision {
	key := net.JoinHostPort(host, strconv.Itoa(port))
	if v, ok := a.recorded(key); ok {
		return a.decision(v, d)
	}
	a.asking.Lock()
	defer a.asking.Unlock()
	// Another connection may have been asked about the same host meanwhile.
	if v, ok := a.recorded(key); ok {
		return a.decision(v, d)
	}
	v, err := a.ask(Request{Host: host, Port: port})
	if err != nil {
		d.Rule += "; no one was asked (" + err.Error() + ")"
		return d
	}
	a.mu.Lock()
	switch v {
	case AllowRun, AllowAlways:
		a.answer[key] = v
		a.names[host] = true
	case AllowOnce:
	case DenyAll:
		a.refuse = true
	default:
		v = Deny
		a.answer[key] = v
	}
	a.mu.Unlock()
	return a.decision(v, d)
}

func (a *approvals) recorded(key string) (Approval, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if v, ok := a.answer[key]; ok {
		return v, true
	}
	if a.refuse {
		return DenyAll, true
	}
	return 0, false
}

// decision turns an answer into the proxy's decision, d being the refusal the
// policy gave.
func (a *approvals) decision(v Approval, d proxy.Decision) proxy.Decision {
	switch v {
	case AllowOnce:
		return proxy.Decision{Allow: true, Rule: "allowed at the terminal, once"}
	case AllowRun:
		return proxy.Decision{Allow: true, Rule: "allowed at the terminal for this run"}
	case AllowAlways:
		return proxy.Decision{Allow: true, Rule: "allowed at the terminal, always (recorded in the config)"}
	case DenyAll:
		d.Rule += "; refused at the terminal (deny all)"
	default:
		d.Rule += "; refused at the terminal"
	}
	return d
}

// allowsName says whether an answer allowed host for this run: the DNS stub then
// resolves it.
func (a *approvals) allowsName(host string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.names[host]
}

// allowed reports whether an answer allowed host:port for the rest of the run.
func (a *approvals) allowed(host string, port int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	v := a.answer[net.JoinHostPort(host, strconv.Itoa(port))]
	return v == AllowRun || v == AllowAlways
}

// approvedHosts makes check allow what an answer allowed for the run, where no
// rule decides: the proxy checks a name again after the DNS stub handed out its
// addresses, and a ClientHello's server name.
func approvedHosts(check func(string, int) proxy.Decision, a *approvals) func(string, int) proxy.Decision {
	return func(host string, port int) proxy.Decision {
		d := check(host, port)
		if !d.Allow && d.Default && a.allowed(host, port) {
			return a.decision(a.answerFor(host, port), d)
		}
		return d
	}
}

func (a *approvals) answerFor(host string, port int) Approval {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.answer[net.JoinHostPort(host, strconv.Itoa(port))]
}

// approvedNames makes the DNS stub's check resolve a name an answer allowed for
// the run, where no rule decides it.
func approvedNames(check func(string) proxy.Decision, a *approvals) func(string) proxy.Decision {
	return func(host string) proxy.Decision {
		d := check(host)
		if !d.Allow && d.Default && a.allowsName(host) {
			return proxy.Decision{Allow: true, Rule: "allowed at the terminal for this run"}
		}
		return d
	}
}

// errNoTerminal is WithTerminal's error when the command doesn't run as the
// terminal's foreground job.
var errNoTerminal = errors.New("the command does not run as a terminal's foreground job")
