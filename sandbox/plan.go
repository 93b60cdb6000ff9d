package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/moat-sandbox/moat/internal/spec"
	"github.com/moat-sandbox/moat/internal/starttrace"
	"github.com/moat-sandbox/moat/policy"
)

// privateDirs get a fresh, empty tmpfs inside the sandbox: the command can use them,
// and nothing on the host's copies is visible or writable. Host sockets live in the
// runtime dirs (SSH agent, D-Bus session bus, docker.sock).
var privateDirs = []struct{ path, reason string }{
	{"/tmp", "private /tmp: host temp files hidden, mktemp works"},
	{"/var/tmp", "private /var/tmp"},
	{"/run", "host runtime dir hidden: D-Bus, docker.sock, agent sockets"},
	{"/var/run", "host runtime dir hidden (when not a link to /run)"},
}

// maxGlobEntries bounds the walk that expands one deny glob.
const maxGlobEntries = 500000

// node is every rule that names one resolved path.
type node struct {
	path                                       string
	denyRead, allowRead, allowWrite, denyWrite bool
	private                                    bool // fresh tmpfs
	pin                                        bool // bind onto itself so it can't be renamed away
	self                                       bool // path is a symlink: cover the link itself
	optional                                   bool // a host socket, which may go away before init covers it
	socket                                     bool // a host socket (spec.Mount.Socket)
	reason                                     string
}

// state is what a path looks like inside the sandbox.
type state struct {
	read, write, host, private bool
}

// plan is the mount view for one run, and the host placeholders it needs.
type plan struct {
	mounts       []spec.Mount
	writable     []string
	placeholders []placeholder  // created on the host for missing protected paths
	notes        []string       // what was skipped and why, for --debug
	bareWatch    []watchedDir   // work trees without a HEAD at start: see disarmBareLayouts
	gitLinks     []gitLinkWatch // writable git dirs: see disarmGitLinks
}

type planner struct {
	pol          *policy.Policy
	nodes        map[string]*node
	placeholders []placeholder
	notes        []string
	bareWatch    []watchedDir
	gitLinks     []gitLinkWatch
	// createPlaceholders is false in dry runs (tests of the plan itself).
	createPlaceholders bool
	record             func(placeholder) error // notes a placeholder before it is made
	dirs               *dirCache               // listings shared by the walks; nil reads each time
}

// planOptions are the parts of a plan that don't come from the policy.
type planOptions struct {
	extraDeny []string // host sockets to cover
	// stateDir is moat's state dir, hidden when the rules would show it: its record
	// lists what moat removes when the user's last run ends, and a sandbox that
	// could write there (--allow-write /tmp) could add the user's files to it.
	stateDir string
	// bait are host sockets to cover even inside a private dir, which hides them
	// already, so that attempts to reach them are reported (baitSockets).
	bait []namedSocket
	// denyRead and denyWrite are rules from outside the policy: what ignore files match.
	denyRead, denyWrite []policy.Rule
	// files are OpFile steps (the sandbox's resolv.conf), applied last.
	files []spec.Mount
	// createPlaceholders is false in dry runs (tests of the plan itself).
	createPlaceholders bool
	// record, when set, notes each placeholder before it is created
	// (placeholders.record).
	record func(placeholder) error
	// dirs, when set, holds the directory listings read for the plan (ignoreRules
	// fills it first), so each directory is read once.
	dirs *dirCache
}

func newPlan(pol *policy.Policy, o planOptions) (*plan, error) {
	p := &planner{pol: pol, nodes: map[string]*node{}, createPlaceholders: o.createPlaceholders, record: o.record, dirs: o.dirs}
	if o.createPlaceholders {
		p.notes = append(p.notes, createDirs(pol)...)
	}
	extraDeny := o.extraDeny
	for _, d := range privateDirs {
		fi, err := os.Lstat(d.path)
		if err != nil || !fi.IsDir() {
			continue // absent, or a symlink (e.g. /var/run -> /run), covered by its target
		}
		n := p.node(d.path)
		n.private = true
		n.reason = d.reason
	}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" && filepath.IsAbs(rt) {
		if real, err := filepath.EvalSymlinks(rt); err == nil {
			n := p.node(real)
			n.private = true
			n.reason = "XDG_RUNTIME_DIR hidden: user sockets"
		}
	}
	var rules []pending
	for _, set := range []struct {
		rules []policy.Rule
		deny  bool
		set   func(*node)
	}{
		{pol.AllowWrite, false, func(n *node) { n.allowWrite = true }},
		{pol.AllowRead, false, func(n *node) { n.allowRead = true }},
		{pol.DenyRead, true, func(n *node) { n.denyRead = true }},
		{o.denyRead, true, func(n *node) { n.denyRead = true }},
		{pol.DenyWrite, true, func(n *node) { n.denyWrite = true }},
		{o.denyWrite, true, func(n *node) { n.denyWrite = true }},
	} {
		for _, r := range set.rules {
			rules = append(rules, pending{r, set.deny, set.set})
		}
	}
	if err := p.addAll(rules); err != nil {
		return nil, err
	}
	for _, path := range pol.Network.AllowUnixSockets {
		// A listed socket shows even inside a hidden runtime dir.
		if fi, err := os.Stat(path); err == nil && fi.Mode().Type() == fs.ModeSocket {
			r := policy.Rule{Path: path, Origin: "network.allowUnixSockets"}
			if err := p.add(r, false, func(n *node) { n.allowRead = true }); err != nil {
				return nil, err
			}
		}
	}
	allowRules := append(append([]policy.Rule(nil), pol.AllowWrite...), pol.AllowRead...)
	for _, path := range pol.Network.AllowUnixSockets {
		allowRules = append(allowRules, policy.Rule{Path: path, Origin: "network.allowUnixSockets"})
	}
	if err := p.checkAllowLinks(allowRules); err != nil {
		return nil, err
	}
	for _, path := range extraDeny {
		if st := p.stateOf(path); !st.host || st.private {
			continue // already hidden by a private dir, or by a mask
		}
		r := policy.Rule{Path: path, Origin: "host socket"}
		if err := p.add(r, true, func(n *node) { n.denyRead, n.optional, n.socket = true, true, true }); err != nil {
			return nil, err
		}
	}
	if st := p.stateOf(o.stateDir); o.stateDir != "" && st.host && !st.private { // private: hidden already
		r := policy.Rule{Path: o.stateDir, Origin: "moat's state dir (its record of the placeholders to remove)"}
		if err := p.add(r, true, func(n *node) { n.denyRead = true }); err != nil {
			return nil, err
		}
	}
	for _, b := range o.bait {
		if st := p.stateOf(b.path); st.host || !st.private {
			continue // covered by the loop above, or hidden by a mask that reports reads
		}
		// In the private dir's tmpfs: init makes the mountpoint, which can't go away.
		r := policy.Rule{Path: b.path, Origin: "host socket (" + b.reason + ")"}
		if err := p.add(r, true, func(n *node) { n.denyRead, n.socket = true, true }); err != nil {
			return nil, err
		}
	}
	if err := p.protect(); err != nil {
		return nil, err
	}
	if err := p.protectMissing(append(append([]policy.Rule(nil), pol.DenyWrite...), o.denyWrite...)); err != nil {
		return nil, err
	}
	out := p.build()
	for _, m := range o.files {
		// A file inside a hidden dir is created in its tmpfs; elsewhere it must
		// exist on the host to be mounted over.
		st := p.stateOf(m.Path)
		fi, err := os.Lstat(m.Path)
		if (st.host && st.read) && (err != nil || !fi.Mode().IsRegular()) {
			out.notes = append(out.notes, fmt.Sprintf("%s: %s is not a regular file on the host; not covered", m.Reason, m.Path))
			continue
		}
		out.mounts = append(out.mounts, m)
	}
	starttrace.Mark("supervisor", "planned")
	return out, nil
}

func (p *planner) node(path string) *node {
	n := p.nodes[path]
	if n == nil {
		n = &node{path: path}
		p.nodes[path] = n
	}
	return n
}

// add resolves rule r (expanding globs) and applies set to the node of each match.
// For a deny rule on a symlink, the link itself is covered as well as its target.
func (p *planner) add(r policy.Rule, deny bool, set func(*node)) error {
	if r.Glob {
		return p.addAll([]pending{{r, deny, set}})
	}
	for _, path := range []string{r.Path} {
		fi, err := os.Lstat(path)
		if err != nil {
			p.notes = append(p.notes, fmt.Sprintf("%s: %s does not exist; nothing to apply", r.Origin, path))
			continue
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			// A dangling link: cover the link itself; there is no target to protect.
			real = ""
		}
		if deny && fi.Mode()&fs.ModeSymlink != 0 {
			if parent, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
				self := p.node(filepath.Join(parent, filepath.Base(path)))
				set(self)
				self.self = true
				self.reason = r.Origin + " (the link itself)"
			}
		}
		if real != "" {
			n := p.node(real)
			set(n)
			if n.reason == "" {
				n.reason = r.Origin
			}
		}
	}
	return nil
}

// checkAllowLinks refuses an allow rule whose path resolves through a symlink the
// sandbox could have made: one on the host, in a directory the rules let it write.
// A link planted by an earlier run, or shipped in a repository, would otherwise
// carry the rule to its target: with "allowWrite ./build" and build -> ~/.ssh, the
// next run would read the keys (the rule, deeper, beats the ~/.ssh mask), and with
// build -> ~/.config it would write the user's config.
func (p *planner) checkAllowLinks(rules []policy.Rule) error {
	for _, r := range rules {
		if r.Glob {
			continue
		}
		for _, link := range symlinksFollowed(r.Path) {
			if st := p.stateOf(filepath.Dir(link)); !st.write || !st.host {
				continue
			}
			target, err := filepath.EvalSymlinks(r.Path)
			if err != nil {
				target = "its target"
			}
			what := "resolves through the symlink " + link + ", which is"
			if link == filepath.Clean(r.Path) {
				what = "is a symlink"
			}
			return &SetupError{Stage: "policy",
				Err: fmt.Errorf("%s: %s %s in a directory the sandbox can write", r.Origin, r.Path, what),
				HintText: fmt.Sprintf("a sandboxed command, or the repository, may have made the link to widen the rule; "+
					"check it and remove it, or name the real path (%s) in the rule", target)}
		}
	}
	return nil
}

// danglingTarget resolves the symlink link as the kernel does and, when what it
// leads to doesn't exist, returns the first path on the way that doesn't, or
// that can't be looked at (a directory without search permission, which the
// sandbox, as its owner, could open up).
func danglingTarget(link string) (string, bool) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(link))
	if err != nil {
		return "", false
	}
	_, missing, loop := resolve(filepath.Join(dir, filepath.Base(link)))
	return missing, missing != "" && !loop // ELOOP: nothing to create would make it resolve
}

// symlinksFollowed lists the symlinks that resolving path follows, each named by
// its resolved parent directory and its own name, in the order they are met. It
// stops where path stops existing.
func symlinksFollowed(path string) []string {
	links, _, _ := resolve(path)
	return links
}

// resolve follows path component by component as the kernel does ('..' after a
// link leaves the link's target), and returns the symlinks it followed, the
// first path on the way that can't be looked at (missing, or in a directory
// without search permission; "" when path resolves), and whether it gave up
// after 40 links.
func resolve(path string) (links []string, missing string, loop bool) {
	resolved := "/"
	rest := strings.Split(path, "/")
	for hops := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return links, next, false
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if hops++; hops > 40 {
			return links, next, true
		}
		target, err := os.Readlink(next)
		if err != nil {
			return links, next, false
		}
		links = append(links, next)
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return links, "", false
}

// pending is a rule waiting to be applied.
type pending struct {
	r    policy.Rule
	deny bool
	set  func(*node)
}

// addAll applies rules. Globs are expanded with one walk per base directory for
// all the globs that share it, no deeper than the deepest of them needs (any
// depth for "**").
func (p *planner) addAll(rules []pending) error {
	groups := map[string][]pending{}
	var bases []string
	for _, pr := range rules {
		if !pr.r.Glob {
			if err := p.add(pr.r, pr.deny, pr.set); err != nil {
				return err
			}
			continue
		}
		base, _ := doublestar.SplitPattern(filepath.ToSlash(pr.r.Path))
		if groups[base] == nil {
			bases = append(bases, base)
		}
		groups[base] = append(groups[base], pr)
	}
	sort.Strings(bases)
	for _, base := range bases {
		matches, err := expandGlobs(p.dirs, base, groups[base])
		if err != nil {
			return err
		}
		for i, pr := range groups[base] {
			for _, path := range matches[i] {
				r := pr.r
				r.Path, r.Glob = path, false
				if err := p.add(r, pr.deny, pr.set); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// expandGlobs lists, per pattern, the existing paths under base that match it.
func expandGlobs(dirs *dirCache, base string, group []pending) ([][]string, error) {
	out := make([][]string, len(group))
	filters := make([]globFilter, len(group))
	for i, pr := range group {
		filters[i] = newGlobFilter(pr.r.Path)
	}
	maxDepth := 0
	for _, pr := range group {
		if strings.Contains(pr.r.Path, "**") {
			maxDepth = -1
			break
		}
		maxDepth = max(maxDepth, strings.Count(pr.r.Path, "/")-strings.Count(base, "/"))
	}
	baseDepth := strings.Count(base, "/")
	count := 0
	err := dirs.walkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable parts can't be matched; they are not readable inside either
		}
		if count++; count > maxGlobEntries {
			return fmt.Errorf("%s: deny globs walk more than %d entries under %s; anchor them deeper", group[0].r.Origin, maxGlobEntries, base)
		}
		matched := false
		for i, pr := range group {
			if !filters[i].may(path) {
				continue
			}
			if ok, _ := doublestar.PathMatch(pr.r.Path, path); ok {
				out[i] = append(out[i], path)
				matched = true
			}
		}
		if d.IsDir() && path != base {
			if matched && len(group) == 1 {
				return filepath.SkipDir // everything below is covered by the match
			}
			if maxDepth >= 0 && strings.Count(path, "/")-baseDepth >= maxDepth {
				return filepath.SkipDir // no pattern reaches deeper
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return out, nil
}

// globFilter is what every path a deny glob matches must have, checked before the
// full match (the walk for the workspace's ./*/*/*/.env tries every entry to that
// depth against every pattern): its depth, for a pattern without "**", and a last
// element that the pattern's last element matches. A pattern with braces, classes
// or escapes, which may hold a "/", gets no filter.
type globFilter struct {
	depth int    // the number of "/" in a match; -1: any
	last  string // the pattern's last element; "": any
}

func newGlobFilter(pattern string) globFilter {
	f := globFilter{depth: -1}
	if strings.ContainsAny(pattern, "{}[]\\") {
		return f
	}
	if last := pattern[strings.LastIndexByte(pattern, '/')+1:]; !strings.Contains(last, "**") {
		f.last = last
	}
	if !strings.Contains(pattern, "**") {
		f.depth = strings.Count(pattern, "/")
	}
	return f
}

// may reports whether path can match the pattern; false is certain.
func (f globFilter) may(path string) bool {
	if f.depth >= 0 && strings.Count(path, "/") != f.depth {
		return false
	}
	if f.last != "" {
		if ok, _ := doublestar.Match(f.last, path[strings.LastIndexByte(path, '/')+1:]); !ok {
			return false
		}
	}
	return true
}

// protect adds the mandatory protected paths of every writable root: read-only when
// they exist, covered by an empty read-only placeholder when they don't, and every
// directory between the root and them pinned so it can't be renamed and replaced.
// Below each root, down to ProtectedDepth levels, existing entries and nested git
// repositories are protected too.
func (p *planner) protect() error {
	var roots []string
	for _, n := range p.nodes {
		if n.allowWrite {
			roots = append(roots, n.path)
		}
	}
	sort.Strings(roots)
	if err := p.checkDefaultRoots(); err != nil {
		return err
	}
	var hooks, config *policy.Protected
	workspace := map[string]policy.Protected{}
	home := p.pol.Home
	if real, err := filepath.EvalSymlinks(home); err == nil {
		home = real
	}
	for i, prot := range p.pol.Protected {
		switch {
		case prot.Where == policy.WhereHome:
			if err := p.protectOne(filepath.Join(home, prot.Name), prot); err != nil {
				return err
			}
		case prot.Name == ".git/hooks":
			hooks = &p.pol.Protected[i]
		case prot.Name == ".git/config":
			config = &p.pol.Protected[i]
		default:
			workspace[prot.Name] = prot
		}
	}
	for _, root := range roots {
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			continue // a writable file holds no protected names
		}
		for _, prot := range workspace {
			if err := p.protectOne(filepath.Join(root, prot.Name), prot); err != nil {
				return err
			}
		}
		repos, bares, found := scanNested(p.dirs, root, p.pol.ProtectedDepth, workspace)
		for path, prot := range found {
			if err := p.protectOne(path, prot); err != nil {
				return err
			}
		}
		if hooks == nil && config == nil {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, ".git")); errors.Is(err, fs.ErrNotExist) && config != nil {
			// Not a repository: keep it that way, or the sandbox could create .git
			// with a config of its choosing for the user's next git command.
			prot := *config
			prot.Name, prot.Dir, prot.Reason = ".git", true, "a new .git would carry a config and hooks the sandbox chose"
			if err := p.protectOne(filepath.Join(root, ".git"), prot); err != nil {
				return err
			}
		}
		if config != nil {
			for _, gd := range bares {
				if w, ok := watchGitLinks(gd); ok && p.writable(gd) {
					p.gitLinks = append(p.gitLinks, w)
				}
				if err := p.protectGitFiles(gitDirControlFiles(gd, gd), hooks, config, "a bare repository's "); err != nil {
					return err
				}
			}
		}
		for _, wt := range append([]string{root}, repos...) {
			if fi, err := os.Lstat(filepath.Join(wt, ".git")); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				target, _ := os.Readlink(filepath.Join(wt, ".git"))
				return &SetupError{Stage: "policy", Err: fmt.Errorf("%s/.git is a symlink (to %s) in a writable directory: the sandbox could point it at a git dir of its own", wt, target),
					HintText: fmt.Sprintf("replace the link with a gitfile, which git reads the same way and moat keeps read-only: rm %s/.git && echo 'gitdir: %s' > %s/.git", wt, target, wt)}
			}
			if _, err := os.Lstat(filepath.Join(wt, "HEAD")); config != nil && errors.Is(err, fs.ErrNotExist) && p.writable(wt) {
				// Watched for a bare layout the command leaves (bareLayouts). A
				// placeholder can't stand in for HEAD: a directory named HEAD in a
				// work tree makes "git show HEAD" ambiguous.
				if w, ok := watchDir(wt); ok {
					p.bareWatch = append(p.bareWatch, w)
				}
			}
			if gd, ok := gitDir(wt); ok && config != nil {
				for _, d := range append(uniq(gd, commonDir(gd)), adminDirs(commonDir(gd))...) {
					if p.writable(d) && !slices.ContainsFunc(p.gitLinks, func(w gitLinkWatch) bool { return w.dir.path == d }) {
						if w, ok := watchGitLinks(d); ok {
							p.gitLinks = append(p.gitLinks, w)
						}
					}
				}
			}
			if err := p.protectGitFiles(gitControlFiles(wt), hooks, config, ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// protectGitFiles protects a repository's control files: hooks directories under
// the .git/hooks entry of the table, the rest under .git/config (either may be
// opted out of: nil).
func (p *planner) protectGitFiles(files []gitFile, hooks, config *policy.Protected, what string) error {
	for _, gf := range files {
		prot := config
		if gf.hooks {
			prot = hooks
		}
		if prot == nil {
			continue
		}
		if err := p.protectPath(gf.path, gf.dir, &gf.placeholder, "protected: "+what+gf.reason); err != nil {
			return err
		}
	}
	return nil
}

// scanNested walks root down to depth levels and returns the work trees of nested
// git repositories and the existing entries named in the workspace table.
func scanNested(dirs *dirCache, root string, depth int, table map[string]policy.Protected) (repos, bares []string, found map[string]policy.Protected) {
	found = map[string]policy.Protected{}
	var walk func(dir string, level int)
	walk = func(dir string, level int) {
		ents, err := dirs.readDir(dir)
		if err != nil {
			return
		}
		// A bare repository (HEAD, objects/, refs/): its hooks and config run on a
		// push to it; nothing below it is a work tree.
		layout := 0
		for _, e := range ents {
			switch {
			case e.Name() == "HEAD" && e.Type().IsRegular(), (e.Name() == "objects" || e.Name() == "refs") && e.IsDir():
				layout++
			}
		}
		if layout == 3 {
			bares = append(bares, dir)
			return
		}
		for _, e := range ents {
			name := e.Name()
			path := filepath.Join(dir, name)
			if level > 0 {
				if name == ".git" {
					repos = append(repos, dir)
				}
				if prot, ok := table[name]; ok {
					found[path] = prot
				}
			}
			if e.IsDir() && level < depth {
				if _, skip := scanSkip[name]; !skip {
					walk(path, level+1)
				}
			}
		}
	}
	if depth > 0 {
		walk(root, 0)
	}
	sort.Strings(repos)
	return repos, bares, found
}

// protectMissing covers denyWrite paths that don't exist yet, inside a writable
// directory, with a placeholder, so the command can't create them: a profile's
// ~/.claude/settings.json must not appear with hooks in it. The placeholder is
// what the path's reader takes for "nothing configured": "{}" for JSON, an empty
// file for other names with an extension, else an empty directory. Where the
// path's parent is missing too, its first missing ancestor gets an empty
// directory instead: the command can't create that directory at all, rather than
// create the path inside it.
func (p *planner) protectMissing(rules []policy.Rule) error {
	for _, r := range rules {
		if r.Glob {
			continue // a glob names what exists
		}
		if _, err := os.Lstat(r.Path); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		missing := r.Path
		for {
			if _, err := os.Lstat(filepath.Dir(missing)); err == nil || filepath.Dir(missing) == missing {
				break
			}
			missing = filepath.Dir(missing)
		}
		parent, err := filepath.EvalSymlinks(filepath.Dir(missing))
		if err != nil {
			if p.rootOf(filepath.Dir(missing)) == "" && !p.writable(filepath.Dir(missing)) {
				continue // not in a writable directory: nothing can be created there
			}
			// A dangling link on the way, in a writable directory: the command can
			// create the link's target and then the path through it.
			return &SetupError{Stage: "policy",
				Err:      fmt.Errorf("denyWrite %s: %s can't be covered: a symlink on its way points to nothing (%v)", r.Origin, r.Path, err),
				HintText: "create the link's target or remove the link, so moat can keep the path read-only"}
		}
		target := filepath.Join(parent, filepath.Base(missing))
		base := p.rootOf(target)
		if base == "" {
			continue // not under a writable root: it can't be created anyway
		}
		reason := "denyWrite " + r.Origin
		content := placeholderContent(target)
		if missing != r.Path {
			content = nil // a directory on the way
			reason += " (covers " + r.Path + ", whose parent is missing)"
			p.notes = append(p.notes, fmt.Sprintf("%s: %s does not exist; %s can't be created either", r.Origin, target, r.Path))
		}
		if err := p.protectPath(target, content == nil, content, reason); err != nil {
			return err
		}
	}
	return nil
}

// placeholderContent is what a file placeholder for the missing path holds, so that
// its reader takes it for "nothing configured": "{}" for JSON, empty for other names
// with an extension. It is nil for names without one, which get an empty directory.
func placeholderContent(path string) *string {
	c := ""
	switch base := filepath.Base(path); filepath.Ext(base) {
	case ".json", ".jsonc":
		c = "{}\n"
	case "", base:
		return nil
	}
	return &c
}

// rootOf returns the deepest writable root holding path, or "".
func (p *planner) rootOf(path string) string {
	best := ""
	for _, anc := range policy.Ancestors(path) {
		if n := p.nodes[anc]; n != nil && n.allowWrite && anc != path {
			best = anc
		}
	}
	return best
}

// checkDefaultRoots refuses the default policy's writable current directory when it
// is the home directory or above it: that would make every dotfile writable.
func (p *planner) checkDefaultRoots() error {
	home := p.pol.Home
	if real, err := filepath.EvalSymlinks(home); err == nil {
		home = real
	}
	for _, r := range p.pol.AllowWrite {
		if r.Origin != policy.OriginDefault {
			continue
		}
		real, err := filepath.EvalSymlinks(r.Path)
		if err != nil {
			continue
		}
		if real == home || real == "/" || strings.HasPrefix(home, real+"/") {
			return &SetupError{Stage: "policy", Err: fmt.Errorf("the default policy makes the current directory (%s) writable, and it holds your home directory", real),
				HintText: "run moat from a project directory, or pass --allow-write with the directory you mean"}
		}
	}
	return nil
}

// protectOne protects one entry of the protected paths table.
func (p *planner) protectOne(target string, prot policy.Protected) error {
	// The checks that need no syscall first: most home entries aren't writable.
	if prot.Where == policy.WhereHome && !prot.Dir && (p.writable(filepath.Dir(target)) || p.writable(target)) {
		if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
			if parent, err := os.Lstat(filepath.Dir(target)); err == nil && parent.IsDir() {
				// A placeholder can't stand in for a missing shell file: an empty
				// ~/.bash_profile directory would change what the user's login shells read.
				return &SetupError{Stage: "policy", Err: fmt.Errorf("%s is writable and %s does not exist, so it can't be protected", filepath.Dir(target), target),
					HintText: "create it (an empty file is fine) so moat can keep it read-only, or don't make your home directory writable"}
			}
		}
	}
	// Workspace files (.envrc, .mcp.json) get a directory too, not a file: git
	// shows an untracked file, and an agent's "git add -A" would commit it, while
	// an empty directory is invisible to git. (claude mcp list reports such a
	// .mcp.json as not a regular file; claude itself runs.)
	return p.protectPath(target, true, nil, "protected: "+prot.Reason)
}

// protectPath keeps target read-only if the rules so far would let the sandbox write
// it or create it. A missing target is covered by a placeholder: an empty directory
// when fileContent is nil, else a file with that content.
func (p *planner) protectPath(target string, dir bool, fileContent *string, reason string) error {
	if !p.writable(filepath.Dir(target)) && !p.writable(target) {
		return nil
	}
	if !dir && fileContent == nil {
		panic("sandbox: bug: a file placeholder needs its content")
	}
	// Pin every directory on the way to the protected path that the sandbox could
	// rename, so that renaming one (mv .git .old; mkdir -p .git/hooks) can't get
	// around it.
	p.pinAncestors(target, target)
	fi, err := os.Lstat(target)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		if missing, dangling := danglingTarget(target); dangling {
			if p.hostWritable(missing) {
				// Denying the link leaves its target free to create, and what the
				// command puts there is read through the link.
				return &SetupError{Stage: "policy",
					Err: fmt.Errorf("%s: %s is a symlink to %s, which doesn't exist and the sandbox could create", reason, target, missing),
					HintText: "a repository or an earlier run may have left the link to get around the protection; " +
						"check it and remove it, or create its target before the run"}
			}
		} else {
			// The links on the way stay as they are, and so do the directories
			// above each and above the target: otherwise the sandbox could replace
			// a link (rm lnk; mkdir lnk) or rename a parent of the target (mv cfg
			// cfg.old; mkdir -p cfg/claude) and make the name lead to its own files.
			for _, link := range symlinksFollowed(target) {
				p.pinAncestors(link, target)
				if err := p.add(policy.Rule{Path: link, Origin: reason}, true, func(n *node) { n.denyWrite = true }); err != nil {
					return err
				}
			}
			if real, err := filepath.EvalSymlinks(target); err == nil {
				p.pinAncestors(real, target)
			}
		}
		fallthrough
	case err == nil:
		return p.add(policy.Rule{Path: target, Origin: reason}, true, func(n *node) { n.denyWrite = true })
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("protect %s: %w", target, err)
	}
	if err := p.placeholderParents(filepath.Dir(target), reason); err != nil {
		return err
	}
	parent, err := os.Lstat(filepath.Dir(target))
	if err != nil || !parent.IsDir() {
		return nil // the sandbox can't create its parent either
	}
	ph := placeholder{path: target, file: !dir}
	if !dir {
		ph.content = *fileContent
	}
	if made, err := p.makePlaceholder(ph); err != nil || !made {
		return err
	}
	n := p.node(target)
	n.denyWrite = true
	n.reason = reason + " (not present: read-only placeholder)"
	return nil
}

// makePlaceholder records and creates ph (when the planner creates placeholders)
// and adds it to the plan. It makes none, and says so, in a directory of another
// user's that this user can't write in (another user's repository under a
// writable /tmp) or on a read-only mount: the command, which has the user's uid
// and no capabilities, can't create the path there either. In a directory of the
// user's own that isn't writable it fails: the command could chmod it.
func (p *planner) makePlaceholder(ph placeholder) (made bool, err error) {
	if p.createPlaceholders {
		if p.record != nil {
			if err := p.record(ph); err != nil {
				return false, fmt.Errorf("record placeholder %s: %w", ph.path, err)
			}
		}
		err := ph.create()
		if errors.Is(err, fs.ErrPermission) && !ownedBySelf(filepath.Dir(ph.path)) || errors.Is(err, syscall.EROFS) {
			p.notes = append(p.notes, fmt.Sprintf("no placeholder for %s (%v): the command can't create it either", ph.path, err))
			return false, nil
		}
		if err != nil {
			return false, &SetupError{Stage: "policy", Err: fmt.Errorf("create placeholder for protected path %s: %w", ph.path, err),
				HintText: "the directory is yours but not writable, and the sandbox could make it writable: " +
					"make it writable (moat needs to place a read-only placeholder there), or don't allow writes there"}
		}
	}
	p.placeholders = append(p.placeholders, ph)
	return true, nil
}

// ownedBySelf says whether path's owner is this process's user, who may chmod it.
func ownedBySelf(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return true // unknown: assume the worst
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
}

// placeholderParents makes the missing directories above a protected path,
// from the deepest one that exists down to dir, as placeholders that are pinned
// in place (the command may create other entries in them): where the sandbox
// could create them, it could otherwise create the protected path too
// (core.hooksPath = .github/hooks in a repository without .github).
func (p *planner) placeholderParents(dir, reason string) error {
	var missing []string
	d := dir
	for {
		fi, err := os.Lstat(d)
		if err == nil {
			if !fi.IsDir() || !p.hostWritable(d) {
				return nil // a file, or a directory the sandbox can't write in
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
			return nil
		}
		missing = append(missing, d)
		d = filepath.Dir(d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		made, err := p.makePlaceholder(placeholder{path: missing[i]})
		if err != nil || !made {
			return err
		}
		n := p.node(missing[i])
		n.pin = true
		if n.reason == "" {
			n.reason = reason + " (a missing parent: pinned placeholder)"
		}
	}
	return nil
}

// pinAncestors pins every directory above path that the sandbox could rename:
// those whose parent it can write on the host.
func (p *planner) pinAncestors(path, of string) {
	for d := filepath.Dir(path); d != filepath.Dir(d); d = filepath.Dir(d) {
		if !p.hostWritable(filepath.Dir(d)) {
			continue
		}
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			n := p.node(d)
			n.pin = true
			if n.reason == "" {
				n.reason = "pinned: on the way to " + of
			}
		}
	}
}

// hostWritable reports whether the sandbox could write path of the host (not
// of its private /tmp) under the rules gathered so far.
func (p *planner) hostWritable(path string) bool {
	st := p.stateOf(path)
	return st.write && st.host
}

// writable reports whether path would be writable under the rules gathered so far.
func (p *planner) writable(path string) bool {
	return p.stateOf(path).write
}

// stateOf evaluates the rules for path: the deepest read rule decides readability
// (deny wins a tie), an allowWrite at or above makes it writable unless a denyWrite
// at or above it exists, and a private dir replaces the host's content.
func (p *planner) stateOf(path string) state {
	st := state{read: true, host: true}
	readDepth, privDepth := -1, -1
	allowW, denyW := false, false
	for _, anc := range policy.Ancestors(path) {
		n := p.nodes[anc]
		if n == nil {
			continue
		}
		d := policy.Depth(anc)
		if n.private {
			privDepth = d
			allowW = false // a private dir's content is the sandbox's own
			st = state{read: true, write: true, private: true}
			readDepth = d
		}
		if n.denyRead || n.allowRead || n.allowWrite {
			if d >= readDepth {
				readDepth = d
				st.read = !n.denyRead
				st.private = false
			}
		}
		if n.allowWrite {
			allowW = true
		}
		if n.denyWrite {
			denyW = true
		}
	}
	if privDepth >= 0 && readDepth == privDepth && st.private {
		st.host = false
		st.write = !denyW
		return st
	}
	st.host = st.read
	st.write = st.read && allowW && !denyW
	return st
}

// build orders the nodes by depth and emits a mount step wherever a path's state
// differs from what its parent's step already gives it.
func (p *planner) build() *plan {
	paths := make([]string, 0, len(p.nodes))
	for path := range p.nodes {
		paths = append(paths, path)
	}
	sort.Slice(paths, func(i, j int) bool {
		if di, dj := policy.Depth(paths[i]), policy.Depth(paths[j]); di != dj {
			return di < dj
		}
		return paths[i] < paths[j]
	})
	out := &plan{placeholders: p.placeholders, notes: p.notes, bareWatch: p.bareWatch, gitLinks: p.gitLinks}
	given := map[string]state{"/": {read: true, host: true}}
	for _, path := range paths {
		n := p.nodes[path]
		want := p.stateOf(path)
		have := inherited(given, path)
		given[path] = want
		if want == have && !n.pin && !n.self && !n.socket { // a socket inside a private dir is bait
			continue
		}
		fi, err := os.Lstat(path)
		isDir := err == nil && fi.IsDir()
		m := spec.Mount{Path: path, Reason: n.reason, Dir: isDir, Optional: n.optional, Socket: n.socket && !isDir}
		switch {
		case n.self && !isDir:
			// Cover a symlink itself with an empty file: the link can be neither read
			// through nor replaced. Its target has a node of its own.
			m.Op = spec.OpMaskFile
		case want.private:
			m.Op = spec.OpTmpfs
		case !want.read && isDir:
			m.Op = spec.OpMaskDir
		case !want.read:
			m.Op = spec.OpMaskFile
		case want.write:
			m.Op, m.Source = spec.OpBindRW, path
		default:
			m.Op, m.Source = spec.OpBindRO, path
		}
		if ph, ok := findPlaceholder(p.placeholders, path); ok {
			if ph.file {
				// The host file now exists with content git reads as absent.
				m.Op, m.Source, m.Dir = spec.OpBindRO, path, false
			} else if m.Op == spec.OpMaskDir || m.Op == spec.OpBindRO {
				// Covered with an empty directory: nothing of the host is bound.
				m.Op, m.Source = spec.OpPlaceholder, ""
			}
		}
		out.mounts = append(out.mounts, m)
		if want.write {
			out.writable = append(out.writable, path)
		}
	}
	return out
}

func findPlaceholder(list []placeholder, path string) (placeholder, bool) {
	for _, p := range list {
		if p.path == path {
			return p, true
		}
	}
	return placeholder{}, false
}

// inherited is the state path gets from the nearest ancestor that has a step.
func inherited(given map[string]state, path string) state {
	anc := policy.Ancestors(path)
	for i := len(anc) - 2; i >= 0; i-- { // skip path itself
		if st, ok := given[anc[i]]; ok {
			if st.private {
				// Below a private dir, nothing of the host shows.
				return state{read: false, write: false}
			}
			return st
		}
	}
	return state{read: true, host: true}
}
