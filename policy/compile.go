package policy

import (
	"path/filepath"
	"strconv"
	"strings"
)

// Flags are the rules given on moat run's command line; each is repeatable and adds
// to the settings file (or the default).
type Flags struct{ AllowRead, DenyRead, AllowWrite, DenyWrite []string }

// Env is what relative and ~ paths resolve against. Both must be absolute.
type Env struct{ Cwd, Home string }

// Policy is a compiled, validated policy with absolute, lexically clean paths.
// Symlinks are not resolved here; the sandbox does that.
type Policy struct {
	Cwd, Home string

	// Reads are allowed except under DenyRead; AllowRead re-opens inside a denied
	// area, and a DenyRead deeper than that AllowRead stays denied. Writes are
	// denied except under AllowWrite; DenyWrite wins over AllowWrite.
	DenyRead, AllowRead, AllowWrite, DenyWrite []Rule

	// Protected are the mandatory protected paths still in force (the table minus
	// moat.unprotect), read-only wherever the rules above would make them writable.
	Protected []Protected
	// ProtectedDepth is how many directory levels below each writable root the
	// sandbox also looks for workspace entries (srt's mandatoryDenySearchDepth).
	ProtectedDepth int

	EnvVars []EnvRule
	Network Network

	// IgnoreViolations maps a command pattern ("*": all) to paths whose violations
	// are not reported. Reporting only.
	IgnoreViolations map[string][]string
}

// Rule is one filesystem rule.
type Rule struct {
	Path string // absolute and clean; a doublestar pattern when Glob is set
	// Glob is set when the path as written has * ? or [. The cwd or home prefix of
	// a glob is backslash-escaped, and { } are literal.
	Glob   bool
	Origin string // "settings.json:12 filesystem.denyRead[2]", "flag --deny-read" or "default"
}

// Protected is one entry of the protected paths table.
type Protected struct {
	Name   string // relative to Where, e.g. ".git/hooks"
	Dir    bool
	Where  string // WhereWorkspace or WhereHome
	Reason string
}

// EnvRule says what happens to one environment variable inside the sandbox.
type EnvRule struct {
	Name   string
	Mode   string // ModeDeny or ModeMask
	Origin string
	// InjectHosts narrows where the network layer may swap a masked value back
	// in; nil means every allowed domain.
	InjectHosts []DomainRule
}

// Network is the validated srt network settings. Until moat's network layer
// enforces them, the sandbox has no network at all, which is stricter.
type Network struct {
	AllowedDomains, DeniedDomains []DomainRule // denied is checked first
	DeniedDomainReasons           map[string]string
	AllowUnixSockets              []string // absolute, clean
	AllowAllUnixSockets           bool
	AllowLocalBinding             bool
	StrictAllowlist               bool // srt: never ask; moat never asks anyway
	AllowPlaintextInject          bool // credentials.allowPlaintextInject
}

// Origin of the default rules.
const OriginDefault = "default"

// defaultProtectedDepth is srt's default mandatoryDenySearchDepth.
const defaultProtectedDepth = 3

// Default is the policy for when there is no settings file: the current directory
// writable, everything else readable and nothing else writable, every protected
// path in force, no network.
func Default(env Env) (*Policy, error) { return Compile(nil, Flags{}, env) }

// Compile turns settings (nil means the built-in default) plus flags into a Policy.
// With settings, srt's semantics apply exactly: only allowWrite paths (and
// --allow-write) are writable, the current directory included.
func Compile(s *Settings, f Flags, env Env) (*Policy, error) {
	var err error
	if env.Cwd, err = checkEnvDir("cwd", env.Cwd); err != nil {
		return nil, err
	}
	if env.Home, err = checkEnvDir("home", env.Home); err != nil {
		return nil, err
	}
	c := &compiler{env: env, seen: map[*[]Rule]map[string]bool{}}
	pol := &Policy{
		Cwd:            env.Cwd,
		Home:           env.Home,
		ProtectedDepth: defaultProtectedDepth,
	}
	if s == nil {
		c.addRule(&pol.AllowWrite, Rule{Path: env.Cwd, Origin: OriginDefault})
		pol.Protected = ProtectedTable()
	} else {
		if err := c.settings(pol, s); err != nil {
			return nil, err
		}
	}
	for _, fl := range []struct {
		name string
		vals []string
		l    pathList
		dst  *[]Rule
	}{
		{"--deny-read", f.DenyRead, listDenyRead, &pol.DenyRead},
		{"--allow-read", f.AllowRead, listAllowRead, &pol.AllowRead},
		{"--allow-write", f.AllowWrite, listAllowWrite, &pol.AllowWrite},
		{"--deny-write", f.DenyWrite, listDenyWrite, &pol.DenyWrite},
	} {
		for _, v := range fl.vals {
			fail := func(pr *problem) error {
				return &Error{Key: fl.name, Err: pr.err, HintText: pr.hint}
			}
			if pr := checkPath(v, fl.l); pr != nil {
				return nil, fail(pr)
			}
			path, glob, pr := resolvePath(v, env)
			if pr != nil {
				return nil, fail(pr)
			}
			c.addRule(fl.dst, Rule{Path: path, Glob: glob, Origin: "flag " + fl.name})
		}
	}
	return pol, nil
}

type compiler struct {
	env  Env
	seen map[*[]Rule]map[string]bool
}

// addRule appends r unless the list already has its path (the first origin stays).
func (c *compiler) addRule(dst *[]Rule, r Rule) {
	m := c.seen[dst]
	if m == nil {
		m = map[string]bool{}
		c.seen[dst] = m
	}
	if m[r.Path] {
		return
	}
	m[r.Path] = true
	*dst = append(*dst, r)
}

func (c *compiler) settings(pol *Policy, s *Settings) error {
	fail := func(pos Pos, pr *problem) error {
		return &Error{File: s.File, Line: pos.Line, Col: pos.Col, Key: pos.Key, Err: pr.err, HintText: pr.hint}
	}
	origin := func(pos Pos) string { return s.File + ":" + strconv.Itoa(pos.Line) + " " + pos.Key }
	lists := []struct {
		items []Item
		l     pathList
		dst   *[]Rule
	}{
		{s.Filesystem.DenyRead, listDenyRead, &pol.DenyRead},
		{s.Credentials.Files, listCredFile, &pol.DenyRead},
		{s.Filesystem.AllowRead, listAllowRead, &pol.AllowRead},
		{s.Filesystem.AllowWrite, listAllowWrite, &pol.AllowWrite},
		{s.Filesystem.DenyWrite, listDenyWrite, &pol.DenyWrite},
	}
	for _, li := range lists {
		for _, it := range li.items {
			if pr := checkPath(it.Value, li.l); pr != nil {
				return fail(it.Pos, pr)
			}
			path, glob, pr := resolvePath(it.Value, c.env)
			if pr != nil {
				return fail(it.Pos, pr)
			}
			c.addRule(li.dst, Rule{Path: path, Glob: glob, Origin: origin(it.Pos)})
		}
	}

	unprotect := map[string]bool{}
	for _, it := range s.Moat.Unprotect {
		if pr := checkUnprotect(it.Value); pr != nil {
			return fail(it.Pos, pr)
		}
		unprotect[it.Value] = true
	}
	for _, e := range protectedTable {
		if !unprotect[unprotectName(e)] {
			pol.Protected = append(pol.Protected, e)
		}
	}
	if s.MandatoryDenySearchDepth != 0 {
		pol.ProtectedDepth = s.MandatoryDenySearchDepth
	}

	seenEnv := map[string]bool{}
	for _, ev := range s.Credentials.EnvVars {
		if !envNameOK(ev.Name) || (ev.Mode != ModeDeny && ev.Mode != ModeMask) {
			return fail(ev.Pos, bad(errf(ErrValue, "credential entry %q with mode %q is invalid", ev.Name, ev.Mode),
				`each entry needs a variable name and mode "deny" or "mask"`))
		}
		if seenEnv[ev.Name] {
			continue // Parse made sure duplicates agree
		}
		seenEnv[ev.Name] = true
		pol.EnvVars = append(pol.EnvVars, EnvRule{Name: ev.Name, Mode: ev.Mode, Origin: origin(ev.Pos),
			InjectHosts: append([]DomainRule(nil), ev.InjectHosts...)})
	}

	n := s.Network
	pol.Network = Network{
		AllowedDomains:       append([]DomainRule(nil), n.AllowedDomains...),
		DeniedDomains:        append([]DomainRule(nil), n.DeniedDomains...),
		AllowAllUnixSockets:  n.AllowAllUnixSockets,
		AllowLocalBinding:    n.AllowLocalBinding,
		StrictAllowlist:      n.StrictAllowlist,
		AllowPlaintextInject: s.Credentials.AllowPlaintextInject,
	}
	if len(n.DeniedDomainReasons) > 0 {
		pol.Network.DeniedDomainReasons = map[string]string{}
		for k, v := range n.DeniedDomainReasons {
			pol.Network.DeniedDomainReasons[k] = v
		}
	}
	seenSock := map[string]bool{}
	for _, it := range n.AllowUnixSockets {
		if pr := checkPath(it.Value, listSocket); pr != nil {
			return fail(it.Pos, pr)
		}
		path, _, pr := resolvePath(it.Value, c.env)
		if pr != nil {
			return fail(it.Pos, pr)
		}
		if !seenSock[path] {
			seenSock[path] = true
			pol.Network.AllowUnixSockets = append(pol.Network.AllowUnixSockets, path)
		}
	}
	if len(s.IgnoreViolations) > 0 {
		pol.IgnoreViolations = map[string][]string{}
		for k, v := range s.IgnoreViolations {
			pol.IgnoreViolations[k] = append([]string(nil), v...)
		}
	}
	return nil
}

func checkEnvDir(what, dir string) (string, error) {
	switch {
	case strings.IndexByte(dir, 0) >= 0:
		return "", &Error{Key: what, Err: errf(ErrEnv, "%s directory %q contains a NUL byte", what, dir)}
	case !filepath.IsAbs(dir):
		return "", &Error{Key: what, Err: errf(ErrEnv, "%s directory %q is not an absolute path", what, dir),
			HintText: "this is a bug in the caller of policy.Compile"}
	}
	return filepath.Clean(dir), nil
}
