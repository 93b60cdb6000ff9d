package policy

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
)

// builtinFS holds the built-in profiles, one settings-schema file each, with
// a comment giving the reason for every entry.
//
//go:embed profiles/*.jsonc
var builtinFS embed.FS

var builtins struct {
	once sync.Once
	m    map[string]*Profile
	err  error
}

// builtinProfiles parses the embedded profiles once. An error is a bug in moat.
func builtinProfiles() (map[string]*Profile, error) {
	builtins.once.Do(func() {
		builtins.m, builtins.err = loadBuiltins(builtinFS)
	})
	return builtins.m, builtins.err
}

func loadBuiltins(fsys fs.FS) (map[string]*Profile, error) {
	files, err := fs.Glob(fsys, "profiles/*.jsonc")
	if err != nil {
		return nil, err
	}
	m := map[string]*Profile{}
	var list []*Profile
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(path.Base(f), ".jsonc")
		prof, err := parseProfile(f, name, data)
		if err != nil {
			return nil, fmt.Errorf("bug: built-in profile %s: %w", name, err)
		}
		m[name] = prof
		list = append(list, prof)
	}
	if err := checkProfileGraphWith(list, nil); err != nil {
		return nil, fmt.Errorf("bug: built-in profiles: %w", err)
	}
	return m, nil
}

// builtinsWhere lists, sorted, the names of the built-in profiles for which
// keep is true.
func builtinsWhere(keep func(*Profile) bool) []string {
	m, err := builtinProfiles()
	if err != nil {
		return nil
	}
	var names []string
	for name, p := range m {
		if keep(p) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// ProfileInfo describes a profile for listings.
type ProfileInfo struct {
	Name        string
	Description string
	Extends     []string
	Commands    []string // the programs it is for
	Builtin     bool
	Origin      string // where it is defined: "profiles/claude.jsonc" or "config.jsonc:12"
}

// BuiltinProfiles lists the built-in profiles by name.
func BuiltinProfiles() []ProfileInfo {
	m, err := builtinProfiles()
	if err != nil {
		panic(err) // the tests load every built-in profile
	}
	var out []ProfileInfo
	for _, p := range m {
		out = append(out, profileInfo(p))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func profileInfo(p *Profile) ProfileInfo {
	info := ProfileInfo{Name: p.Name, Description: p.Description, Builtin: p.Builtin, Origin: p.Settings.File}
	if !p.Builtin {
		info.Origin = fmt.Sprintf("%s:%d", p.Settings.File, p.Line)
	}
	for _, e := range p.Extends {
		info.Extends = append(info.Extends, e.Value)
	}
	for _, c := range p.Commands {
		info.Commands = append(info.Commands, c.Value)
	}
	return info
}

// ProfileFor returns the built-in profile whose commands include name (a program's
// file name, "go"), for the hint after a failed run.
func ProfileFor(name string) (ProfileInfo, bool) {
	for _, info := range BuiltinProfiles() {
		if slices.Contains(info.Commands, name) {
			return info, true
		}
	}
	return ProfileInfo{}, false
}

// checkProfileName validates the spelling of a profile name.
func checkProfileName(name string) *problem {
	ok := name != "" && len(name) <= 64 && name[0] >= 'a' && name[0] <= 'z'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	if !ok {
		return bad(errf(ErrProfile, "%q is not a profile name", name),
			"profile names start with a lower-case letter and contain only a-z, 0-9, '-' and '_' (at most 64)")
	}
	return nil
}

// checkProfileGraph checks a settings file's own profiles: no clash with a
// built-in name, every extends names a known profile, and no cycles.
func checkProfileGraph(user []*Profile) *Error {
	b, err := builtinProfiles()
	if err != nil {
		return &Error{Err: errf(ErrProfile, "%v", err)}
	}
	return checkProfileGraphWith(user, b)
}

func checkProfileGraphWith(list []*Profile, builtin map[string]*Profile) *Error {
	known := map[string]*Profile{}
	for name, p := range builtin {
		known[name] = p
	}
	for _, p := range list {
		if b, clash := builtin[p.Name]; clash && b != p {
			return &Error{Line: p.Line, Col: p.Col, Key: p.Key,
				Err:      errf(ErrProfile, "profile %q is built in; a user profile cannot replace it", p.Name),
				HintText: fmt.Sprintf("give yours another name and write \"extends\": [%q] to build on the built-in one", p.Name)}
		}
		known[p.Name] = p
	}
	for _, p := range list {
		for _, e := range p.Extends {
			if known[e.Value] == nil {
				return &Error{Line: e.Line, Col: e.Col, Key: e.Key,
					Err: errf(ErrProfile, "profile %q extends %q, which is not a profile", p.Name, e.Value), HintText: profileHint(e.Value, known)}
			}
		}
	}
	// Depth-first search for a cycle; report the extends entry that closes it.
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var visit func(p *Profile, path []string) *Error
	visit = func(p *Profile, path []string) *Error {
		state[p.Name] = active
		path = append(path, p.Name)
		for _, e := range p.Extends {
			next := known[e.Value]
			switch state[next.Name] {
			case active:
				return &Error{Line: e.Line, Col: e.Col, Key: e.Key,
					Err:      errf(ErrProfile, "profiles extend each other in a cycle: %s -> %s", strings.Join(path, " -> "), next.Name),
					HintText: "remove one of these extends entries; a profile cannot build on itself"}
			case unseen:
				if err := visit(next, path); err != nil {
					return err
				}
			}
		}
		state[p.Name] = done
		return nil
	}
	for _, p := range list {
		if state[p.Name] == unseen {
			if err := visit(p, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func profileHint(name string, known map[string]*Profile) string {
	var names []string
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names)
	if s := suggest(name, names); s != "" {
		return fmt.Sprintf("did you mean %q? profiles: %s", s, strings.Join(names, ", "))
	}
	return "profiles: " + strings.Join(names, ", ") + "; define your own under \"moat\": {\"profiles\": {...}} in the user config"
}

// profiles resolves the profiles asked for, weakest first: the user config's
// moat.defaultProfiles, --profile, then a trusted project's defaultProfiles.
// Each profile's extends come before it; a profile applies once.
func (c *compiler) profiles(l Layers, projTrusted bool) ([]layer, []AppliedProfile, error) {
	type request struct {
		name, origin string
		fail         func(err error, hint string) error
	}
	var reqs []request
	fromFile := func(s *Settings) {
		for _, it := range s.Moat.DefaultProfiles {
			it := it
			reqs = append(reqs, request{it.Value, fileLayer(s, c.env).origin(it.Pos), func(err error, hint string) error {
				return &Error{File: s.File, Line: it.Line, Col: it.Col, Key: it.Key, Err: err, HintText: hint}
			}})
		}
	}
	if l.User != nil {
		fromFile(l.User)
	}
	for _, name := range l.Profiles {
		reqs = append(reqs, request{name, "flag --profile", func(err error, hint string) error {
			return &Error{Key: "--profile", Err: err, HintText: hint}
		}})
	}
	if l.Project != nil && projTrusted {
		fromFile(l.Project)
	}
	if len(reqs) == 0 {
		return nil, nil, nil // nothing asks for a profile: don't parse the built-in ones
	}
	builtin, err := builtinProfiles()
	if err != nil {
		return nil, nil, &Error{Err: errf(ErrProfile, "%v", err), HintText: "this is a bug in moat"}
	}
	known := map[string]*Profile{}
	for name, p := range builtin {
		known[name] = p
	}
	if l.User != nil {
		for _, p := range l.User.Moat.Profiles {
			known[p.Name] = p
		}
	}

	var layers []layer
	var applied []AppliedProfile
	state := map[string]int{} // 1: being applied, 2: applied
	var apply func(p *Profile, origin string, fail func(error, string) error) error
	apply = func(p *Profile, origin string, fail func(error, string) error) error {
		switch state[p.Name] {
		case 1:
			return fail(errf(ErrProfile, "profile %q extends itself through a cycle", p.Name),
				"remove one of the extends entries that lead back to it")
		case 2:
			return nil
		}
		state[p.Name] = 1
		for _, e := range p.Extends {
			next := known[e.Value]
			if next == nil {
				return fail(errf(ErrProfile, "profile %q extends %q, which is not a profile", p.Name, e.Value), profileHint(e.Value, known))
			}
			if err := apply(next, "extended by "+p.Name, fail); err != nil {
				return err
			}
		}
		state[p.Name] = 2
		layers = append(layers, profileLayer(p, c.env))
		applied = append(applied, AppliedProfile{Name: p.Name, Description: p.Description, Origin: origin})
		return nil
	}
	for _, r := range reqs {
		if pr := checkProfileName(r.name); pr != nil {
			return nil, nil, r.fail(pr.err, pr.hint)
		}
		p := known[r.name]
		if p == nil {
			return nil, nil, r.fail(errf(ErrProfile, "no profile named %q", r.name), profileHint(r.name, known))
		}
		if err := apply(p, r.origin, r.fail); err != nil {
			return nil, nil, err
		}
	}
	return layers, applied, nil
}
