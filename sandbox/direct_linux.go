//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/internal/linux/connbroker"
	"github.com/moat-sandbox/moat/internal/linux/direct"
	"github.com/moat-sandbox/moat/internal/spec"
	"github.com/moat-sandbox/moat/policy"
	"github.com/moat-sandbox/moat/proxy"
)

// The direct mode: where the kernel refuses user namespaces (Ubuntu 24.04's AppArmor
// restriction, containers, user.max_user_namespaces=0), the command runs without
// namespaces under the same plan, enforced by internal/linux/direct: Landlock granted
// around denied and protected paths, moat's seccomp filter, and a supervising stage
// that makes every connect on the command's behalf (only the proxy, on a host
// loopback port, and the allowed unix sockets) and kills everything the command
// leaves behind. README "Hosts without user namespaces" says what it can't enforce.

// refusedErrnos are the errors with which clone(CLONE_NEWUSER|...) or the write of the
// new namespace's uid map fails when the host doesn't allow user namespaces: nothing
// has run yet, so the direct mode can take over.
var refusedErrnos = []struct {
	errno syscall.Errno
	why   string
}{
	{syscall.EPERM, "forbidden by a sysctl, an LSM (Ubuntu's AppArmor restriction) or a container's seccomp profile"},
	{syscall.EACCES, "denied by an LSM"},
	{syscall.ENOSPC, "user.max_user_namespaces is 0 or reached, or a container limits nesting"},
	{syscall.EUSERS, "too deeply nested"},
	{syscall.EINVAL, "kernel built without CONFIG_USER_NS or another namespace"},
}

// namespacesRefused reports whether err, from starting the namespace init, is the
// kernel refusing the namespaces, and which errno.
func namespacesRefused(err error) (syscall.Errno, bool) {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return 0, false
	}
	for _, r := range refusedErrnos {
		if r.errno == errno {
			return errno, true
		}
	}
	return 0, false
}

// minScopedABI is the Landlock ABI that confines signals and abstract unix sockets to
// the sandbox, which the direct mode needs in place of a pid namespace.
const minScopedABI = 6

const readmeSection = `README "Hosts without user namespaces"`

// startDirect runs s in the direct mode, with the proxy on a host loopback port.
// refused is how the kernel refused the namespaces, or "" when Cmd.Direct asked for
// the direct mode.
func (c *Cmd) startDirect(s *spec.Spec, env []string, srv *proxy.Server, refused string) (process, error) {
	situation := "user namespaces are unavailable (" + refused + ")"
	if refused == "" {
		situation = "the direct mode was asked for"
	}
	if rn := c.Policy.RequireNamespaces; rn.On {
		undo := "remove " + rn.Origin
		if strings.HasPrefix(rn.Origin, "flag ") {
			undo = "run without --no-fallback"
		}
		if refused == "" {
			return nil, &SetupError{Stage: "namespaces",
				Err:      fmt.Errorf("%s, and %s forbids running without namespaces", situation, rn.Origin),
				HintText: "run without --direct, or " + undo}
		}
		return nil, &SetupError{Stage: "namespaces",
			Err: fmt.Errorf("%s, and %s forbids running without them", situation, rn.Origin),
			HintText: "run 'moat doctor' to see why user namespaces are unavailable and how to allow them\n" +
				"or " + undo + " to run in the direct mode: Landlock, seccomp and supervision (see " + readmeSection + ")"}
	}
	abi, err := direct.LandlockABI()
	if err != nil {
		return nil, &SetupError{Stage: "landlock",
			Err:      fmt.Errorf("%s, and without namespaces moat needs Landlock: %w", situation, err),
			HintText: "run 'moat doctor' to see how to enable user namespaces or Landlock"}
	}
	if abi < minScopedABI && !c.Policy.AllowUnscopedSignals.On {
		return nil, &SetupError{Stage: "landlock",
			Err: fmt.Errorf("%s, and this kernel's Landlock (ABI %d) can't confine signals to the sandbox (ABI %d, Linux 6.12, can): without a pid namespace the command could signal every process of yours, moat's own included",
				situation, abi, minScopedABI),
			HintText: "allow user namespaces (run 'moat doctor'), or use Linux 6.12 or newer\n" +
				"or accept that risk with \"moat\": {\"allowUnscopedSignals\": true} in the user config (see " + readmeSection + ")"}
	}

	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, &SetupError{Stage: "network", Err: fmt.Errorf("proxy listener on the host's loopback: %w", err)}
	}
	proxyAddr := ln.Addr().(*net.TCPAddr).AddrPort()
	tcp := []netip.AddrPort{proxyAddr}
	for _, port := range loopbackPorts(c.Policy) {
		// Listed host loopback ports: reachable directly, as in the namespace mode.
		tcp = append(tcp, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port)))
	}
	// DNS: the sandbox shares the host's resolv.conf, and UDP is refused. glibc's
	// resolver is told to use TCP (RES_OPTIONS use-vc), and the broker connects those
	// connections to the stub instead of the nameserver.
	dnsLn, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		ln.Close()
		return nil, &SetupError{Stage: "network", Err: fmt.Errorf("DNS stub listener on the host's loopback: %w", err)}
	}
	pol := connbroker.Policy{
		TCP:          tcp,
		Unix:         c.directUnixSockets(s.Mounts, env),
		LocalBinding: c.Policy.Network.AllowLocalBinding,
		DNS:          nameservers(hostResolvConf),
		DNSStub:      dnsLn.Addr().(*net.TCPAddr).AddrPort(),
	}
	ds := &direct.Spec{
		Spec: spec.Spec{
			Argv:     s.Argv,
			Env:      withResolverOption(proxyEnv(env, proxyAddr, c.ProxyConnector), "use-vc"),
			Dir:      s.Dir,
			Mounts:   directMounts(s.Mounts),
			Writable: s.Writable,
			Debug:    s.Debug,
		},
		Net:                  pol,
		AllowUnscopedSignals: c.Policy.AllowUnscopedSignals.On,
	}
	if c.Debug != nil {
		fmt.Fprintf(c.Debug, "moat: debug: direct mode: %s; Landlock ABI %d\n", situation, abi)
		fmt.Fprintf(c.Debug, "moat: debug: direct mode: proxy on %s; unix sockets allowed: %q; local binding %v\n", proxyAddr, pol.Unix, pol.LocalBinding)
	}
	fmt.Fprintln(c.notice(), directNote(situation, abi))

	var onEvent func(connbroker.Event)
	if c.Events != nil {
		onEvent = func(e connbroker.Event) {
			if ev, ok := brokerEvent(e, proxyAddr); ok {
				c.Events(ev)
			}
		}
	}
	// In the terminal's foreground the command gets a pty of its own, as in the
	// namespace mode (jobControl); anywhere else a session of its own and no
	// terminal (detachedStdio).
	j, in, out, errw := c.terminalStdio()
	if j != nil {
		ds.Terminal, ds.Stopped = j.slave, j.stopped
	} else {
		ds.Session = true
	}
	p, err := direct.Start(ds, in, out, errw, onEvent)
	if j != nil {
		j.started(err == nil)
	}
	if err != nil {
		ln.Close()
		dnsLn.Close()
		return nil, &SetupError{Stage: "direct", Err: err}
	}
	if j != nil {
		c.jobs = j
		j.begin(p.Signal)
	}
	dp := &directProcess{Process: p, srv: srv, lns: []net.Listener{ln, dnsLn}}
	dp.served.Add(2)
	go func() {
		defer dp.served.Done()
		srv.Serve(ln)
	}()
	go func() {
		defer dp.served.Done()
		srv.ServeDNSTCP(dnsLn)
	}()
	return dp, nil
}

// directProcess is a direct-mode sandbox whose proxy and DNS stub the supervisor
// serves until it ends.
type directProcess struct {
	*direct.Process
	srv    *proxy.Server
	lns    []net.Listener
	served sync.WaitGroup
}

func (p *directProcess) Wait() (spec.Result, error) {
	res, err := p.Process.Wait()
	p.srv.Close()
	for _, ln := range p.lns {
		ln.Close()
	}
	p.served.Wait()
	return res, err
}

// hostResolvConf is the resolver configuration the command reads in the direct mode:
// the host's.
const hostResolvConf = "/etc/resolv.conf"

// nameservers returns port 53 of each nameserver path lists, or glibc's default
// (the local host) when it lists none or can't be read.
func nameservers(path string) []netip.AddrPort {
	var out []netip.AddrPort
	if data, err := os.ReadFile(path); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 || f[0] != "nameserver" {
				continue
			}
			if a, err := netip.ParseAddr(f[1]); err == nil {
				out = append(out, netip.AddrPortFrom(a.Unmap().WithZone(""), 53))
			}
		}
	}
	if len(out) == 0 {
		out = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:53"), netip.MustParseAddrPort("[::1]:53")}
	}
	return out
}

// withResolverOption adds opt to RES_OPTIONS, which glibc's resolver reads after
// resolv.conf.
func withResolverOption(env []string, opt string) []string {
	out := make([]string, 0, len(env)+1)
	val := opt
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "RES_OPTIONS="); ok {
			val = strings.TrimSpace(strings.TrimSpace(v) + " " + opt)
			continue
		}
		out = append(out, kv)
	}
	return append(out, "RES_OPTIONS="+val)
}

// directNote is the line that says the direct mode is in use, in which situation, and
// what it can't do on a kernel with Landlock ABI abi; internal/linux/direct's doc has
// the details.
func directNote(situation string, abi int) string {
	gaps := []string{
		"names (not contents) in denied directories and the host's /tmp stay listable",
		"other processes' command lines stay readable",
	}
	if abi < 3 {
		gaps = append(gaps, fmt.Sprintf("truncate(2) of files readable but not writable (Landlock ABI %d < 3)", abi))
	}
	if abi < minScopedABI {
		gaps = append(gaps, fmt.Sprintf("signals to your other processes (Landlock ABI %d < %d, allowed by moat.allowUnscopedSignals)", abi, minScopedABI))
	}
	return "moat: note: " + situation + "; running in direct mode: Landlock + seccomp + supervision; " +
		"not enforced here: " + strings.Join(gaps, ", ") + "; " +
		"unavailable: DNS over UDP (glibc's lookups are switched to TCP, which moat's stub answers), /dev/shm, abstract unix sockets; see " + readmeSection
}

// directMounts keeps the plan's steps the direct mode turns into Landlock rights. It
// drops the sandbox's resolv.conf (the command reads the host's; the broker takes its
// nameservers' TCP connections to the DNS stub) and the
// covers of host sockets: the connection broker refuses every unix socket the policy
// doesn't list, wherever it is, and a cover would only guard its directory needlessly.
func directMounts(ms []spec.Mount) []spec.Mount {
	var out []spec.Mount
	for _, m := range ms {
		if m.Op == spec.OpFile || m.Optional {
			continue
		}
		out = append(out, m)
	}
	return out
}

// directUnixSockets lists the pathname unix sockets the command may connect to:
// network.allowUnixSockets, and with network.allowAllUnixSockets every socket bound when
// the sandbox starts whose path the plan leaves visible (the namespace mode's private
// runtime dirs stay out of reach).
func (c *Cmd) directUnixSockets(ms []spec.Mount, env []string) []string {
	cands := c.Policy.Network.AllowUnixSockets
	if c.Policy.Network.AllowAllUnixSockets {
		cands = append(append(append([]string(nil), cands...), envSocketPaths(env)...), boundSockets("/proc/net/unix")...)
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range cands {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || seen[real] {
			continue
		}
		if fi, err := os.Stat(real); err != nil || fi.Mode().Type() != fs.ModeSocket {
			continue // the broker needs a socket to pin; the namespace mode skips these too
		}
		if c.Policy.Network.AllowAllUnixSockets && !visibleIn(ms, real) && !listed(c.Policy.Network.AllowUnixSockets, real) {
			continue
		}
		seen[real] = true
		out = append(out, real)
	}
	return out
}

func listed(paths []string, real string) bool {
	for _, p := range paths {
		if r, err := filepath.EvalSymlinks(p); err == nil && r == real {
			return true
		}
	}
	return false
}

// visibleIn reports whether path is readable in the plan ms: the deepest step at or
// above it is not one that hides.
func visibleIn(ms []spec.Mount, path string) bool {
	best, visible := -1, true
	for _, m := range ms {
		if m.Path != path && !strings.HasPrefix(path, strings.TrimSuffix(m.Path, "/")+"/") {
			continue
		}
		if d := policy.Depth(m.Path); d >= best {
			best = d
			visible = m.Op != spec.OpTmpfs && m.Op != spec.OpMaskDir && m.Op != spec.OpMaskFile
		}
	}
	return visible
}

// Event reasons and protocols of the connection broker's calls, which bypass the proxy.
const (
	protoSocket    = "socket" // a connect(2) made by the command itself
	protoListen    = "listen"
	reasonRefused  = "socket-refused"
	hintNotProxied = "without namespaces only moat's proxy is reachable: connect through $HTTPS_PROXY or $ALL_PROXY, which moat sets"
	hintListen     = "add \"network\": {\"allowLocalBinding\": true} to the config to listen on 127.0.0.1"
)

// brokerEvent turns a call the connection broker decided into a run event. Connections
// to the proxy and to the DNS stub are left out: they report what goes through them.
func brokerEvent(e connbroker.Event, proxyAddr netip.AddrPort) (Event, bool) {
	if e.Allowed && e.Call == "connect" && (e.Addr == proxyAddr.String() || e.Reason == connbroker.ReasonDNS) {
		return Event{}, false
	}
	ev := Event{Time: time.Now(), Kind: "net", Action: "allow", Proto: protoSocket, Addr: e.Addr, Rule: e.Reason, Detail: e.String()}
	if e.Call == "listen" {
		ev.Proto = protoListen
	}
	if ap, err := netip.ParseAddrPort(e.Addr); err == nil {
		ev.Host, ev.Port = ap.Addr().String(), int(ap.Port())
	} else {
		ev.Host = e.Addr
	}
	switch {
	case !e.Allowed:
		ev.Action, ev.Reason, ev.Hint = "deny", reasonRefused, hintNotProxied
		if strings.HasPrefix(e.Addr, "/") {
			ev.Hint = socketHint(e.Addr) // a pathname unix socket
		}
		if e.Call == "listen" {
			ev.Hint = ""
			if strings.Contains(e.Reason, "local binding") {
				ev.Hint = hintListen
			}
		}
	case e.Errno != 0 && e.Errno != syscall.EINPROGRESS: // a non-blocking connect under way
		ev.Action = "error"
	}
	return ev, true
}
