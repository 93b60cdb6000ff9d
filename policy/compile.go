package policy

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Flags are the rules given on the command line; each is repeatable and adds to
// every other layer. They are the strongest layer.
type Flags struct {
	AllowRead, DenyRead, AllowWrite, DenyWrite []string
	// AllowNet and DenyNet are domain patterns ("HOST", "*.HOST", "HOST:PORT") as
	// in network.allowedDomains and network.deniedDomains.
	AllowNet, DenyNet []string
	// PassEnv are variable names or patterns passed despite the scrubbing table.
	PassEnv []string
	// RequireNamespaces forbids the direct mode, as moat.requireNamespaces does
	// (moat run --no-fallback).
	RequireNamespaces bool
}

// Env is what relative and ~ paths resolve against. Cwd and Home must be absolute.
type Env struct {
	Cwd, Home string
	// RuntimeDir is $XDG_RUNTIME_DIR, which the sandbox replaces with a private
	// directory. Optional; explanations use it.
	RuntimeDir string
}

// Policy is a compiled, validated policy with absolute, lexically clean paths.
// Symlinks are not resolved here; the sandbox does that.
type Policy struct {
	Cwd, Home  string
	RuntimeDir string // "" when unknown

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

	// EnvVars are the credentials.envVars rules, one per variable. PassEnv lists
	// the variables the scrubbing table leaves alone. FilterEnv applies both.
	EnvVars []EnvRule
	PassEnv []EnvPass
	Network Network

	// IgnoreViolations maps a command pattern ("*": all) to paths whose violations
	// are not reported. Reporting only.
	IgnoreViolations map[string][]string

	// IgnoreFiles are the ignore file names to look for in the workspace and below
	// (.moatignore first); the paths they match are to be unreadable and unwritable.
	IgnoreFiles []IgnoreFile
	// CreateDirs are the directories (moat.createDirs, all in the home directory)
	// that the sandbox makes, empty, when they are missing; the profiles'
	// writable directories are made the same way.
	CreateDirs []Rule

	// Profiles are the profiles applied, in order (an extended profile before the
	// one that extends it).
	Profiles []AppliedProfile
	// AllowedSecrets and Unprotected are the entries of the secret and protected
	// tables dropped by name, with where that was asked.
	AllowedSecrets, Unprotected []OptOut

	// RequireNamespaces, when on, forbids the direct mode: on a host where user
	// namespaces can't be created the sandbox fails instead of running without
	// them (moat.requireNamespaces of any layer, flag --no-fallback).
	RequireNamespaces Switch
	// AllowUnscopedSignals, when on, lets the direct mode run where Landlock can't
	// confine signals to the sandbox (ABI < 6): the command can then signal every
	// process of the user (moat.allowUnscopedSignals; a widening).
	AllowUnscopedSignals Switch

	// UserConfig is the user config's path ("" when unknown), named in hints.
	UserConfig string
	// ProjectFile is the project's .moat.jsonc, "" when there is none; trusted
	// project files may widen the policy, others only tighten it.
	ProjectFile    string
	ProjectTrusted bool
}

// Switch is a setting a layer can only turn on, with where it was turned on.
type Switch struct {
	On     bool
	Origin string // "config.jsonc:4 moat.requireNamespaces", "flag --no-fallback"; "" when off
}

// turnOn sets sw unless a weaker layer already did (the first origin stays).
func (sw *Switch) turnOn(origin string) {
	if !sw.On {
		*sw = Switch{On: true, Origin: origin}
	}
}

// Rule is one filesystem rule.
type Rule struct {
	Path string // absolute and clean; a doublestar pattern when Glob is set
	// Glob is set when the path as written has * ? or [. The cwd or home prefix of
	// a glob is backslash-escaped, and { } are literal.
	Glob   bool
	Origin string // "settings.json:12 filesystem.denyRead[2]", "flag --deny-read", "profile claude (...)" or "default..."
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

// Network is the validated network settings of every layer. Until moat's
// network layer enforces them, the sandbox has no network at all, which is stricter.
type Network struct {
	AllowedDomains, DeniedDomains []DomainRule // denied is checked first
	DeniedDomainReasons           map[string]string
	AllowUnixSockets              []string // absolute, clean
	AllowAllUnixSockets           bool
	AllowLocalBinding             bool
	StrictAllowlist               bool // srt: never ask; moat never asks anyway
	AllowPlaintextInject          bool // credentials.allowPlaintextInject
}

// IgnoreFile is one ignore file name to look for, with where it was enabled.
type IgnoreFile struct{ Name, Origin string }

// AppliedProfile is one profile in force.
type AppliedProfile struct {
	Name, Description string
	Origin            string // how it was asked for: "flag --profile", "config.jsonc:3 moat.defaultProfiles[0]", "extended by mywork"
}

// OptOut is a table entry dropped by name.
type OptOut struct{ Name, Origin string }

// Origin of the default rules. Rules of the secret table have origins that
// start with it ("default: credential store (~/.ssh: SSH private keys)").
const OriginDefault = "default"

// IgnoreFileName is moat's own ignore file, always read.
const IgnoreFileName = ".moatignore"

// ProjectFileName is the project's settings file, read from the workspace root.
const ProjectFileName = ".moat.jsonc"

// defaultProtectedDepth is srt's default mandatoryDenySearchDepth.
const defaultProtectedDepth = 3

// Default is the policy for when there is no settings file: the current directory
// writable, everything else readable except the secret table, nothing else
// writable, every protected path in force, secret-looking variables scrubbed,
// no network.
func Default(env Env) (*Policy, error) { return Compile(nil, Flags{}, env) }

// Compile turns settings (nil means the built-in default) plus flags into a
// Policy: CompileLayers with only the user layer and flags.
func Compile(s *Settings, f Flags, env Env) (*Policy, error) {
	return CompileLayers(Layers{User: s, Flags: f}, env)
}

// Layers are the sources of a policy, weakest first: the built-in default (always),
// the user config, the profiles, the project file and the flags.
type Layers struct {
	// User is the user config (--config, else ~/.config/moat/config.jsonc); nil
	// when there is none. Without it the current directory is writable by default;
	// with it, only what it lists (srt's semantics).
	User *Settings
	// UserPath is where the user config is, or would be, for hints that say
	// "add ... to FILE". Defaults to User.File.
	UserPath string
	// Profiles are the profiles asked for with --profile, in order. The user
	// config's (and a trusted project's) moat.defaultProfiles come first.
	Profiles []string
	// Project is the workspace's .moat.jsonc; nil when there is none. Unless the
	// user config trusts it by path and hash, it may only tighten the policy.
	Project *Settings
	// ProjectPath is the project file's absolute path, used for trust and for
	// relative paths in it; defaults to Project.File.
	ProjectPath string
	Flags       Flags
}

// layer is one settings file or profile to apply.
type layer struct {
	s      *Settings
	env    Env                 // what its relative paths resolve against
	origin func(Pos) string    // the origin of a value at pos
	wrap   func(string) string // turns an origin set at parse time into this layer's
}

// CompileLayers compiles the layers into a Policy; see Layers and the package doc.
func CompileLayers(l Layers, env Env) (*Policy, error) {
	var err error
	if env.Cwd, err = checkEnvDir("cwd", env.Cwd); err != nil {
		return nil, err
	}
	if env.Home, err = checkEnvDir("home", env.Home); err != nil {
		return nil, err
	}
	if env.RuntimeDir != "" {
		if env.RuntimeDir, err = checkEnvDir("runtime", env.RuntimeDir); err != nil {
			return nil, err
		}
	}
	c := &compiler{env: env, seen: map[*[]Rule]map[string]bool{}, envIndex: map[string]int{}}
	pol := &Policy{
		Cwd:            env.Cwd,
		Home:           env.Home,
		RuntimeDir:     env.RuntimeDir,
		ProtectedDepth: defaultProtectedDepth,
		UserConfig:     l.UserPath,
		IgnoreFiles:    []IgnoreFile{{Name: IgnoreFileName, Origin: OriginDefault + ": moat's ignore file"}},
	}
	if pol.UserConfig == "" && l.User != nil {
		pol.UserConfig = l.User.File
	}

	var layers []layer
	if l.User != nil {
		layers = append(layers, fileLayer(l.User, env))
	}
	var project *layer
	if l.Project != nil {
		path := l.ProjectPath
		if path == "" {
			path = l.Project.File
		}
		trusted, err := checkProject(l, path, pol.UserConfig)
		if err != nil {
			return nil, err
		}
		pol.ProjectFile, pol.ProjectTrusted = path, trusted
		penv := env
		if filepath.IsAbs(path) {
			penv.Cwd = filepath.Dir(filepath.Clean(path)) // relative paths in it mean the project's
		}
		pl := fileLayer(l.Project, penv)
		project = &pl
	}
	profLayers, applied, err := c.profiles(l, pol.ProjectTrusted)
	if err != nil {
		return nil, err
	}
	layers = append(layers, profLayers...)
	if project != nil {
		layers = append(layers, *project)
	}
	pol.Profiles = applied

	if err := c.base(pol, layers, l.User == nil); err != nil {
		return nil, err
	}
	for _, ly := range layers {
		if err := c.layer(pol, ly); err != nil {
			return nil, err
		}
	}
	if err := c.flags(pol, l.Flags); err != nil {
		return nil, err
	}
	return pol, nil
}

func fileLayer(s *Settings, env Env) layer {
	return layer{s: s, env: env,
		origin: func(pos Pos) string { return s.File + ":" + strconv.Itoa(pos.Line) + " " + pos.Key },
		wrap:   func(o string) string { return o },
	}
}

func profileLayer(p *Profile, env Env) layer {
	ly := fileLayer(p.Settings, env)
	inner := ly.origin
	ly.wrap = func(o string) string { return "profile " + p.Name + " (" + o + ")" }
	ly.origin = func(pos Pos) string { return ly.wrap(inner(pos)) }
	return ly
}

type compiler struct {
	env      Env
	seen     map[*[]Rule]map[string]bool
	envIndex map[string]int // EnvVars index by name
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

// base applies the built-in default layer: the secret table minus
// moat.allowSecrets, the protected table minus moat.unprotect, and without a
// user config the current directory writable.
func (c *compiler) base(pol *Policy, layers []layer, cwdWritable bool) error {
	secrets, unprotect := map[string]bool{}, map[string]bool{}
	for _, ly := range layers {
		fail := func(pos Pos, pr *problem) error {
			return &Error{File: ly.s.File, Line: pos.Line, Col: pos.Col, Key: pos.Key, Err: pr.err, HintText: pr.hint}
		}
		for _, it := range ly.s.Moat.AllowSecrets {
			if pr := checkSecretName(it.Value); pr != nil {
				return fail(it.Pos, pr)
			}
			if !secrets[it.Value] {
				secrets[it.Value] = true
				pol.AllowedSecrets = append(pol.AllowedSecrets, OptOut{Name: it.Value, Origin: ly.origin(it.Pos)})
			}
		}
		for _, it := range ly.s.Moat.Unprotect {
			if pr := checkUnprotect(it.Value); pr != nil {
				return fail(it.Pos, pr)
			}
			if !unprotect[it.Value] {
				unprotect[it.Value] = true
				pol.Unprotected = append(pol.Unprotected, OptOut{Name: it.Value, Origin: ly.origin(it.Pos)})
			}
		}
	}
	for _, s := range secretTable {
		if secrets[s.Name] {
			continue
		}
		for _, raw := range secretPaths(s) {
			path, glob, pr := resolvePath(raw, c.env)
			if pr != nil {
				return &Error{Key: s.Name, Err: pr.err, HintText: "this is a bug in moat's secret table"}
			}
			c.addRule(&pol.DenyRead, Rule{Path: path, Glob: glob, Origin: secretOrigin(s)})
		}
	}
	for _, e := range protectedTable {
		if !unprotect[unprotectName(e)] {
			pol.Protected = append(pol.Protected, e)
		}
	}
	if cwdWritable {
		c.addRule(&pol.AllowWrite, Rule{Path: c.env.Cwd, Origin: OriginDefault})
	}
	return nil
}

// layer adds one settings file's or profile's rules.
func (c *compiler) layer(pol *Policy, ly layer) error {
	s := ly.s
	fail := func(pos Pos, pr *problem) error {
		return &Error{File: s.File, Line: pos.Line, Col: pos.Col, Key: pos.Key, Err: pr.err, HintText: pr.hint}
	}
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
			path, glob, pr := resolvePath(it.Value, ly.env)
			if pr != nil {
				return fail(it.Pos, pr)
			}
			c.addRule(li.dst, Rule{Path: path, Glob: glob, Origin: ly.origin(it.Pos)})
		}
	}
	if s.MandatoryDenySearchDepth != 0 {
		pol.ProtectedDepth = s.MandatoryDenySearchDepth
	}

	seenHere := map[string]bool{}
	for _, ev := range s.Credentials.EnvVars {
		if !envNameOK(ev.Name) || (ev.Mode != ModeDeny && ev.Mode != ModeMask) {
			return fail(ev.Pos, bad(errf(ErrValue, "credential entry %q with mode %q is invalid", ev.Name, ev.Mode),
				`each entry needs a variable name and mode "deny" or "mask"`))
		}
		if seenHere[ev.Name] {
			continue // Parse made sure duplicates in one file agree
		}
		seenHere[ev.Name] = true
		r := EnvRule{Name: ev.Name, Mode: ev.Mode, Origin: ly.origin(ev.Pos), InjectHosts: wrapDomains(ev.InjectHosts, ly.wrap)}
		if i, ok := c.envIndex[ev.Name]; ok {
			// Across layers "deny" wins; between masks the stronger layer's settings do.
			if pol.EnvVars[i].Mode != ModeDeny {
				pol.EnvVars[i] = r
			}
			continue
		}
		c.envIndex[ev.Name] = len(pol.EnvVars)
		pol.EnvVars = append(pol.EnvVars, r)
	}
	for _, it := range s.Moat.PassEnv {
		if pr := checkPassEnv(it.Value); pr != nil {
			return fail(it.Pos, pr)
		}
		pol.addPass(EnvPass{Pattern: it.Value, Origin: ly.origin(it.Pos)})
	}
	for _, it := range s.Moat.CreateDirs {
		if pr := checkCreateDir(it.Value); pr != nil {
			return fail(it.Pos, pr)
		}
		path, _, pr := resolvePath(it.Value, ly.env)
		if pr != nil {
			return fail(it.Pos, pr)
		}
		c.addRule(&pol.CreateDirs, Rule{Path: path, Origin: ly.origin(it.Pos)})
	}
	for _, it := range s.Moat.IgnoreFiles {
		if pr := checkIgnoreFileName(it.Value); pr != nil {
			return fail(it.Pos, pr)
		}
		pol.addIgnoreFile(IgnoreFile{Name: it.Value, Origin: ly.origin(it.Pos)})
	}

	if s.Moat.RequireNamespaces {
		pos, _ := keyPos(s, "moat.requireNamespaces")
		pol.RequireNamespaces.turnOn(ly.origin(pos))
	}
	if s.Moat.AllowUnscopedSignals {
		pos, _ := keyPos(s, "moat.allowUnscopedSignals")
		pol.AllowUnscopedSignals.turnOn(ly.origin(pos))
	}

	n, net := s.Network, &pol.Network
	net.AllowedDomains = append(net.AllowedDomains, wrapDomains(n.AllowedDomains, ly.wrap)...)
	net.DeniedDomains = append(net.DeniedDomains, wrapDomains(n.DeniedDomains, ly.wrap)...)
	net.AllowAllUnixSockets = net.AllowAllUnixSockets || n.AllowAllUnixSockets
	net.AllowLocalBinding = net.AllowLocalBinding || n.AllowLocalBinding
	net.StrictAllowlist = net.StrictAllowlist || n.StrictAllowlist
	net.AllowPlaintextInject = net.AllowPlaintextInject || s.Credentials.AllowPlaintextInject
	for k, v := range n.DeniedDomainReasons {
		if net.DeniedDomainReasons == nil {
			net.DeniedDomainReasons = map[string]string{}
		}
		net.DeniedDomainReasons[k] = v
	}
	for _, it := range n.AllowUnixSockets {
		if pr := checkPath(it.Value, listSocket); pr != nil {
			return fail(it.Pos, pr)
		}
		path, _, pr := resolvePath(it.Value, ly.env)
		if pr != nil {
			return fail(it.Pos, pr)
		}
		if !slices.Contains(net.AllowUnixSockets, path) {
			net.AllowUnixSockets = append(net.AllowUnixSockets, path)
		}
	}
	for k, v := range s.IgnoreViolations {
		if pol.IgnoreViolations == nil {
			pol.IgnoreViolations = map[string][]string{}
		}
		for _, path := range v {
			if !slices.Contains(pol.IgnoreViolations[k], path) {
				pol.IgnoreViolations[k] = append(pol.IgnoreViolations[k], path)
			}
		}
	}
	return nil
}

// flags adds the command line's rules, the strongest layer.
func (c *compiler) flags(pol *Policy, f Flags) error {
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
			if pr := checkPath(v, fl.l); pr != nil {
				return flagErr(fl.name, pr)
			}
			path, glob, pr := resolvePath(v, c.env)
			if pr != nil {
				return flagErr(fl.name, pr)
			}
			c.addRule(fl.dst, Rule{Path: path, Glob: glob, Origin: "flag " + fl.name})
		}
	}
	for _, fl := range []struct {
		name string
		vals []string
		star bool
		dst  *[]DomainRule
	}{
		{"--allow-net", f.AllowNet, false, &pol.Network.AllowedDomains},
		{"--deny-net", f.DenyNet, true, &pol.Network.DeniedDomains},
	} {
		for _, v := range fl.vals {
			r, pr := parseDomain(v, true, fl.star)
			if pr != nil {
				return flagErr(fl.name, pr)
			}
			r.Origin = "flag " + fl.name
			*fl.dst = append(*fl.dst, r)
		}
	}
	for _, v := range f.PassEnv {
		if pr := checkPassEnv(v); pr != nil {
			return flagErr("--pass-env", pr)
		}
		pol.addPass(EnvPass{Pattern: v, Origin: "flag --pass-env"})
	}
	if f.RequireNamespaces {
		pol.RequireNamespaces.turnOn("flag --no-fallback")
	}
	return nil
}

func flagErr(name string, pr *problem) error {
	return &Error{Key: name, Err: pr.err, HintText: pr.hint}
}

func (p *Policy) addPass(e EnvPass) {
	for _, have := range p.PassEnv {
		if have.Pattern == e.Pattern {
			return
		}
	}
	p.PassEnv = append(p.PassEnv, e)
}

func (p *Policy) addIgnoreFile(f IgnoreFile) {
	for _, have := range p.IgnoreFiles {
		if have.Name == f.Name {
			return
		}
	}
	p.IgnoreFiles = append(p.IgnoreFiles, f)
}

// wrapDomains copies rules with their origins rewritten for the layer.
func wrapDomains(rules []DomainRule, wrap func(string) string) []DomainRule {
	if rules == nil {
		return nil
	}
	out := make([]DomainRule, len(rules))
	for i, r := range rules {
		r.Origin = wrap(r.Origin)
		out[i] = r
	}
	return out
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

// checkIgnoreFileName validates a moat.ignoreFiles entry: a plain file name
// such as ".cursorignore", looked for in the workspace and every directory below.
// checkCreateDir accepts "~/" paths without globs or ".." elements: moat.createDirs
// makes directories only in the home directory.
func checkCreateDir(raw string) *problem {
	rest, ok := strings.CutPrefix(raw, "~/")
	if !ok || rest == "" || isGlob(rest) || strings.IndexByte(rest, 0) >= 0 || slices.Contains(strings.Split(rest, "/"), "..") {
		return bad(errf(ErrPath, "%q is not a directory in the home directory", raw),
			`write a "~/..." path without "*" or "..", such as "~/.config/opencode"`)
	}
	return nil
}

func checkIgnoreFileName(name string) *problem {
	if name == "" || name == "." || name == ".." || len(name) > 255 || strings.ContainsAny(name, "/\x00") {
		return bad(errf(ErrValue, "%q is not a file name", name),
			`write the name of an ignore file in gitignore syntax, such as ".cursorignore", ".geminiignore" or ".aiexclude"`)
	}
	return nil
}
