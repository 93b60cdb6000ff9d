package policy

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// PrivateDir is a directory the sandbox replaces with a fresh, empty one: the
// host's content is hidden and the sandbox's writes stay inside.
type PrivateDir struct{ Path, Reason string }

// privateDirTable lists the private directories; $XDG_RUNTIME_DIR
// (Policy.RuntimeDir) is one too.
var privateDirTable = []PrivateDir{
	{"/tmp", "private /tmp: host temp files hidden, mktemp works"},
	{"/var/tmp", "private /var/tmp"},
	{"/run", "host runtime dir hidden: D-Bus, docker.sock, agent sockets"},
	{"/var/run", "host runtime dir hidden (when not a link to /run)"},
}

// PrivateDirs returns the private directories of a policy, $XDG_RUNTIME_DIR included.
func (p *Policy) PrivateDirs() []PrivateDir {
	out := append([]PrivateDir(nil), privateDirTable...)
	if p.RuntimeDir != "" {
		out = append(out, PrivateDir{p.RuntimeDir, "XDG_RUNTIME_DIR hidden: user sockets"})
	}
	return out
}

// Decision kinds: which list of rules decided.
const (
	KindDefault    = "default"    // no rule: reads allowed, writes denied
	KindDenyRead   = "denyRead"   //
	KindAllowRead  = "allowRead"  //
	KindAllowWrite = "allowWrite" // also makes the path readable
	KindDenyWrite  = "denyWrite"  //
	KindProtected  = "protected"  // the protected paths table
	KindPrivate    = "private"    // a private directory of the sandbox
)

// PathRule is the rule that decided a path's read or write verdict.
type PathRule struct {
	Kind   string // one of the Kind constants
	Path   string // the rule's path or pattern; "" for KindDefault
	Glob   bool
	Origin string // where the rule came from; the protected entry's reason for KindProtected
}

// PathVerdict is what the sandbox would let a command do with one path.
type PathVerdict struct {
	Path        string
	Read, Write bool
	// ReadRule and WriteRule decided each verdict. When the path is not readable,
	// WriteRule is ReadRule: what can't be read can't be written.
	ReadRule, WriteRule PathRule
	// Protected is the protected table entry that keeps the path read-only, if any.
	Protected *Protected
	// Hints say how to change each verdict ("" when there is nothing to change or
	// no way to change it).
	ReadHint, WriteHint string
	// Notes are caveats: glob rules cover only paths that exist when the sandbox
	// starts, and so on.
	Notes []string
}

// ruleNode is every rule that names one path, as the sandbox's planner sees it.
type ruleNode struct {
	denyRead, allowRead, allowWrite, denyWrite, private *PathRule
}

// ExplainPath says whether a command in the sandbox could read and write path
// (absolute and clean; symlinks are not followed here: see Resolve), and which
// rule decides. It follows the planner: the deepest of denyRead, allowRead and
// allowWrite decides readability, deny winning a tie; an allowWrite at or above
// a readable path makes it writable unless a denyWrite or protected entry is at
// or above it; a private directory hides the host's content below it.
func (p *Policy) ExplainPath(path string) PathVerdict {
	path = filepath.Clean(path)
	nodes := p.ruleNodes(path, false)
	v := evalNodes(path, nodes)
	// Protected entries apply where the rules alone make them, or their parent,
	// writable; then the planner pins them read-only.
	if prot, target := p.protectedAt(path); prot != nil {
		n := nodes[target]
		if n == nil {
			n = &ruleNode{}
			nodes[target] = n
		}
		if n.denyWrite == nil {
			n.denyWrite = &PathRule{Kind: KindProtected, Path: target, Origin: prot.Reason}
		}
		v = evalNodes(path, nodes)
		if v.WriteRule.Kind == KindProtected {
			v.Protected = prot
		}
	}
	v.Path = path
	p.hints(&v)
	for _, r := range []PathRule{v.ReadRule, v.WriteRule} {
		if r.Glob {
			v.Notes = append(v.Notes, "glob rules match the paths that exist when the sandbox starts; files created later are not covered")
			break
		}
	}
	return v
}

// ruleNodes collects the rules that name path or one of its ancestors. A glob
// counts at the shallowest ancestor it matches: the planner does not walk below a
// match. With rulesOnly, protected entries are left out (they are added later).
func (p *Policy) ruleNodes(path string, rulesOnly bool) map[string]*ruleNode {
	nodes := map[string]*ruleNode{}
	anc := Ancestors(path)
	at := func(a string) *ruleNode {
		n := nodes[a]
		if n == nil {
			n = &ruleNode{}
			nodes[a] = n
		}
		return n
	}
	lists := []struct {
		kind  string
		rules []Rule
		slot  func(*ruleNode) **PathRule
	}{
		{KindAllowWrite, p.AllowWrite, func(n *ruleNode) **PathRule { return &n.allowWrite }},
		{KindAllowRead, p.AllowRead, func(n *ruleNode) **PathRule { return &n.allowRead }},
		{KindDenyRead, p.DenyRead, func(n *ruleNode) **PathRule { return &n.denyRead }},
		{KindDenyWrite, p.DenyWrite, func(n *ruleNode) **PathRule { return &n.denyWrite }},
	}
	isAnc := make(map[string]bool, len(anc))
	for _, a := range anc {
		isAnc[a] = true
	}
	for _, l := range lists {
		for _, r := range l.rules {
			a, ok := r.Path, isAnc[r.Path]
			if r.Glob {
				a, ok = globAncestor(r.Path, anc)
			}
			if !ok {
				continue
			}
			if slot := l.slot(at(a)); *slot == nil {
				*slot = &PathRule{Kind: l.kind, Path: r.Path, Glob: r.Glob, Origin: r.Origin}
			}
		}
	}
	for _, d := range p.PrivateDirs() {
		for _, a := range anc {
			if a == d.Path {
				at(a).private = &PathRule{Kind: KindPrivate, Path: d.Path, Origin: d.Reason}
			}
		}
	}
	return nodes
}

// globAncestor returns the shallowest of the ancestors (ordered from "/") that
// the glob matches. Without "**" only the ancestor as deep as the pattern can.
func globAncestor(pattern string, anc []string) (string, bool) {
	want := -1
	if !strings.Contains(pattern, "**") {
		want = Depth(pattern)
	}
	for _, a := range anc {
		if want >= 0 && Depth(a) != want {
			continue
		}
		if ok, err := doublestar.PathMatch(pattern, a); err == nil && ok {
			return a, true
		}
	}
	return "", false
}

// evalNodes is the planner's stateOf, keeping the deciding rules.
func evalNodes(path string, nodes map[string]*ruleNode) PathVerdict {
	v := PathVerdict{Read: true, ReadRule: PathRule{Kind: KindDefault, Origin: OriginDefault + ": reads are allowed outside denyRead"}}
	readDepth, privDepth := -1, -1
	private := false
	var allowW, denyW, priv *PathRule
	for _, a := range Ancestors(path) {
		n := nodes[a]
		if n == nil {
			continue
		}
		d := Depth(a)
		if n.private != nil {
			privDepth, readDepth = d, d
			allowW, priv, private = nil, n.private, true
			v.Read, v.ReadRule = true, *n.private
		}
		if n.denyRead != nil || n.allowRead != nil || n.allowWrite != nil {
			if d >= readDepth {
				readDepth = d
				v.Read, private = n.denyRead == nil, false
				switch {
				case n.denyRead != nil:
					v.ReadRule = *n.denyRead
				case n.allowRead != nil:
					v.ReadRule = *n.allowRead
				default:
					v.ReadRule = *n.allowWrite
				}
			}
		}
		if n.allowWrite != nil {
			allowW = n.allowWrite
		}
		if n.denyWrite != nil {
			denyW = n.denyWrite
		}
	}
	switch {
	case privDepth >= 0 && readDepth == privDepth && private:
		v.Write = denyW == nil
		v.WriteRule = *priv
		if denyW != nil {
			v.WriteRule = *denyW
		}
	case !v.Read:
		v.WriteRule = v.ReadRule
	case denyW != nil:
		v.WriteRule = *denyW
	case allowW != nil:
		v.Write, v.WriteRule = true, *allowW
	default:
		v.WriteRule = PathRule{Kind: KindDefault, Origin: OriginDefault + ": writes are denied outside allowWrite"}
	}
	return v
}

// protectedAt returns the protected entry whose target is path or an ancestor
// of it, and that target, when the rules alone make the target or its parent
// writable (the planner's condition). Workspace entries apply at every
// allowWrite path, home entries at the home directory. Git's .git files
// (worktrees, submodules) are not followed here.
func (p *Policy) protectedAt(path string) (*Protected, string) {
	for i := range p.Protected {
		e := &p.Protected[i]
		bases := []string{p.Home}
		if e.Where == WhereWorkspace {
			bases = nil
			for _, r := range p.AllowWrite {
				bases = append(bases, r.Path)
			}
		}
		for _, base := range bases {
			target := filepath.Join(base, e.Name)
			if path != target && !(e.Dir && strings.HasPrefix(path, target+"/")) {
				continue
			}
			w := func(q string) bool { return evalNodes(q, p.ruleNodes(q, true)).Write }
			if w(filepath.Dir(target)) || w(target) {
				return e, target
			}
		}
	}
	return nil, ""
}

// hints fills in how to change each verdict.
func (p *Policy) hints(v *PathVerdict) {
	cfg := p.UserConfig
	if cfg == "" {
		cfg = "your user config"
	}
	r := v.ReadRule
	if !v.Read {
		switch r.Kind {
		case KindDenyRead:
			name, secret := SecretName(r.Origin)
			deeper := !r.Glob && Depth(r.Path) < Depth(v.Path)
			switch {
			case secret && deeper:
				v.ReadHint = fmt.Sprintf("allow with --allow-read %s (only that path), or add %q to \"moat\": {\"allowSecrets\": [...]} in %s (all of %s)",
					v.Path, name, cfg, name)
			case secret:
				v.ReadHint = fmt.Sprintf("add %q to \"moat\": {\"allowSecrets\": [...]} in %s; a built-in secret is dropped only by name", name, cfg)
			case deeper:
				v.ReadHint = fmt.Sprintf("allow with --allow-read %s, or add it to filesystem.allowRead", v.Path)
			case strings.HasPrefix(r.Origin, "flag "):
				v.ReadHint = "drop " + r.Origin[len("flag "):] + " " + r.Path
			case strings.HasPrefix(r.Origin, "ignore file "):
				v.ReadHint = "the " + r.Origin + " hides it; outside moat (the file is read-only inside), remove that pattern, or add a negating \"!\" line after it"
			default:
				v.ReadHint = "remove the rule at " + r.Origin + "; an allowRead of the same path does not win over it"
			}
		case KindPrivate:
			v.ReadHint = "the sandbox has its own empty " + r.Path + "; the host's content there is never visible"
		}
	}
	w := v.WriteRule
	switch {
	case v.Write:
	case !v.Read:
		v.WriteHint = "it cannot be read, so it cannot be written; change the read verdict first"
	case w.Kind == KindProtected:
		v.WriteHint = fmt.Sprintf("protected: %s; to make it writable add %q to \"moat\": {\"unprotect\": [...]} in %s",
			w.Origin, unprotectName(*v.Protected), cfg)
	case w.Kind == KindDenyWrite && strings.HasPrefix(w.Origin, "flag "):
		v.WriteHint = "drop " + w.Origin[len("flag "):] + " " + w.Path + "; denyWrite wins over every allowWrite"
	case w.Kind == KindDenyWrite:
		v.WriteHint = "remove the rule at " + w.Origin + "; denyWrite wins over every allowWrite"
	case w.Kind == KindDefault:
		v.WriteHint = fmt.Sprintf("allow with --allow-write %s, or add it to filesystem.allowWrite", v.Path)
	}
}

// HostVerdict is what the network layer does with a connection to host:port.
type HostVerdict struct {
	Host    string // lower case, without brackets or a trailing dot
	Port    int
	Allowed bool
	// Rule is the deciding rule: the first deniedDomains match, else an
	// allowedDomains match; nil when none matched (denied by default) or the host
	// is invalid.
	Rule *DomainRule
	// Reason says why, in a sentence the sandboxed command may read.
	Reason string
	// Hint says how to change the verdict; "" when allowed.
	Hint string
}

// ExplainHost decides a connection to host:port: deniedDomains first (the first
// match denies), then allowedDomains (a match allows; an exact host is preferred
// to a wildcard for the explanation), and nothing else is allowed. It is the
// single source of truth of the network layer's checks. It judges names as
// written: the network layer still refuses a name that resolves to an address it
// must not reach.
func (p *Policy) ExplainHost(host string, port int) HostVerdict {
	h := strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "."))
	v := HostVerdict{Host: h, Port: port}
	if port < 1 || port > 65535 {
		v.Reason = fmt.Sprintf("port %d is not a port number", port)
		return v
	}
	if !validHost(h) {
		v.Reason = fmt.Sprintf("%q is not a host name or IP address", host)
		return v
	}
	for i := range p.Network.DeniedDomains {
		r := &p.Network.DeniedDomains[i]
		if r.Match(h, port) {
			v.Rule = r
			v.Reason = fmt.Sprintf("%s is denied by %q (%s)", hostPort(h, port), r.Pattern, r.Origin)
			if why := p.Network.DeniedDomainReasons[r.Pattern]; why != "" {
				v.Reason += ": " + why
			}
			if strings.HasPrefix(r.Origin, "flag ") {
				v.Hint = fmt.Sprintf("drop %s %s; a deny rule wins over every allow rule", r.Origin[len("flag "):], r.Pattern)
			} else {
				v.Hint = fmt.Sprintf("remove %q from network.deniedDomains (%s); a deny rule wins over every allow rule", r.Pattern, r.Origin)
			}
			return v
		}
	}
	var wild *DomainRule
	for i := range p.Network.AllowedDomains {
		r := &p.Network.AllowedDomains[i]
		if !r.Match(h, port) {
			continue
		}
		if strings.HasPrefix(r.Host, "*.") {
			if wild == nil {
				wild = r
			}
			continue
		}
		wild = r
		break
	}
	if wild != nil {
		v.Allowed, v.Rule = true, wild
		v.Reason = fmt.Sprintf("%s is allowed by %q (%s)", hostPort(h, port), wild.Pattern, wild.Origin)
		return v
	}
	v.Reason = fmt.Sprintf("%s is not in any allow list; moat allows only listed hosts", hostPort(h, port))
	cfg := p.UserConfig
	if cfg == "" {
		cfg = "your user config"
	}
	v.Hint = fmt.Sprintf("allow with --allow-net %s, or add %q to network.allowedDomains in %s",
		hostPort(h, port), hostPort(h, port), cfg)
	if names := profilesAllowing(h, port); len(names) > 0 {
		v.Hint += "; the profile " + strings.Join(names, ", ") + " allows it (--profile NAME)"
	}
	return v
}

// profilesAllowing lists the built-in profiles whose own allowedDomains let
// host:port through.
func profilesAllowing(host string, port int) []string {
	return builtinsWhere(func(p *Profile) bool {
		for _, r := range p.Settings.Network.AllowedDomains {
			if r.Match(host, port) {
				return true
			}
		}
		return false
	})
}

// validHost accepts an IP literal or a name that would be a valid allowedDomains
// entry (no wildcard).
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return !strings.Contains(h, "%")
	}
	if strings.Contains(h, "*") || strings.Contains(h, ":") {
		return false
	}
	_, pr := parseDomain(h, false, false)
	return pr == nil
}

// hostPort writes host:port as an allowedDomains entry would, IPv6 in brackets.
func hostPort(h string, port int) string {
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(port)
}

// Resolve returns a copy of the policy whose literal rule paths, home and
// private directories are replaced by what eval returns for them (normally
// filepath.EvalSymlinks), as the sandbox resolves them before it builds the mount
// view. A path eval fails on is kept as it is; globs are kept as written.
func (p *Policy) Resolve(eval func(string) (string, error)) *Policy {
	q := *p
	res := func(path string) string {
		if real, err := eval(path); err == nil {
			return real
		}
		return path
	}
	lists := []*[]Rule{&q.DenyRead, &q.AllowRead, &q.AllowWrite, &q.DenyWrite}
	for _, l := range lists {
		rules := make([]Rule, len(*l))
		for i, r := range *l {
			if !r.Glob {
				r.Path = res(r.Path)
			}
			rules[i] = r
		}
		*l = rules
	}
	q.Home = res(q.Home)
	if q.RuntimeDir != "" {
		q.RuntimeDir = res(q.RuntimeDir)
	}
	return &q
}

// Ancestors lists "/", then each prefix of the absolute, clean path, ending with
// path itself: the order in which rules on a path's ancestors are weighed (the
// sandbox's planner walks them the same way).
func Ancestors(path string) []string {
	out := []string{"/"}
	if path == "/" {
		return out
	}
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		cur += "/" + part
		out = append(out, cur)
	}
	return out
}

// Depth is the number of components of an absolute, clean path ("/" is 0).
func Depth(path string) int {
	if path == "/" {
		return 0
	}
	return strings.Count(path, "/")
}
