// Package ignorefile reads gitignore-syntax ignore files (.moatignore and,
// when enabled, .cursorignore, .geminiignore, .aiexclude) and finds the paths
// they match in a workspace.
package ignorefile

import (
	"bufio"
	"bytes"
	"strings"
)

// Pattern is one rule of an ignore file.
type Pattern struct {
	Text    string // the line as written, trailing spaces removed
	Line    int    // 1-based line in its file
	negate  bool   // "!pattern": re-include
	dirOnly bool   // "pattern/": matches directories only
	// segs are the pattern's path elements; "**" is an element of its own. An
	// unanchored pattern (no "/" but a trailing one) starts with "**".
	segs []string
}

// Parse reads the patterns of one ignore file, following gitignore(5): blank
// lines and lines starting with # are skipped ("\#" is a literal #), trailing
// spaces are dropped unless escaped with \, "!" negates ("\!" is a literal !), a
// trailing "/" matches directories only, a "/" at the start or in the middle
// anchors the pattern to the file's directory, and "**" matches any number of
// directories when it is a whole path element.
func Parse(data []byte) []Pattern {
	var out []Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if p, ok := parseLine(sc.Text(), n); ok {
			out = append(out, p)
		}
	}
	return out
}

func parseLine(line string, n int) (Pattern, bool) {
	line = strings.TrimSuffix(line, "\r")
	line = trimTrailingSpaces(line)
	if line == "" || line[0] == '#' {
		return Pattern{}, false
	}
	p := Pattern{Text: line, Line: n}
	if line[0] == '!' {
		p.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") && !strings.HasSuffix(line, "\\/") {
		p.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return Pattern{}, false // "/" or "!" alone match nothing
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	for _, s := range strings.Split(line, "/") {
		if s == "" {
			continue // "a//b" is "a/b"
		}
		if strings.HasPrefix(s, "**") && strings.Trim(s, "*") == "" {
			s = "**" // "***" as a whole element is "**"
		}
		p.segs = append(p.segs, s)
	}
	if len(p.segs) == 0 {
		return Pattern{}, false
	}
	if !anchored {
		p.segs = append([]string{"**"}, p.segs...)
	}
	return p, true
}

// trimTrailingSpaces drops unescaped trailing spaces; "\ " keeps its space.
func trimTrailingSpaces(s string) string {
	for strings.HasSuffix(s, " ") {
		t := strings.TrimSuffix(s, " ")
		bs := 0
		for i := len(t) - 1; i >= 0 && t[i] == '\\'; i-- {
			bs++
		}
		if bs%2 == 1 {
			return s // the space is escaped
		}
		s = t
	}
	return s
}

// Match reports whether the pattern matches rel, a slash-separated path relative
// to the ignore file's directory, that is a directory when isDir is set.
func (p Pattern) Match(rel string, isDir bool) bool {
	if p.dirOnly && !isDir {
		return false
	}
	return matchSegs(p.segs, strings.Split(rel, "/"))
}

// Negate reports whether the pattern re-includes what it matches ("!pattern").
func (p Pattern) Negate() bool { return p.negate }

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				// A trailing "/**" matches everything inside, not the directory itself.
				return len(name) > 0
			}
			for i := 0; i <= len(name); i++ {
				if matchSegs(rest, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 || !matchElem(pat[0], name[0]) {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// matchElem matches one path element against one pattern element: * is any run
// of characters, ? one character, [...] a class (with ! or ^ to negate, ranges
// and [:alpha:]-style classes), \ escapes the next character.
func matchElem(pat, name string) bool {
	px, nx := 0, 0
	starPx, starNx := -1, -1
	for nx < len(name) || px < len(pat) {
		if px < len(pat) {
			switch c := pat[px]; c {
			case '*':
				starPx, starNx = px, nx
				px++
				continue
			case '?':
				if nx < len(name) {
					px++
					nx++
					continue
				}
			case '[':
				if nx < len(name) {
					if ok, width, valid := matchClass(pat[px:], name[nx]); valid {
						if ok {
							px += width
							nx++
							continue
						}
						break
					}
				}
				// An unclosed "[" is a literal.
				if nx < len(name) && name[nx] == '[' {
					px++
					nx++
					continue
				}
			case '\\':
				if px+1 < len(pat) {
					if nx < len(name) && name[nx] == pat[px+1] {
						px += 2
						nx++
						continue
					}
				} else if nx < len(name) && name[nx] == '\\' {
					px++
					nx++
					continue
				}
			default:
				if nx < len(name) && name[nx] == c {
					px++
					nx++
					continue
				}
			}
		}
		if starPx >= 0 && starNx < len(name) {
			starNx++
			px, nx = starPx+1, starNx
			continue
		}
		return false
	}
	return true
}

var posixClasses = map[string]func(byte) bool{
	"alnum":  func(c byte) bool { return isAlpha(c) || isDigit(c) },
	"alpha":  isAlpha,
	"blank":  func(c byte) bool { return c == ' ' || c == '\t' },
	"cntrl":  func(c byte) bool { return c < 0x20 || c == 0x7f },
	"digit":  isDigit,
	"graph":  func(c byte) bool { return c > 0x20 && c < 0x7f },
	"lower":  func(c byte) bool { return c >= 'a' && c <= 'z' },
	"print":  func(c byte) bool { return c >= 0x20 && c < 0x7f },
	"punct":  func(c byte) bool { return c > 0x20 && c < 0x7f && !isAlpha(c) && !isDigit(c) },
	"space":  func(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' },
	"upper":  func(c byte) bool { return c >= 'A' && c <= 'Z' },
	"xdigit": func(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' },
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// matchClass matches c against the class at the start of pat ("[...]"). It
// returns whether c matched, the class's width in pat, and whether pat starts
// with a well-formed class at all.
func matchClass(pat string, c byte) (matched bool, width int, valid bool) {
	i := 1
	negate := false
	if i < len(pat) && (pat[i] == '!' || pat[i] == '^') {
		negate = true
		i++
	}
	first := true
	for i < len(pat) {
		if pat[i] == ']' && !first {
			return matched != negate, i + 1, true
		}
		first = false
		if strings.HasPrefix(pat[i:], "[:") {
			if end := strings.Index(pat[i+2:], ":]"); end >= 0 {
				if fn, ok := posixClasses[pat[i+2:i+2+end]]; ok {
					matched = matched || fn(c)
					i += end + 4
					continue
				}
			}
		}
		lo := pat[i]
		if lo == '\\' && i+1 < len(pat) {
			i++
			lo = pat[i]
		}
		i++
		hi := lo
		if i+1 < len(pat) && pat[i] == '-' && pat[i+1] != ']' {
			hi = pat[i+1]
			if hi == '\\' && i+2 < len(pat) {
				hi = pat[i+2]
				i++
			}
			i += 2
		}
		if lo <= c && c <= hi {
			matched = true
		}
	}
	return false, 0, false
}
