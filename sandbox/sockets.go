package sandbox

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/moat-sandbox/moat/policy"
)

// Pathname unix sockets can be connected to wherever their file is visible: a
// read-only mount does not stop connect(2), and Landlock only covers it from ABI 9.
// So every socket the host has bound at start is covered with an empty file, unless
// network.allowUnixSockets lists it. Sockets in the hidden runtime dirs are covered
// by those dirs already.

// hostSockets lists the host socket paths to cover: the ones named by the
// environment, and every pathname socket bound in the host's network namespace.
func hostSockets(pol *policy.Policy, env []string) []string {
	if pol.Network.AllowAllUnixSockets {
		return nil
	}
	allowed := map[string]bool{}
	for _, p := range pol.Network.AllowUnixSockets {
		allowed[p] = true
		if real, err := filepath.EvalSymlinks(p); err == nil {
			allowed[real] = true
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range append(envSockets(env), boundSockets("/proc/net/unix")...) {
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

// envSockets lists the sockets named by SSH_AUTH_SOCK, the D-Bus addresses and
// DOCKER_HOST, whether or not they are bound yet.
func envSockets(env []string) []string {
	var out []string
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		switch name {
		case "SSH_AUTH_SOCK":
			out = append(out, val)
		case "DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS":
			for _, part := range strings.Split(val, ",") {
				if p, ok := strings.CutPrefix(strings.TrimPrefix(part, "unix:"), "path="); ok {
					out = append(out, p)
				}
			}
		case "DOCKER_HOST":
			if p, ok := strings.CutPrefix(val, "unix://"); ok {
				out = append(out, p)
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
