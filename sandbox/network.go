package sandbox

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/moat-sandbox/moat/internal/spec"
	"github.com/moat-sandbox/moat/policy"
	"github.com/moat-sandbox/moat/proxy"
)

// ProxyPort is the port on the sandbox's own 127.0.0.1 where moat's proxy (HTTP,
// HTTPS CONNECT and SOCKS5 on one port) listens. The sandbox has its own network
// namespace, so the port is free there whatever the host runs.
const ProxyPort = 3128

// resolvConf is the sandbox's /etc/resolv.conf: the DNS stub, which answers allowed
// names only.
const resolvConf = "# moat: the sandbox's DNS stub; it answers only names the policy allows\nnameserver 127.0.0.1\n"

// Event is one line of a run's event log: a connection or lookup the proxy allowed
// or refused.
type Event = proxy.Event

// nsProxyAddr is where the namespace mode's proxy listens, inside the sandbox.
var nsProxyAddr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), ProxyPort)

// proxyEnv points the usual tools at the proxy, listening at addr. moatPath is the
// moat binary, which serves as git's ssh ProxyCommand; empty leaves GIT_SSH_COMMAND
// alone.
func proxyEnv(env []string, addr netip.AddrPort, moatPath string) []string {
	hostPort := addr.String()
	httpURL := "http://" + hostPort
	noProxy := "localhost,127.0.0.1,::1"
	set := map[string]string{
		"HTTP_PROXY": httpURL, "http_proxy": httpURL,
		"HTTPS_PROXY": httpURL, "https_proxy": httpURL,
		"ALL_PROXY": "socks5h://" + hostPort, "all_proxy": "socks5h://" + hostPort,
		"NO_PROXY": noProxy, "no_proxy": noProxy,
		// npm, yarn and pip read proxies from their own config first; these
		// override a config file that names some other proxy.
		"npm_config_proxy": httpURL, "npm_config_https_proxy": httpURL, "npm_config_noproxy": noProxy,
		"YARN_HTTP_PROXY": httpURL, "YARN_HTTPS_PROXY": httpURL,
		"PIP_PROXY":  httpURL,
		"MOAT_PROXY": hostPort,
	}
	// The JVM ignores the variables above; it reads system properties.
	jvm := fmt.Sprintf("-Dhttp.proxyHost=%[1]s -Dhttp.proxyPort=%[2]d -Dhttps.proxyHost=%[1]s -Dhttps.proxyPort=%[2]d -Dhttp.nonProxyHosts=localhost|127.0.0.1",
		addr.Addr(), addr.Port())
	if moatPath != "" {
		// git over ssh: ssh takes -o before its config files, so this ProxyCommand
		// wins over one in ~/.ssh/config.
		set["GIT_SSH_COMMAND"] = "ssh -o ProxyCommand=" + shellQuote(shellQuote(moatPath)+" connect %h %p")
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		if name == "JAVA_TOOL_OPTIONS" {
			jvm = val + " " + jvm
			continue
		}
		if _, ok := set[name]; ok {
			continue
		}
		out = append(out, kv)
	}
	for _, name := range sortedKeys(set) {
		out = append(out, name+"="+set[name])
	}
	return append(out, "JAVA_TOOL_OPTIONS="+jvm)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// checkHost is the proxy's policy: policy.ExplainHost, the same verdict moat
// explain gives.
func checkHost(pol *policy.Policy) func(host string, port int) proxy.Decision {
	return func(host string, port int) proxy.Decision {
		v := pol.ExplainHost(host, port)
		d := proxy.Decision{Allow: v.Allowed, Default: v.Rule == nil, Rule: v.Reason, Hint: v.Hint}
		if v.Rule != nil {
			d.Rule = v.Rule.Origin
		}
		return d
	}
}

// checkName is the DNS stub's policy: a name resolves when some allow rule allows
// it on some port and no deny rule for every port denies it; the port is checked
// when the command connects.
func checkName(pol *policy.Policy) func(host string) proxy.Decision {
	return func(host string) proxy.Decision {
		for _, r := range pol.Network.DeniedDomains {
			if r.Port == 0 && r.Match(host, 443) {
				return proxy.Decision{Rule: r.Origin, Hint: pol.ExplainHost(host, 443).Hint}
			}
		}
		for _, r := range pol.Network.AllowedDomains {
			port := r.Port
			if port == 0 {
				port = 443
			}
			if r.Match(host, port) {
				return proxy.Decision{Allow: true, Rule: r.Origin}
			}
		}
		v := pol.ExplainHost(host, 443)
		return proxy.Decision{Default: true, Rule: v.Reason, Hint: v.Hint}
	}
}

// loopbackPorts are the host loopback ports the policy allows by the literal
// 127.0.0.1 ("127.0.0.1:5432"): besides being reachable through the proxy, each
// is forwarded from the sandbox's own 127.0.0.1, so a client that knows nothing
// of proxies (psql, redis-cli) reaches the host's server there. Only listed
// ports: the rest of the host's loopback stays out. ("localhost:5432" and
// "[::1]:5432" open nothing: the proxy refuses loopback addresses a name
// resolves to, and the forward dials 127.0.0.1 only.)
func loopbackPorts(pol *policy.Policy) []int {
	var out []int
	seen := map[int]bool{ProxyPort: true, 53: true}
	for _, r := range pol.Network.AllowedDomains {
		if r.Port == 0 || seen[r.Port] {
			continue
		}
		if r.Host != "127.0.0.1" {
			continue
		}
		if !pol.ExplainHost("127.0.0.1", r.Port).Allowed {
			continue // a deny rule wins
		}
		seen[r.Port] = true
		out = append(out, r.Port)
	}
	return out
}

func hostForFlag(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// resolvConfMount covers the host's resolv.conf (or the file its link points to,
// which may be inside a hidden runtime dir) with the sandbox's own.
func resolvConfMount() (spec.Mount, bool) {
	path := "/etc/resolv.conf"
	for i := 0; i < 8; i++ {
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			break
		}
		target, err := os.Readlink(path)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = filepath.Clean(target)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return spec.Mount{}, false
	}
	return spec.Mount{Op: spec.OpFile, Path: filepath.Join(dir, filepath.Base(path)), Content: resolvConf,
		Reason: "the sandbox's DNS stub"}, true
}

// isLocalAddr asks the kernel whether a is one of the host's addresses now:
// binding a socket to it succeeds only then. Where the host lets sockets bind
// any address (the ip_nonlocal_bind sysctls), it lists the interfaces again.
func isLocalAddr(a netip.Addr) bool {
	if nonlocalBind() {
		return slices.Contains(hostAddrs(), a)
	}
	a = a.WithZone("").Unmap()
	domain := syscall.AF_INET6
	var sa syscall.Sockaddr = &syscall.SockaddrInet6{Addr: a.As16()}
	if a.Is4() {
		domain, sa = syscall.AF_INET, &syscall.SockaddrInet4{Addr: a.As4()}
	}
	fd, err := syscall.Socket(domain, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return true // can't tell: refuse
	}
	defer syscall.Close(fd)
	err = syscall.Bind(fd, sa)
	return err == nil || !errors.Is(err, syscall.EADDRNOTAVAIL)
}

// nonlocalBind reports whether the host lets sockets bind addresses it doesn't
// have, which makes isLocalAddr's bind test say yes to everything.
var nonlocalBind = sync.OnceValue(func() bool {
	for _, f := range []string{"/proc/sys/net/ipv4/ip_nonlocal_bind", "/proc/sys/net/ipv6/ip_nonlocal_bind"} {
		if b, err := os.ReadFile(f); err != nil || strings.TrimSpace(string(b)) != "0" {
			return true
		}
	}
	return false
})

// hostAddrs lists the host's own addresses, which the proxy refuses like loopback.
func hostAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out
}
