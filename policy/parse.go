package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tailscale/hujson"
)

// Parse parses one settings file (JSON with comments and trailing commas). name is
// used in error messages and rule origins. It fails on the first problem, with an
// *Error naming the file, line, column and key.
func Parse(name string, data []byte) (*Settings, error) {
	p := &parser{file: name, data: data, s: &Settings{File: name}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.s, nil
}

// parseProfile parses a profile file: the settings schema for rules plus
// "description" and "extends" at the top.
func parseProfile(file, name string, data []byte) (*Profile, error) {
	prof := &Profile{Name: name, Builtin: true, Pos: Pos{Line: 1, Col: 1}}
	p := &parser{file: file, data: data, s: &Settings{File: file}, prof: prof}
	if err := p.parse(); err != nil {
		return nil, err
	}
	prof.Settings = p.s
	return prof, nil
}

func (p *parser) parse() error {
	name, data := p.file, p.data
	sum := sha256.Sum256(data)
	p.s.SHA256 = hex.EncodeToString(sum[:])
	if len(data) > maxSettingsSize {
		return &Error{File: name, Err: errf(ErrValue, "settings file is larger than %d bytes", maxSettingsSize),
			HintText: "a settings file is a few kilobytes; check that --config names the right file"}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return &Error{File: name, Line: 1, Col: 1, Err: errf(ErrSyntax, "settings file is empty"),
			HintText: "write {} for a file with no settings"}
	}
	end := p.pos(node{v: &hujson.Value{StartOffset: len(data)}})
	if data[len(data)-1] != '\n' {
		// hujson ends a // comment only at a newline, even at the end of the file.
		data = append(data[:len(data):len(data)], '\n')
		p.data, p.lineStarts = data, nil
	}
	v, err := hujson.Parse(data)
	if err != nil {
		e := &Error{File: name, Err: errf(ErrSyntax, "%s", err.Error()),
			HintText: "settings are JSON; // and /* */ comments and trailing commas are allowed; look for a missing comma, quote or bracket here"}
		if m := hujsonPos().FindStringSubmatch(err.Error()); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Col, _ = strconv.Atoi(m[2])
			e.Err = errf(ErrSyntax, "%s", m[3])
			if e.Line > end.Line || e.Line == end.Line && e.Col > end.Col {
				e.Line, e.Col = end.Line, end.Col // at the newline added above
			}
		}
		return e
	}
	if err := p.object(node{v: &v}, p.topFields()); err != nil {
		return err
	}
	// Checks may add checks (a profile's own), so the list can grow while it runs.
	for i := 0; i < len(p.later); i++ {
		if err := p.later[i](); err != nil {
			return err
		}
	}
	return nil
}

// hujsonPos is compiled when a settings file fails to parse, not at every start.
var hujsonPos = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)^hujson: line (\d+), column (\d+): (.*)$`)
})

type parser struct {
	file  string
	data  []byte
	s     *Settings
	prof  *Profile       // set while parsing a profile's body
	later []func() error // checks that need the whole file

	lineStarts []int          // offsets where each line begins, built on first use
	envIndex   map[string]int // credentials.envVars name -> index, for duplicates
	allowed    domainSet      // network.allowedDomains hosts, built on first use
}

// node is a value in the tree and its key path.
type node struct {
	v   *hujson.Value
	key string
}

// field is one accepted key of an object and what to do with its value.
type field struct {
	name string
	fn   func(n node) error
}

func (p *parser) pos(n node) Pos {
	if p.lineStarts == nil {
		p.lineStarts = []int{0}
		for i, c := range p.data {
			if c == '\n' {
				p.lineStarts = append(p.lineStarts, i+1)
			}
		}
	}
	off := min(max(n.v.StartOffset, 0), len(p.data))
	line := sort.Search(len(p.lineStarts), func(i int) bool { return p.lineStarts[i] > off }) // >= 1
	return Pos{Line: line, Col: 1 + off - p.lineStarts[line-1], Key: n.key}
}

func (p *parser) origin(pos Pos) string {
	return fmt.Sprintf("%s:%d %s", p.file, pos.Line, pos.Key)
}

func (p *parser) fail(n node, err error, hint string) error {
	pos := p.pos(n)
	return &Error{File: p.file, Line: pos.Line, Col: pos.Col, Key: n.key, Err: err, HintText: hint}
}

func (p *parser) failp(n node, pr *problem) error { return p.fail(n, pr.err, pr.hint) }

func joinKey(parent, name string) string {
	if !isIdent(name) {
		name = strconv.Quote(name)
		if parent == "" {
			return name
		}
		return parent + "[" + name + "]"
	}
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func kindName(v *hujson.Value) string {
	switch v.Value.Kind() {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "an unknown value" // unreachable: hujson only produces the kinds above
}

func (p *parser) typeErr(n node, want, example string) error {
	return p.fail(n, errf(ErrType, "expected %s, got %s", want, kindName(n.v)), "write it as "+example)
}

// object walks an object, calling the field for each member; unknown and duplicate
// keys are errors.
func (p *parser) object(n node, fields []field) error {
	obj, ok := n.v.Value.(*hujson.Object)
	if !ok {
		return p.typeErr(n, "an object", "{...}")
	}
	seen := map[string]bool{}
	for i := range obj.Members {
		m := &obj.Members[i]
		nameNode := node{v: &m.Name, key: n.key}
		name, err := p.str(nameNode)
		if err != nil {
			return err
		}
		k := joinKey(n.key, name)
		nameNode.key = k
		if seen[name] {
			return p.fail(nameNode, errf(ErrDuplicate, "key %q appears twice in this object", name),
				"remove one of them; JSON does not say which one wins")
		}
		seen[name] = true
		var f *field
		for j := range fields {
			if fields[j].name == name {
				f = &fields[j]
			}
		}
		if f == nil {
			return p.unknown(nameNode, name, fields)
		}
		if p.s.keys == nil {
			p.s.keys = map[string]Pos{}
		}
		p.s.keys[k] = p.pos(nameNode)
		if err := f.fn(node{v: &m.Value, key: k}); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) unknown(n node, name string, fields []field) error {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	sort.Strings(names)
	hint := ""
	if s := suggest(name, names); s != "" {
		hint = fmt.Sprintf("did you mean %q?", s)
	} else if !strings.Contains(n.key, ".") && !strings.Contains(n.key, "[") {
		hint = `moat reads srt's settings schema; moat's own settings go under "moat"`
	} else {
		hint = "remove it; moat rejects keys it does not know rather than ignore them"
	}
	return p.fail(n, errf(ErrUnknownKey, "unknown key %q (valid keys here: %s)", name, strings.Join(names, ", ")), hint)
}

// suggest returns the valid name closest to a misspelt one, if any is close.
func suggest(name string, valid []string) string {
	best, bestD := "", 3
	for _, v := range valid {
		if strings.EqualFold(v, name) {
			return v
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(v)); d < bestD {
			best, bestD = v, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// str returns a string value. Invalid UTF-8 and lone surrogate escapes are errors:
// the JSON decoder would silently turn them into U+FFFD.
func (p *parser) str(n node) (string, error) {
	lit, ok := n.v.Value.(hujson.Literal)
	if !ok || lit.Kind() != '"' {
		return "", p.typeErr(n, "a string", `"..."`)
	}
	s := lit.String()
	if !utf8.Valid(lit) || strings.ContainsRune(s, utf8.RuneError) {
		return "", p.fail(n, errf(ErrValue, "string contains invalid UTF-8 or an unpaired surrogate escape"),
			"save the file as UTF-8 and check \\u escapes")
	}
	return s, nil
}

func (p *parser) boolean(n node) (bool, error) {
	lit, ok := n.v.Value.(hujson.Literal)
	if !ok || (lit.Kind() != 't' && lit.Kind() != 'f') {
		return false, p.typeErr(n, "a boolean", "true or false")
	}
	return lit.Bool(), nil
}

func (p *parser) integer(n node, lo, hi int) (int, error) {
	lit, ok := n.v.Value.(hujson.Literal)
	if !ok || lit.Kind() != '0' {
		return 0, p.typeErr(n, "a number", strconv.Itoa(lo))
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || f != float64(int64(f)) || f < float64(lo) || f > float64(hi) {
		return 0, p.fail(n, errf(ErrValue, "%s is not an integer from %d to %d", lit, lo, hi),
			fmt.Sprintf("write a whole number from %d to %d", lo, hi))
	}
	return int(f), nil
}

// array walks an array, calling fn for each element with its key path.
func (p *parser) array(n node, example string, fn func(i int, e node) error) error {
	arr, ok := n.v.Value.(*hujson.Array)
	if !ok {
		return p.typeErr(n, "an array", example)
	}
	for i := range arr.Elements {
		if err := fn(i, node{v: &arr.Elements[i], key: fmt.Sprintf("%s[%d]", n.key, i)}); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) arrayLen(n node) int {
	if arr, ok := n.v.Value.(*hujson.Array); ok {
		return len(arr.Elements)
	}
	return -1
}

// strings returns an array of strings with their positions.
func (p *parser) strings(n node, example string) ([]Item, error) {
	out := []Item{}
	err := p.array(n, example, func(i int, e node) error {
		s, err := p.str(e)
		if err != nil {
			return err
		}
		out = append(out, Item{Value: s, Pos: p.pos(e)})
		return nil
	})
	return out, err
}

// paths returns an array of paths, each checked for the list it is in.
func (p *parser) paths(n node, l pathList) ([]Item, error) {
	items, err := p.strings(n, `["~/.ssh", "./secrets"]`)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if pr := checkPath(it.Value, l); pr != nil {
			return nil, p.failAt(it.Pos, pr)
		}
		if strings.HasPrefix(it.Value, "/") {
			// An absolute path resolves the same everywhere: check it now.
			if _, _, pr := resolvePath(it.Value, Env{Cwd: "/", Home: "/"}); pr != nil {
				return nil, p.failAt(it.Pos, pr)
			}
		}
	}
	return items, nil
}

func (p *parser) failAt(pos Pos, pr *problem) error {
	return &Error{File: p.file, Line: pos.Line, Col: pos.Col, Key: pos.Key, Err: pr.err, HintText: pr.hint}
}

// domains returns an array of validated domain patterns.
func (p *parser) domains(n node, withPort, star bool) ([]DomainRule, error) {
	items, err := p.strings(n, `["example.com", "*.example.com:443"]`)
	if err != nil {
		return nil, err
	}
	out := make([]DomainRule, 0, len(items))
	for _, it := range items {
		r, pr := parseDomain(it.Value, withPort, star)
		if pr != nil {
			return nil, p.failAt(it.Pos, pr)
		}
		r.Origin = p.origin(it.Pos)
		out = append(out, r)
	}
	return out, nil
}
