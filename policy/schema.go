package policy

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/tailscale/hujson"
)

// The field lists below are the schema: srt's keys, then moat's. Keys that moat
// cannot honour are in srt.go's unsupportedKeys.

func (p *parser) topFields() []field {
	if p.prof != nil {
		return p.profileFields()
	}
	return append(p.ruleFields(),
		field{"ignoreViolations", p.ignoreViolations},
		field{"mandatoryDenySearchDepth", func(n node) (err error) {
			p.s.MandatoryDenySearchDepth, err = p.integer(n, 1, 10)
			return err
		}},
		field{"git", func(n node) error {
			return p.object(n, []field{p.unsupported("safeDirectories", "git.safeDirectories")})
		}},
		p.unsupported("enableWeakerNestedSandbox", "enableWeakerNestedSandbox"),
		p.unsupported("enableWeakerNetworkIsolation", "enableWeakerNetworkIsolation"),
		p.unsupported("allowAppleEvents", "allowAppleEvents"),
		p.unsupported("allowPty", "allowPty"),
		p.unsupported("ripgrep", "ripgrep"),
		p.unsupported("seccomp", "seccomp"),
		p.unsupported("bwrapPath", "bwrapPath"),
		p.unsupported("socatPath", "socatPath"),
		p.unsupported("javaAgentJarPath", "javaAgentJarPath"),
		p.unsupported("windows", "windows"),
		field{"moat", func(n node) error { return p.object(n, p.moatFields()) }},
	)
}

// ruleFields are the top-level keys a profile shares with a settings file.
func (p *parser) ruleFields() []field {
	return []field{
		{"filesystem", func(n node) error { return p.object(n, p.filesystemFields()) }},
		{"network", func(n node) error { return p.object(n, p.networkFields()) }},
		{"credentials", func(n node) error { return p.object(n, p.credentialFields()) }},
	}
}

func (p *parser) filesystemFields() []field {
	fs := &p.s.Filesystem
	list := func(name string, dst *[]Item, l pathList) field {
		return field{name, func(n node) (err error) {
			*dst, err = p.paths(n, l)
			return err
		}}
	}
	return []field{
		list("denyRead", &fs.DenyRead, listDenyRead),
		list("allowRead", &fs.AllowRead, listAllowRead),
		list("allowWrite", &fs.AllowWrite, listAllowWrite),
		list("denyWrite", &fs.DenyWrite, listDenyWrite),
		p.unsupported("disabled", "filesystem.disabled"),
		p.unsupported("allowGitConfig", "filesystem.allowGitConfig"),
	}
}

func (p *parser) networkFields() []field {
	ns := &p.s.Network
	flag := func(name string, dst *bool) field {
		return field{name, func(n node) (err error) {
			*dst, err = p.boolean(n)
			return err
		}}
	}
	return []field{
		{"allowedDomains", func(n node) (err error) {
			ns.AllowedDomains, err = p.domains(n, true, false)
			return err
		}},
		{"deniedDomains", func(n node) (err error) {
			ns.DeniedDomains, err = p.domains(n, true, true)
			return err
		}},
		{"deniedDomainReasons", p.deniedDomainReasons},
		{"allowUnixSockets", func(n node) (err error) {
			ns.AllowUnixSockets, err = p.paths(n, listSocket)
			return err
		}},
		flag("allowAllUnixSockets", &ns.AllowAllUnixSockets),
		flag("allowLocalBinding", &ns.AllowLocalBinding),
		flag("strictAllowlist", &ns.StrictAllowlist),
		p.unsupported("httpProxyPort", "network.httpProxyPort"),
		p.unsupported("socksProxyPort", "network.socksProxyPort"),
		p.unsupported("mitmProxy", "network.mitmProxy"),
		p.unsupported("parentProxy", "network.parentProxy"),
		p.unsupported("tlsTerminate", "network.tlsTerminate"),
		p.unsupported("filterRequest", "network.filterRequest"),
		p.unsupported("allowMachLookup", "network.allowMachLookup"),
	}
}

func (p *parser) credentialFields() []field {
	cs := &p.s.Credentials
	return []field{
		{"envVars", func(n node) error {
			return p.array(n, `[{"name": "GITHUB_TOKEN", "mode": "deny"}]`, p.envVar)
		}},
		{"files", func(n node) error {
			return p.array(n, `[{"path": "~/.netrc", "mode": "deny"}]`, p.credFile)
		}},
		{"allowPlaintextInject", func(n node) (err error) {
			cs.AllowPlaintextInject, err = p.boolean(n)
			return err
		}},
		p.unsupported("awsPairs", "credentials.awsPairs"),
		p.unsupported("sigv4", "credentials.sigv4"),
	}
}

// moatFields are the keys of the "moat" object. A profile has only the ones
// that shape rules; profiles, defaultProfiles and trustedProjects belong to
// the user config.
func (p *parser) moatFields() []field {
	m := &p.s.Moat
	checked := func(name string, dst *[]Item, example string, check func(string) *problem) field {
		return field{name, func(n node) error {
			items, err := p.strings(n, example)
			if err != nil {
				return err
			}
			for _, it := range items {
				if pr := check(it.Value); pr != nil {
					return p.failAt(it.Pos, pr)
				}
			}
			*dst = items
			return nil
		}}
	}
	fields := []field{
		checked("unprotect", &m.Unprotect, `[".vscode", "~/.bashrc"]`, checkUnprotect),
		checked("allowSecrets", &m.AllowSecrets, `["~/.npmrc", ".env"]`, checkSecretName),
		checked("passEnv", &m.PassEnv, `["GH_TOKEN", "MYAPP_*"]`, checkPassEnv),
		checked("ignoreFiles", &m.IgnoreFiles, `[".cursorignore", ".aiexclude"]`, checkIgnoreFileName),
		checked("createDirs", &m.CreateDirs, `["~/.config/opencode"]`, checkCreateDir),
	}
	if p.prof != nil {
		return fields
	}
	return append(fields,
		checked("defaultProfiles", &m.DefaultProfiles, `["claude", "node"]`, checkProfileName),
		field{"profiles", p.profiles},
		field{"trustedProjects", func(n node) error {
			return p.array(n, `[{"path": "/home/me/proj/.moat.jsonc", "sha256": "..."}]`, p.trustedProject)
		}},
		field{"requireNamespaces", func(n node) (err error) {
			m.RequireNamespaces, err = p.boolean(n)
			return err
		}},
		field{"allowUnscopedSignals", func(n node) (err error) {
			m.AllowUnscopedSignals, err = p.boolean(n)
			return err
		}},
	)
}

// profileFields are the top-level keys of a profile.
func (p *parser) profileFields() []field {
	return append(p.ruleFields(),
		field{"description", func(n node) (err error) {
			p.prof.Description, err = p.str(n)
			return err
		}},
		field{"extends", func(n node) error {
			items, err := p.strings(n, `["claude", "node"]`)
			if err != nil {
				return err
			}
			for _, it := range items {
				if pr := checkProfileName(it.Value); pr != nil {
					return p.failAt(it.Pos, pr)
				}
			}
			p.prof.Extends = items
			return nil
		}},
		field{"commands", func(n node) error {
			items, err := p.strings(n, `["go", "gofmt"]`)
			if err != nil {
				return err
			}
			for _, it := range items {
				if pr := checkIgnoreFileName(it.Value); pr != nil {
					return p.failAt(it.Pos, bad(errf(ErrValue, "%q is not a command name", it.Value), `write a program's file name, such as "go" or "npm"`))
				}
			}
			p.prof.Commands = items
			return nil
		}},
		field{"moat", func(n node) error { return p.object(n, p.moatFields()) }},
	)
}

// profiles parses "moat": {"profiles": {NAME: PROFILE, ...}}: each profile in the
// profile schema, its keys under moat.profiles.NAME.
func (p *parser) profiles(n node) error {
	obj, ok := n.v.Value.(*hujson.Object)
	if !ok {
		return p.typeErr(n, "an object", `{"mywork": {"extends": ["claude", "node"]}}`)
	}
	seen := map[string]bool{}
	for i := range obj.Members {
		m := &obj.Members[i]
		name, err := p.str(node{v: &m.Name, key: n.key})
		if err != nil {
			return err
		}
		kn := node{v: &m.Name, key: joinKey(n.key, name)}
		if pr := checkProfileName(name); pr != nil {
			return p.failp(kn, pr)
		}
		if seen[name] {
			return p.fail(kn, errf(ErrDuplicate, "profile %q is defined twice", name), "merge the two definitions")
		}
		seen[name] = true
		prof := &Profile{Name: name, Pos: p.pos(kn)}
		sub := &parser{file: p.file, data: p.data, s: &Settings{File: p.file, SHA256: p.s.SHA256}, prof: prof}
		if err := sub.object(node{v: &m.Value, key: kn.key}, sub.profileFields()); err != nil {
			return err
		}
		prof.Settings = sub.s
		p.later = append(p.later, sub.later...)
		p.s.Moat.Profiles = append(p.s.Moat.Profiles, prof)
	}
	p.later = append(p.later, func() error {
		if err := checkProfileGraph(p.s.Moat.Profiles); err != nil {
			err.File = p.file
			return err
		}
		return nil
	})
	return nil
}

func (p *parser) trustedProject(i int, n node) error {
	tp := TrustedProject{Pos: p.pos(n)}
	fields := []field{
		{"path", func(n node) error {
			s, err := p.str(n)
			if err != nil {
				return err
			}
			if !filepath.IsAbs(s) || strings.IndexByte(s, 0) >= 0 {
				return p.fail(n, errf(ErrPath, "trusted project path %q is not absolute", s),
					"write the absolute path of the project's .moat.jsonc, as 'moat policy' prints it")
			}
			tp.Path = filepath.Clean(s)
			return nil
		}},
		{"sha256", func(n node) error {
			s, err := p.str(n)
			if err != nil {
				return err
			}
			s = strings.ToLower(s)
			if _, herr := hex.DecodeString(s); herr != nil || len(s) != 64 {
				return p.fail(n, errf(ErrValue, "%q is not a SHA-256 in hex (64 hex digits)", s),
					"copy the hash from moat's error message, or run: sha256sum .moat.jsonc")
			}
			tp.SHA256 = s
			return nil
		}},
	}
	if err := p.object(n, fields); err != nil {
		return err
	}
	if err := p.required(n, "path", "sha256"); err != nil {
		return err
	}
	p.s.Moat.TrustedProjects = append(p.s.Moat.TrustedProjects, tp)
	return nil
}

// checkUnprotect checks that name is a protected table entry: "NAME" for a
// workspace entry, "~/NAME" for a home entry.
func checkUnprotect(name string) *problem {
	where, n := WhereWorkspace, name
	if rest, ok := strings.CutPrefix(name, "~/"); ok {
		where, n = WhereHome, rest
	}
	var names []string
	for _, e := range protectedTable {
		if e.Name == n && e.Where == where {
			return nil
		}
		names = append(names, unprotectName(e))
	}
	for _, e := range protectedTable {
		if e.Name == strings.TrimSuffix(strings.TrimPrefix(n, "./"), "/") {
			return bad(errf(ErrValue, "%q is not a protected path name", name), fmt.Sprintf("did you mean %q?", unprotectName(e)))
		}
	}
	return bad(errf(ErrValue, "%q is not a protected path name", name),
		"write a name from the table exactly, workspace entries as \".vscode\" and home entries as \"~/.bashrc\":\n"+strings.Join(names, " "))
}

func unprotectName(e Protected) string {
	if e.Where == WhereHome {
		return "~/" + e.Name
	}
	return e.Name
}

func envNameOK(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (p *parser) mode(n node) (string, error) {
	m, err := p.str(n)
	if err != nil {
		return "", err
	}
	if m != ModeDeny && m != ModeMask {
		return "", p.fail(n, errf(ErrValue, "mode %q is neither \"deny\" nor \"mask\"", m),
			`"deny" removes it from the sandbox; "mask" replaces its value with a placeholder`)
	}
	return m, nil
}

// required checks that an array entry object has the keys it must have.
func (p *parser) required(n node, keys ...string) error {
	obj, ok := n.v.Value.(*hujson.Object)
	if !ok {
		return nil // the walk reports the type
	}
	for _, k := range keys {
		found := false
		for _, m := range obj.Members {
			if lit, ok := m.Name.Value.(hujson.Literal); ok && lit.String() == k {
				found = true
			}
		}
		if !found {
			return p.fail(n, errf(ErrValue, "missing required key %q", k),
				fmt.Sprintf("every entry needs %s", strings.Join(keys, " and ")))
		}
	}
	return nil
}

func (p *parser) envVar(i int, n node) error {
	ev := EnvVarSetting{Pos: p.pos(n)}
	var injectNode *node
	fields := []field{
		{"name", func(n node) error {
			s, err := p.str(n)
			if err != nil {
				return err
			}
			if !envNameOK(s) {
				return p.fail(n, errf(ErrValue, "%q is not an environment variable name", s),
					"names start with a letter or '_' and contain only letters, digits and '_'")
			}
			ev.Name = s
			return nil
		}},
		{"mode", func(n node) (err error) {
			ev.Mode, err = p.mode(n)
			return err
		}},
		{"injectHosts", func(n node) (err error) {
			injectNode = &n
			ev.InjectHosts, err = p.domains(n, false, false)
			return err
		}},
		p.unsupported("extract", "credentials.envVars[].extract"),
		p.unsupported("onExtractNoMatch", "credentials.envVars[].onExtractNoMatch"),
		p.unsupported("decode", "credentials.envVars[].decode"),
		p.unsupported("maskClaims", "credentials.envVars[].maskClaims"),
	}
	if err := p.object(n, fields); err != nil {
		return err
	}
	if err := p.required(n, "name", "mode"); err != nil {
		return err
	}
	if injectNode != nil {
		switch {
		case ev.Mode != ModeMask:
			return p.fail(*injectNode, errf(ErrConflict, "injectHosts applies only to mode \"mask\""),
				"remove injectHosts, or set mode to \"mask\"")
		case len(ev.InjectHosts) == 0:
			return p.fail(*injectNode, errf(ErrConflict, "injectHosts is empty, so the credential would never be injected"),
				"list the hosts that should receive it, or remove injectHosts to mean every allowed domain")
		}
		arr := injectNode.v.Value.(*hujson.Array)
		hosts, key := ev.InjectHosts, injectNode.key
		p.later = append(p.later, func() error {
			allowed := p.allowedSet()
			for i, h := range hosts {
				if !allowed.covers(h) {
					return p.fail(node{v: &arr.Elements[i], key: fmt.Sprintf("%s[%d]", key, i)},
						errf(ErrConflict, "%q is not covered by network.allowedDomains, so the credential could never reach it", h.Pattern),
						"add it (or a wildcard covering it) to network.allowedDomains, or remove it here")
				}
			}
			return nil
		})
	}
	if j, dup := p.envIndex[ev.Name]; dup {
		prev := p.s.Credentials.EnvVars[j]
		if prev.Mode != ev.Mode || !sameDomains(prev.InjectHosts, ev.InjectHosts) {
			return p.fail(n, errf(ErrConflict, "%q is also listed at %s with different settings", ev.Name, prev.Key),
				"keep one entry per variable")
		}
	} else {
		if p.envIndex == nil {
			p.envIndex = map[string]int{}
		}
		p.envIndex[ev.Name] = len(p.s.Credentials.EnvVars)
	}
	p.s.Credentials.EnvVars = append(p.s.Credentials.EnvVars, ev)
	return nil
}

func sameDomains(a, b []DomainRule) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if a[i].Pattern != b[i].Pattern {
			return false
		}
	}
	return true
}

func (p *parser) credFile(i int, n node) error {
	var path Item
	mode := ""
	var modeNode node
	fields := []field{
		{"path", func(n node) error {
			s, err := p.str(n)
			if err != nil {
				return err
			}
			path = Item{Value: s, Pos: p.pos(n)}
			if pr := checkPath(s, listCredFile); pr != nil {
				return p.failAt(path.Pos, pr)
			}
			if strings.HasPrefix(s, "/") {
				if _, _, pr := resolvePath(s, Env{Cwd: "/", Home: "/"}); pr != nil {
					return p.failAt(path.Pos, pr)
				}
			}
			return nil
		}},
		{"mode", func(n node) (err error) {
			modeNode = n
			mode, err = p.mode(n)
			return err
		}},
		p.unsupported("extract", "credentials.files[].extract"),
		p.unsupported("onExtractNoMatch", "credentials.files[].onExtractNoMatch"),
		p.unsupported("decode", "credentials.files[].decode"),
		p.unsupported("maskClaims", "credentials.files[].maskClaims"),
		p.unsupported("maskDuplicates", "credentials.files[].maskDuplicates"),
		p.unsupported("injectHosts", "credentials.files[].injectHosts"),
	}
	if err := p.object(n, fields); err != nil {
		return err
	}
	if err := p.required(n, "path", "mode"); err != nil {
		return err
	}
	if mode == ModeMask {
		return p.fail(modeNode, errf(ErrUnsupported, "not supported by moat: masking file contents"),
			`use mode "deny" to hide the file from the sandbox`)
	}
	p.s.Credentials.Files = append(p.s.Credentials.Files, path)
	return nil
}

// ignoreViolations is a map from command pattern to paths; kept as written.
func (p *parser) ignoreViolations(n node) error {
	obj, ok := n.v.Value.(*hujson.Object)
	if !ok {
		return p.typeErr(n, "an object", `{"npm": ["/tmp"]}`)
	}
	out := map[string][]string{}
	for i := range obj.Members {
		m := &obj.Members[i]
		k, err := p.str(node{v: &m.Name, key: n.key})
		if err != nil {
			return err
		}
		kn := node{v: &m.Name, key: joinKey(n.key, k)}
		if _, dup := out[k]; dup {
			return p.fail(kn, errf(ErrDuplicate, "key %q appears twice in this object", k), "merge the two lists")
		}
		items, err := p.strings(node{v: &m.Value, key: kn.key}, `["/usr/bin"]`)
		if err != nil {
			return err
		}
		vals := make([]string, 0, len(items))
		for _, it := range items {
			if strings.IndexByte(it.Value, 0) >= 0 {
				return p.failAt(it.Pos, bad(errf(ErrPath, "path %q contains a NUL byte", it.Value), "remove the NUL byte"))
			}
			vals = append(vals, it.Value)
		}
		out[k] = vals
	}
	p.s.IgnoreViolations = out
	return nil
}

// deniedDomainReasons maps a deniedDomains entry, by its exact spelling, to the
// reason shown when it denies a connection. Keys are checked once the whole file
// is read, since deniedDomains may come later.
func (p *parser) deniedDomainReasons(n node) error {
	obj, ok := n.v.Value.(*hujson.Object)
	if !ok {
		return p.typeErr(n, "an object", `{"github.com:22": "use an https remote"}`)
	}
	out := map[string]string{}
	var keys []node
	for i := range obj.Members {
		m := &obj.Members[i]
		k, err := p.str(node{v: &m.Name, key: n.key})
		if err != nil {
			return err
		}
		kn := node{v: &m.Name, key: joinKey(n.key, k)}
		if _, dup := out[k]; dup {
			return p.fail(kn, errf(ErrDuplicate, "key %q appears twice in this object", k), "keep one reason per entry")
		}
		v, err := p.str(node{v: &m.Value, key: kn.key})
		if err != nil {
			return err
		}
		if strings.TrimSpace(v) == "" {
			return p.fail(node{v: &m.Value, key: kn.key}, errf(ErrValue, "empty reason"), "say what is blocked and what to do instead")
		}
		out[k] = v
		keys = append(keys, kn)
	}
	p.s.Network.DeniedDomainReasons = out
	p.later = append(p.later, func() error {
		denied := map[string]bool{}
		for _, d := range p.s.Network.DeniedDomains {
			denied[d.Pattern] = true
		}
		for _, kn := range keys {
			k := kn.v.Value.(hujson.Literal).String()
			if !denied[k] {
				return p.fail(kn, errf(ErrConflict, "%q is not an entry of network.deniedDomains, so this reason would never be shown", k),
					"use the exact spelling of a deniedDomains entry as the key")
			}
		}
		return nil
	})
	return nil
}

// allowedSet indexes network.allowedDomains by host, ports dropped.
func (p *parser) allowedSet() domainSet {
	if p.allowed == nil {
		p.allowed = domainSet{}
		for _, a := range p.s.Network.AllowedDomains {
			p.allowed[a.Host] = true
		}
	}
	return p.allowed
}

// domainSet is a set of rule hosts ("a.com", "*.a.com"), ports ignored.
type domainSet map[string]bool

// covers reports whether every host that h can match is matched by some rule in
// the set, in time proportional to h's labels (see DomainRule.covers).
func (s domainSet) covers(h DomainRule) bool {
	if s["*"] {
		return true
	}
	name, wild := strings.CutPrefix(h.Host, "*.")
	if !wild && s[name] {
		return true
	}
	if wild && s["*."+name] {
		return true
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return false // wildcards never match IP literals
	}
	for rest := name; ; {
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			return false
		}
		rest = rest[i+1:]
		if s["*."+rest] {
			return true
		}
	}
}
