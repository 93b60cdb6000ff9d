package policy

import (
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// globMeta are the characters that make a path a glob pattern (srt counts the same
// ones, plus a lone ']' which is literal in every glob syntax).
const globMeta = "*?["

func isGlob(s string) bool { return strings.ContainsAny(s, globMeta) }

// pathList says where a path is written, for the checks that differ between lists.
type pathList struct {
	name      string // for messages: "allowWrite"
	allowGlob bool
}

var (
	listDenyRead   = pathList{"denyRead", true}
	listAllowRead  = pathList{"allowRead", false}
	listAllowWrite = pathList{"allowWrite", false}
	listDenyWrite  = pathList{"denyWrite", true}
	listCredFile   = pathList{"credentials.files", true}
	listSocket     = pathList{"allowUnixSockets", false}
)

// trimDoubleStar drops trailing "/**" (srt: it just means "the directory and
// everything under it", which a directory path already says).
func trimDoubleStar(s string) string {
	for {
		switch {
		case s == "**":
			return "."
		case s == "/**":
			return "/"
		case strings.HasSuffix(s, "/**"):
			s = strings.TrimSuffix(s, "/**")
		default:
			return s
		}
	}
}

// problem is an error found in a value, before its position is known.
type problem struct {
	err  error
	hint string
}

func bad(err error, hint string) *problem { return &problem{err: err, hint: hint} }

// checkPath validates the spelling of one path as written, before any expansion.
func checkPath(raw string, l pathList) *problem {
	switch {
	case raw == "":
		return bad(errf(ErrPath, "empty path"),
			`write "." for the current directory`)
	case strings.IndexByte(raw, 0) >= 0:
		return bad(errf(ErrPath, "path %q contains a NUL byte", raw),
			"remove the NUL byte (\\u0000); no file name can contain it")
	case strings.HasPrefix(raw, "~") && raw != "~" && !strings.HasPrefix(raw, "~/"):
		return bad(errf(ErrPath, "path %q uses the ~user form, which moat does not expand", raw),
			`write the absolute path (/home/user/...) instead, or "~/..." for your own home directory`)
	}
	s := trimDoubleStar(raw)
	if isGlob(s) {
		if !l.allowGlob {
			if l == listSocket {
				return bad(errf(ErrPath, "socket path %q is a glob pattern; socket paths are literal", raw),
					"list each socket path explicitly")
			}
			return bad(errf(ErrPath, "%s path %q is a glob pattern; globs are accepted only in denyRead and denyWrite", l.name, raw),
				"moat grants access to concrete paths when the sandbox starts, so a glob here would silently miss files "+
					"created later and could match more than intended; list the directories explicitly (a trailing /** is fine)")
		}
		if !doublestar.ValidatePattern(escapeBraces(s)) {
			return bad(errf(ErrPath, "glob pattern %q is malformed", raw),
				`check for an unclosed "[" or a trailing "\"; use \* \? \[ for literal characters`)
		}
		seenGlob := false
		for _, c := range strings.Split(s, "/") {
			if c == ".." && seenGlob {
				return bad(errf(ErrPath, "glob pattern %q has \"..\" after a wildcard", raw),
					`move the ".." before the first wildcard, or write the pattern without it`)
			}
			if isGlob(c) {
				seenGlob = true
			}
		}
	}
	return nil
}

// resolvePath expands ~ and the current directory and cleans the result lexically.
// For a glob it returns an absolute doublestar pattern whose cwd/home prefix is
// escaped, so a '[' in a directory name stays literal. raw must have passed
// checkPath.
func resolvePath(raw string, env Env) (path string, glob bool, p *problem) {
	s := trimDoubleStar(raw)
	glob = isGlob(s)
	var base, rest string
	switch {
	case s == "~":
		base = env.Home
	case strings.HasPrefix(s, "~/"):
		base, rest = env.Home, s[2:]
	case strings.HasPrefix(s, "/"):
		base, rest = "/", s[1:]
	default:
		base, rest = env.Cwd, s
	}
	depth := 0
	if base != "/" {
		depth = strings.Count(base, "/")
	}
	for _, c := range strings.Split(rest, "/") {
		switch c {
		case "", ".":
		case "..":
			if depth == 0 {
				return "", false, bad(errf(ErrPath, "path %q climbs above / (it resolves against %s)", raw, base),
					"remove the extra \"..\" or write the absolute path")
			}
			depth--
		default:
			depth++
		}
	}
	if !glob {
		return filepath.Join(base, rest), false, nil
	}
	return filepath.Clean(escapeMeta(base) + "/" + escapeBraces(rest)), true, nil
}

// escapeMeta backslash-escapes every doublestar metacharacter in a literal path.
func escapeMeta(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]{}\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// escapeBraces keeps { and } literal in a user pattern: srt has no {a,b}
// alternatives, so moat has none either. Existing \-escapes are kept.
func escapeBraces(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
			continue
		case '{', '}':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
