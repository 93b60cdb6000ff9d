package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moat-sandbox/moat/internal/ignorefile"
	"github.com/moat-sandbox/moat/policy"
)

// policyFlags are the flags that choose the policy; run, policy and explain
// share them.
type policyFlags struct {
	config   string
	profiles []string
	flags    policy.Flags
}

func (f *policyFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "settings `FILE` (JSON with comments; srt's settings file works as is); default $XDG_CONFIG_HOME/moat/config.jsonc")
	fs.Var((*listFlag)(&f.profiles), "profile", "apply profile `NAME` (repeatable): claude, codex, gemini, opencode, cursor, node, python, go, rust, registries, ... or one of yours")
	fs.Var((*listFlag)(&f.flags.AllowRead), "allow-read", "make `PATH` readable inside a denied area (repeatable)")
	fs.Var((*listFlag)(&f.flags.DenyRead), "deny-read", "hide `PATH` (repeatable; globs allowed)")
	fs.Var((*listFlag)(&f.flags.AllowWrite), "allow-write", "make `PATH` writable (repeatable)")
	fs.Var((*listFlag)(&f.flags.DenyWrite), "deny-write", "make `PATH` read-only, even inside a writable one (repeatable; globs allowed)")
	fs.Var((*listFlag)(&f.flags.AllowNet), "allow-net", "allow connections to `HOST[:PORT]` (repeatable; *.HOST for its subdomains)")
	fs.Var((*listFlag)(&f.flags.DenyNet), "deny-net", "deny connections to `HOST[:PORT]`, even if allowed elsewhere (repeatable)")
	fs.Var((*listFlag)(&f.flags.PassEnv), "pass-env", "keep the environment variable `NAME` (or PREFIX_*) that moat would scrub (repeatable)")
}

// loadedPolicy is a compiled policy and the files it came from.
type loadedPolicy struct {
	*policy.Policy
	userFound bool // the user config exists (or was given with --config)
}

// load reads the user config (--config, else the default path if it exists) and
// the project's .moat.jsonc, and compiles them with the profiles and flags.
func (f *policyFlags) load() (*loadedPolicy, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("current directory: %w", err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, runError{fmt.Errorf("home directory: %w", err), "set HOME"}
	}
	l := policy.Layers{Profiles: f.profiles, Flags: f.flags, UserPath: f.config}
	if l.UserPath == "" {
		l.UserPath = policy.DefaultUserConfigPath(os.Getenv, home)
		if _, err := os.Stat(l.UserPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("user config %s: %w", l.UserPath, err)
		} else if err == nil {
			f.config = l.UserPath
		}
	}
	if f.config != "" {
		if l.User, err = policy.LoadFile(f.config); err != nil {
			return nil, err
		}
	}
	if l.ProjectPath = findProjectFile(cwd); l.ProjectPath != "" {
		if l.Project, err = policy.LoadFile(l.ProjectPath); err != nil {
			return nil, err
		}
	}
	env := policy.Env{Cwd: cwd, Home: home}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(rt) {
		env.RuntimeDir = rt
	}
	pol, err := policy.CompileLayers(l, env)
	if err != nil {
		return nil, err
	}
	return &loadedPolicy{Policy: pol, userFound: l.User != nil}, nil
}

// findProjectFile returns the project's .moat.jsonc: the nearest one from the
// current directory up to the root of its git work tree (only the current
// directory outside one). "" when there is none. A directory of that name (a
// protected path's placeholder while a sandbox runs) does not count.
func findProjectFile(cwd string) string {
	root := ignorefile.WorkTreeRoot(cwd)
	for d := cwd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, policy.ProjectFileName)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
		if d == root || d == filepath.Dir(d) {
			return ""
		}
	}
}

// ignoreWalkLimit bounds the walk for ignore files in moat policy and explain.
const ignoreWalkLimit = 200000

// ignoredPaths returns the existing paths pol's ignore files match; the
// sandbox denies them for reading and writing. The ignore files are looked for
// from the root of the git work tree (else the current directory) down.
func ignoredPaths(pol *policy.Policy) ([]ignorefile.Match, error) {
	var names []string
	for _, f := range pol.IgnoreFiles {
		names = append(names, f.Name)
	}
	ms, _, err := ignorefile.Walk(ignorefile.WorkTreeRoot(pol.Cwd), names, ignoreWalkLimit)
	return ms, err
}

const policyUsage = "usage: moat policy [flags]"

func policyCmd(args []string, std stdio) error {
	fset := flag.NewFlagSet("moat policy", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	var pf policyFlags
	pf.register(fset)
	asJSON := fset.Bool("json", false, "print the policy as JSON")
	list := fset.Bool("profiles", false, "list the profiles (built in and yours) and exit")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(std.out, policyUsage)
			fmt.Fprintln(std.out, "\nPrints the policy 'moat run' would apply here, with the origin of every rule:")
			fmt.Fprintln(std.out, "the built-in default, the user config, profiles, the project's .moat.jsonc, flags.")
			fmt.Fprintln(std.out, "\nflags:")
			fset.SetOutput(std.out)
			fset.PrintDefaults()
			return nil
		}
		return usageError{fmt.Errorf("policy: %w", err), policyUsage}
	}
	if fset.NArg() > 0 {
		return usageError{fmt.Errorf("policy: unexpected argument %q", fset.Arg(0)), policyUsage}
	}
	lp, err := pf.load()
	if err != nil {
		return err
	}
	if *list {
		return writeProfiles(std.out, pf.config, *asJSON)
	}
	ignored, walkErr := ignoredPaths(lp.Policy)
	_, removed := lp.FilterEnv(os.Environ())
	if *asJSON {
		enc := json.NewEncoder(std.out)
		enc.SetIndent("", "  ")
		return enc.Encode(newPolicyView(lp, ignored, walkErr, removed))
	}
	writePolicy(std.out, lp, ignored, walkErr, removed)
	return nil
}

// display shortens a path for people: "." and "./x" under the current
// directory, "~/x" under the home directory.
func display(p *policy.Policy, path string) string {
	switch {
	case path == p.Cwd:
		return "."
	case strings.HasPrefix(path, p.Cwd+"/"):
		return "./" + path[len(p.Cwd)+1:]
	case path == p.Home:
		return "~"
	case strings.HasPrefix(path, p.Home+"/"):
		return "~/" + path[len(p.Home)+1:]
	}
	return path
}

func writePolicy(w io.Writer, lp *loadedPolicy, ignored []ignorefile.Match, walkErr error, removed []policy.EnvRemoval) {
	p := lp.Policy
	fmt.Fprintf(w, "moat policy for %s\n", p.Cwd)
	switch {
	case lp.userFound:
		fmt.Fprintf(w, "  user config   %s\n", p.UserConfig)
	default:
		fmt.Fprintf(w, "  user config   %s (none: the built-in default applies, with the current directory writable)\n", p.UserConfig)
	}
	switch {
	case p.ProjectFile == "":
		fmt.Fprintln(w, "  project file  none")
	case p.ProjectTrusted:
		fmt.Fprintf(w, "  project file  %s (trusted)\n", p.ProjectFile)
	default:
		fmt.Fprintf(w, "  project file  %s (not trusted: it may only tighten)\n", p.ProjectFile)
	}
	if len(p.Profiles) == 0 {
		fmt.Fprintln(w, "  profiles      none")
	}
	for i, pr := range p.Profiles {
		label := "  profiles      "
		if i > 0 {
			label = "                "
		}
		fmt.Fprintf(w, "%s%s (%s)\n", label, pr.Name, pr.Origin)
	}

	rules := func(title string, rs []policy.Rule) {
		fmt.Fprintf(w, "\n%s\n", title)
		if len(rs) == 0 {
			fmt.Fprintln(w, "  (none)")
		}
		for _, r := range rs {
			fmt.Fprintf(w, "  %-34s %s\n", display(p, r.Path), r.Origin)
		}
	}
	rules("reads denied (the deepest rule decides; on the same path deny wins)", p.DenyRead)
	rules("reads re-allowed inside denied areas", p.AllowRead)
	rules("writable (everything else is read-only)", p.AllowWrite)
	rules("writes denied, even inside writable paths", p.DenyWrite)

	fmt.Fprintf(w, "\nprotected: read-only wherever the rules make them writable (workspace entries at each writable path)\n")
	for _, e := range p.Protected {
		name := e.Name
		if e.Where == policy.WhereHome {
			name = "~/" + name
		}
		fmt.Fprintf(w, "  %-34s %s\n", name, e.Reason)
	}
	for _, o := range p.Unprotected {
		fmt.Fprintf(w, "  %-34s unprotected by %s\n", o.Name, o.Origin)
	}
	for _, o := range p.AllowedSecrets {
		fmt.Fprintf(w, "\nsecret table entry dropped: %s (%s)", o.Name, o.Origin)
	}
	if len(p.AllowedSecrets) > 0 {
		fmt.Fprintln(w)
	}

	if len(p.CreateDirs) > 0 {
		fmt.Fprintln(w, "\ndirectories made (empty) when missing, before the sandbox starts; writable ones of profiles are made too")
		for _, r := range p.CreateDirs {
			fmt.Fprintf(w, "  %-34s %s\n", display(p, r.Path), r.Origin)
		}
	}

	fmt.Fprintln(w, "\nignore files: the paths they match when the sandbox starts are unreadable and unwritable")
	for _, f := range p.IgnoreFiles {
		fmt.Fprintf(w, "  %-34s %s\n", f.Name, f.Origin)
	}
	for _, m := range ignored {
		fmt.Fprintf(w, "  matches %-26s %s\n", display(p, m.Path), m.Origin())
	}
	if walkErr != nil {
		fmt.Fprintf(w, "  warning: %v\n", walkErr)
	}

	fmt.Fprintln(w, "\nenvironment")
	var pats []string
	for _, s := range policy.EnvScrubTable() {
		pats = append(pats, s.Pattern)
	}
	fmt.Fprintf(w, "  scrubbed unless passed: %s\n", strings.Join(pats, " "))
	for _, e := range p.PassEnv {
		fmt.Fprintf(w, "  pass  %-28s %s\n", e.Pattern, e.Origin)
	}
	for _, e := range p.EnvVars {
		fmt.Fprintf(w, "  %-5s %-28s %s\n", e.Mode, e.Name, e.Origin)
	}
	if len(removed) > 0 {
		var names []string
		for _, r := range removed {
			names = append(names, r.Name)
		}
		fmt.Fprintf(w, "  in this environment, removed or masked: %s\n", strings.Join(names, " "))
	}

	n := p.Network
	fmt.Fprintln(w, "\nnetwork: deny rules first, then allow rules; nothing else is reachable")
	if len(n.AllowedDomains)+len(n.DeniedDomains) == 0 {
		fmt.Fprintln(w, "  (no hosts allowed)")
	}
	for _, d := range n.DeniedDomains {
		fmt.Fprintf(w, "  deny  %-28s %s\n", d.Pattern, d.Origin)
	}
	for _, d := range n.AllowedDomains {
		fmt.Fprintf(w, "  allow %-28s %s\n", d.Pattern, d.Origin)
	}
	for _, s := range n.AllowUnixSockets {
		fmt.Fprintf(w, "  unix socket %s\n", s)
	}
	for _, b := range []struct {
		on   bool
		what string
	}{{n.AllowAllUnixSockets, "every unix socket allowed"}, {n.AllowLocalBinding, "listening on local ports allowed"},
		{n.AllowPlaintextInject, "masked credentials may be injected over plain HTTP"}} {
		if b.on {
			fmt.Fprintf(w, "  %s\n", b.what)
		}
	}

	fmt.Fprintln(w, "\nhosts without user namespaces (README \"Hosts without user namespaces\")")
	if rn := p.RequireNamespaces; rn.On {
		fmt.Fprintf(w, "  direct mode forbidden: moat run fails instead (%s)\n", rn.Origin)
	} else {
		fmt.Fprintln(w, "  direct mode allowed: Landlock, seccomp and supervision, without namespaces")
	}
	if us := p.AllowUnscopedSignals; us.On {
		fmt.Fprintf(w, "  unscoped signals accepted on kernels with Landlock ABI < 6 (%s)\n", us.Origin)
	}
}

// writeProfiles lists the built-in profiles and the user's.
func writeProfiles(w io.Writer, config string, asJSON bool) error {
	list := policy.BuiltinProfiles()
	if config != "" {
		s, err := policy.LoadFile(config)
		if err != nil {
			return err
		}
		for _, prof := range s.Moat.Profiles {
			info := policy.ProfileInfo{Name: prof.Name, Description: prof.Description,
				Origin: fmt.Sprintf("%s:%d", config, prof.Line)}
			for _, e := range prof.Extends {
				info.Extends = append(info.Extends, e.Value)
			}
			list = append(list, info)
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Builtin && !list[j].Builtin })
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	for _, info := range list {
		extra := ""
		if len(info.Extends) > 0 {
			extra = " (extends " + strings.Join(info.Extends, ", ") + ")"
		}
		where := "built in"
		if !info.Builtin {
			where = info.Origin
		}
		fmt.Fprintf(w, "%-16s %s%s  [%s]\n", info.Name, info.Description, extra, where)
	}
	return nil
}

// policyView is the JSON form of moat policy's output.
type policyView struct {
	Cwd            string              `json:"cwd"`
	Home           string              `json:"home"`
	UserConfig     string              `json:"userConfig"`
	UserFound      bool                `json:"userConfigFound"`
	ProjectFile    string              `json:"projectFile,omitempty"`
	ProjectTrusted bool                `json:"projectTrusted"`
	Profiles       []profileView       `json:"profiles"`
	DenyRead       []ruleView          `json:"denyRead"`
	AllowRead      []ruleView          `json:"allowRead"`
	AllowWrite     []ruleView          `json:"allowWrite"`
	DenyWrite      []ruleView          `json:"denyWrite"`
	Protected      []protectedView     `json:"protected"`
	ProtectedDepth int                 `json:"protectedDepth"`
	Unprotected    []optView           `json:"unprotected"`
	AllowedSecrets []optView           `json:"allowedSecrets"`
	IgnoreFiles    []optView           `json:"ignoreFiles"`
	CreateDirs     []ruleView          `json:"createDirs"`
	Ignored        []ruleView          `json:"ignored"`
	IgnoreWarning  string              `json:"ignoreWarning,omitempty"`
	EnvScrub       []envScrubView      `json:"envScrub"`
	PassEnv        []optView           `json:"passEnv"`
	EnvVars        []envRuleView       `json:"envVars"`
	EnvRemoved     []envRemovalView    `json:"envRemoved"`
	AllowedDomains []ruleView          `json:"allowedDomains"`
	DeniedDomains  []ruleView          `json:"deniedDomains"`
	DeniedReasons  map[string]string   `json:"deniedDomainReasons,omitempty"`
	UnixSockets    []string            `json:"allowUnixSockets"`
	Switches       map[string]bool     `json:"switches"`
	IgnoreViol     map[string][]string `json:"ignoreViolations,omitempty"`
}

type ruleView struct {
	Path   string `json:"path"`
	Glob   bool   `json:"glob,omitempty"`
	Origin string `json:"origin"`
}

type profileView struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Origin      string `json:"origin"`
}

type protectedView struct {
	Name   string `json:"name"`
	Where  string `json:"where"`
	Dir    bool   `json:"dir"`
	Reason string `json:"reason"`
}

type optView struct {
	Name   string `json:"name"`
	Origin string `json:"origin"`
}

type envScrubView struct {
	Pattern string `json:"pattern"`
	Reason  string `json:"reason"`
}

type envRuleView struct {
	Name        string   `json:"name"`
	Mode        string   `json:"mode"`
	Origin      string   `json:"origin"`
	InjectHosts []string `json:"injectHosts,omitempty"`
}

type envRemovalView struct {
	Name   string `json:"name"`
	Masked bool   `json:"masked,omitempty"`
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	Origin string `json:"origin"`
}

func newPolicyView(lp *loadedPolicy, ignored []ignorefile.Match, walkErr error, removed []policy.EnvRemoval) policyView {
	p := lp.Policy
	rules := func(rs []policy.Rule) []ruleView {
		out := []ruleView{}
		for _, r := range rs {
			out = append(out, ruleView{r.Path, r.Glob, r.Origin})
		}
		return out
	}
	domains := func(ds []policy.DomainRule) []ruleView {
		out := []ruleView{}
		for _, d := range ds {
			out = append(out, ruleView{Path: d.Pattern, Origin: d.Origin})
		}
		return out
	}
	opts := func(list []policy.OptOut) []optView {
		out := []optView{}
		for _, o := range list {
			out = append(out, optView{o.Name, o.Origin})
		}
		return out
	}
	v := policyView{
		Cwd: p.Cwd, Home: p.Home, UserConfig: p.UserConfig, UserFound: lp.userFound,
		ProjectFile: p.ProjectFile, ProjectTrusted: p.ProjectTrusted,
		Profiles: []profileView{}, DenyRead: rules(p.DenyRead), AllowRead: rules(p.AllowRead),
		AllowWrite: rules(p.AllowWrite), DenyWrite: rules(p.DenyWrite), CreateDirs: rules(p.CreateDirs), Protected: []protectedView{},
		ProtectedDepth: p.ProtectedDepth, Unprotected: opts(p.Unprotected), AllowedSecrets: opts(p.AllowedSecrets),
		IgnoreFiles: []optView{}, Ignored: []ruleView{}, EnvScrub: []envScrubView{}, PassEnv: []optView{},
		EnvVars: []envRuleView{}, EnvRemoved: []envRemovalView{},
		AllowedDomains: domains(p.Network.AllowedDomains), DeniedDomains: domains(p.Network.DeniedDomains),
		DeniedReasons: p.Network.DeniedDomainReasons, UnixSockets: append([]string{}, p.Network.AllowUnixSockets...),
		Switches: map[string]bool{
			"allowAllUnixSockets":  p.Network.AllowAllUnixSockets,
			"allowLocalBinding":    p.Network.AllowLocalBinding,
			"allowPlaintextInject": p.Network.AllowPlaintextInject,
			"requireNamespaces":    p.RequireNamespaces.On,
			"allowUnscopedSignals": p.AllowUnscopedSignals.On,
		},
		IgnoreViol: p.IgnoreViolations,
	}
	for _, pr := range p.Profiles {
		v.Profiles = append(v.Profiles, profileView{pr.Name, pr.Description, pr.Origin})
	}
	for _, e := range p.Protected {
		v.Protected = append(v.Protected, protectedView{e.Name, e.Where, e.Dir, e.Reason})
	}
	for _, f := range p.IgnoreFiles {
		v.IgnoreFiles = append(v.IgnoreFiles, optView{f.Name, f.Origin})
	}
	for _, m := range ignored {
		v.Ignored = append(v.Ignored, ruleView{Path: m.Path, Origin: m.Origin()})
	}
	if walkErr != nil {
		v.IgnoreWarning = walkErr.Error()
	}
	for _, s := range policy.EnvScrubTable() {
		v.EnvScrub = append(v.EnvScrub, envScrubView{s.Pattern, s.Reason})
	}
	for _, e := range p.PassEnv {
		v.PassEnv = append(v.PassEnv, optView{e.Pattern, e.Origin})
	}
	for _, e := range p.EnvVars {
		ev := envRuleView{Name: e.Name, Mode: e.Mode, Origin: e.Origin}
		for _, h := range e.InjectHosts {
			ev.InjectHosts = append(ev.InjectHosts, h.Pattern)
		}
		v.EnvVars = append(v.EnvVars, ev)
	}
	for _, r := range removed {
		v.EnvRemoved = append(v.EnvRemoved, envRemovalView{r.Name, r.Masked, r.Rule, r.Reason, r.Origin})
	}
	return v
}
