package sandbox

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moat-sandbox/moat/policy"
)

// Pathname unix sockets can be connected to wherever their file is visible: a
// read-only mount does not stop connect(2), and Landlock only covers it from ABI 9.
// So every socket the host has bound at start is covered with an empty file, unless
// network.allowUnixSockets lists it. Sockets in the hidden runtime dirs are covered
// by those dirs already; a few of them get a cover there too, to report attempts
// to reach them (baitSockets).

// hostSockets lists the host socket paths to cover: the ones named by the
// environment, and every pathname socket bound in the host's network namespace.
func hostSockets(pol *policy.Policy, env []string) []string {
	if pol.Network.AllowAllUnixSockets {
		return nil
	}
	allowed := allowedSockets(pol)
	var out []string
	seen := map[string]bool{}
	for _, p := range append(envSocketPaths(env), boundSockets("/proc/net/unix")...) {
		if !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		if seen[p] || allowed[p] {
			continue
		}
		if real, err := filepath.EvalSymlinks(p); err == nil && allowed[real] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

// socketHint says how to let the sandbox connect to a host socket.
func socketHint(path string) string {
	return "add \"network\": {\"allowUnixSockets\": [" + strconv.Quote(path) + "]} to the config to let the sandbox connect to it"
}

// wellKnownSockets are host sockets an agent, or code that tricks it, would try: each
// grants what the sandbox must not have. Where the sandbox's private runtime dirs hide
// them already, moat still puts a cover at their path (baitSockets), so that an attempt
// to reach one is reported rather than met by a silent ENOENT. A path starting with
// "$XDG_RUNTIME_DIR/" is taken relative to that directory.
var wellKnownSockets = []namedSocket{
	{"/run/docker.sock", "Docker's API: root on the host through any container it starts"},
	{"/run/podman/podman.sock", "Podman's API, rootful: the same"},
	{"/run/containerd/containerd.sock", "containerd's API: the same"},
	{"/run/dbus/system_bus_socket", "the D-Bus system bus: host services, polkit, systemd"},
	{"$XDG_RUNTIME_DIR/bus", "the D-Bus session bus: the user's desktop, keyring and systemd --user"},
	{"$XDG_RUNTIME_DIR/docker.sock", "rootless Docker's API"},
	{"$XDG_RUNTIME_DIR/podman/podman.sock", "rootless Podman's API"},
	{"$XDG_RUNTIME_DIR/gnupg/S.gpg-agent", "the GPG agent: signs and decrypts with the user's keys"},
	{"$XDG_RUNTIME_DIR/gnupg/S.gpg-agent.ssh", "the GPG agent's ssh-agent socket"},
}

// baitSockets lists, resolved, the host sockets covered even where a private runtime
// dir hides them: those the environment names and the well-known ones, when they
// exist as sockets on the host and the policy doesn't allow them. A handful at most:
// each cover is one more mount as the sandbox starts.
func baitSockets(pol *policy.Policy, env []string) []namedSocket {
	if pol.Network.AllowAllUnixSockets {
		return nil
	}
	candidates := envSockets(env)
	runtimeDir := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "XDG_RUNTIME_DIR="); ok && filepath.IsAbs(v) {
			runtimeDir = v
		}
	}
	for _, w := range wellKnownSockets {
		if rel, ok := strings.CutPrefix(w.path, "$XDG_RUNTIME_DIR/"); ok {
			if runtimeDir == "" {
				continue
			}
			candidates = append(candidates, namedSocket{filepath.Join(runtimeDir, rel), w.reason})
			continue
		}
		candidates = append(candidates, w)
	}
	allowed := allowedSockets(pol)
	var out []namedSocket
	seen := map[string]bool{}
	for _, c := range candidates {
		if !filepath.IsAbs(c.path) {
			continue
		}
		real, err := filepath.EvalSymlinks(c.path)
		if err != nil || seen[real] || allowed[real] || allowed[filepath.Clean(c.path)] {
			continue
		}
		if fi, err := os.Lstat(real); err != nil || fi.Mode().Type() != fs.ModeSocket {
			continue
		}
		seen[real] = true
		out = append(out, namedSocket{real, c.reason})
	}
	return out
}

// allowedSockets is network.allowUnixSockets, each path also resolved.
func allowedSockets(pol *policy.Policy) map[string]bool {
	allowed := map[string]bool{}
	for _, p := range pol.Network.AllowUnixSockets {
		allowed[p] = true
		if real, err := filepath.EvalSymlinks(p); err == nil {
			allowed[real] = true
		}
	}
	return allowed
}

// envSocketPaths is envSockets' paths.
func envSocketPaths(env []string) []string {
	var out []string
	for _, n := range envSockets(env) {
		out = append(out, n.path)
	}
	return out
}

// namedSocket is a host socket path and what it gives whoever connects.
type namedSocket struct{ path, reason string }

// envSockets lists the sockets named by SSH_AUTH_SOCK, the D-Bus addresses and
// DOCKER_HOST, whether or not they are bound yet.
func envSockets(env []string) []namedSocket {
	var out []namedSocket
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		switch name {
		case "SSH_AUTH_SOCK":
			out = append(out, namedSocket{val, "$SSH_AUTH_SOCK: the ssh agent, which signs with the user's keys"})
		case "DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS":
			for _, part := range strings.Split(val, ",") {
				if p, ok := strings.CutPrefix(strings.TrimPrefix(part, "unix:"), "path="); ok {
					out = append(out, namedSocket{p, "$" + name + ": a D-Bus bus, host services"})
				}
			}
		case "DOCKER_HOST":
			if p, ok := strings.CutPrefix(val, "unix://"); ok {
				out = append(out, namedSocket{p, "$DOCKER_HOST: Docker's API, root on the host through any container it starts"})
			}
		}
	}
	return out
}

// boundSockets reads the pathname sockets from a /proc/net/unix table, keeping the
// ones that exist as sockets on this filesystem (a path bound in another mount
// namespace may name something else here, or nothing).
func boundSockets(table string) []string {
	f, err := os.Open(table)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		path := unixTablePath(sc.Text())
		if !strings.HasPrefix(path, "/") {
			continue // unbound, abstract ("@...") or relative
		}
		if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() == fs.ModeSocket {
			out = append(out, path)
		}
	}
	return out
}

// unixTablePath returns the Path column of one /proc/net/unix line: whatever follows
// the seven fixed columns (Num RefCount Protocol Flags Type St Inode).
func unixTablePath(line string) string {
	rest := line
	for i := 0; i < 7; i++ {
		rest = strings.TrimLeft(rest, " ")
		end := strings.IndexByte(rest, ' ')
		if end < 0 {
			return ""
		}
		rest = rest[end:]
	}
	return strings.TrimPrefix(rest, " ")
}
