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

// startDirect runs s in the direct mode, with the proxy on a host loopback port. why is
// how the kernel refused the namespaces.
func (c *Cmd) startDirect(s *spec.Spec, env []string, srv *proxy.Server, why syscall.Errno) (process, error) {
	reason := "creating one failed: " + why.Error()
	if rn := c.Policy.RequireNamespaces; rn.On {
		undo := "remove " + rn.Origin
		if strings.HasPrefix(rn.Origin, "flag ") {
			undo = "run without --no-fallback"
		}
		return nil, &SetupError{Stage: "namespaces",
			Err: fmt.Errorf("user namespaces are unavailable (%s), and %s forbids running without them", reason, rn.Origin),
			HintText: "run 'moat doctor' to see why user namespaces are unavailable and how to allow them\n" +
				"or " + undo + " to run in the direct mode: Landlock, seccomp and supervision (see " + readmeSection + ")"}
	}
	abi, err := direct.LandlockABI()
	if err != nil {
		return nil, &SetupError{Stage: "landlock",
			Err:      fmt.Errorf("user namespaces are unavailable (%s), and without them moat needs Landlock: %w", reason, err),
			HintText: "run 'moat doctor' to see how to enable user namespaces or Landlock"}
	}
	if abi < minScopedABI && !c.Policy.AllowUnscopedSignals.On {
		return nil, &SetupError{Stage: "landlock",
			Err: fmt.Errorf("user namespaces are unavailable (%s), and this kernel's Landlock (ABI %d) can't confine signals to the sandbox (ABI %d, Linux 6.12, can): without a pid namespace the command could signal every process of yours, moat's own included",
				reason, abi, minScopedABI),
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
	pol := connbroker.Policy{
		TCP:          tcp,
		Unix:         c.directUnixSockets(s.Mounts, env),
		LocalBinding: c.Policy.Network.AllowLocalBinding,
	}
	ds := &direct.Spec{
		Spec: spec.Spec{
			Argv:     s.Argv,
			Env:      proxyEnv(env, proxyAddr, c.ProxyConnector),
			Dir:      s.Dir,
			Mounts:   directMounts(s.Mounts),
			Writable: s.Writable,
			Debug:    s.Debug,
		},
		Net:                  pol,
		AllowUnscopedSignals: c.Policy.AllowUnscopedSignals.On,
	}
	if c.Debug != nil {
		fmt.Fprintf(c.Debug, "moat: debug: direct mode: user namespaces unavailable (%s); Landlock ABI %d\n", reason, abi)
		fmt.Fprintf(c.Debug, "moat: debug: direct mode: proxy on %s; unix sockets allowed: %q; local binding %v\n", proxyAddr, pol.Unix, pol.LocalBinding)
	}
	notice := c.Notice
	if notice == nil {
		notice = os.Stderr
	}
	fmt.Fprintln(notice, directNote(reason, abi))

	var onEvent func(connbroker.Event)
	if c.Events != nil {
		onEvent = func(e connbroker.Event) {
			if ev, ok := brokerEvent(e, proxyAddr); ok {
				c.Events(ev)
			}
		}
	}
	p, err := direct.Start(ds, c.Stdin, c.Stdout, c.Stderr, onEvent)
	if err != nil {
		ln.Close()
		return nil, &SetupError{Stage: "direct", Err: err}
	}
	dp := &directProcess{Process: p, srv: srv, ln: ln, served: make(chan struct{})}
	go func() {
		defer close(dp.served)
		srv.Serve(ln)
	}()
	return dp, nil
}

// directProcess is a direct-mode sandbox whose proxy the supervisor serves until it ends.
type directProcess struct {
	*direct.Process
	srv    *proxy.Server
	ln     net.Listener
	served chan struct{}
}

func (p *directProcess) Wait() (spec.Result, error) {
	res, err := p.Process.Wait()
	p.srv.Close()
	p.ln.Close()
	<-p.served
	return res, err
}

// directNote is the line that says the direct mode is in use and what it can't do on
// a kernel with Landlock ABI abi; internal/linux/direct's doc has the details.
func directNote(reason string, abi int) string {
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
	return "moat: note: user namespaces are unavailable (" + reason + "); running in direct mode: Landlock + seccomp + supervision; " +
		"not enforced here: " + strings.Join(gaps, ", ") + "; " +
		"unavailable: DNS (names resolve through the proxy only), /dev/shm, abstract unix sockets; see " + readmeSection
}

// directMounts keeps the plan's steps the direct mode turns into Landlock rights. It
// drops the sandbox's resolv.conf (no DNS stub: names resolve through the proxy) and the
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
// to the proxy are left out: the proxy reports what goes through it.
func brokerEvent(e connbroker.Event, proxyAddr netip.AddrPort) (Event, bool) {
	if e.Allowed && e.Call == "connect" && e.Addr == proxyAddr.String() {
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
