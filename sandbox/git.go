package sandbox

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A git repository runs code named by files the sandbox could otherwise write: hooks,
// config (core.fsmonitor, core.hooksPath, aliases, filters), config files it includes,
// and a commondir file that moves config and hooks somewhere else. This file finds
// those files for every repository a writable root holds.

// gitFile is one git control file to keep read-only, and what stands in for it when
// it does not exist.
type gitFile struct {
	path  string
	dir   bool
	hooks bool // a hooks dir (else config-like), for the protected table's names
	// placeholder is the content of the file created on the host when path is
	// missing; git must read it exactly as it reads a missing file. An empty
	// placeholder is only used where git treats empty and missing alike.
	placeholder string
	reason      string
}

// commondirSelf makes git use the git dir itself as its common dir, which is what
// git does when commondir is missing.
const commondirSelf = ".\n"

// scanSkip are directories the nested scan does not enter.
var scanSkip = map[string]string{
	".git":         "a git dir holds no work tree of its own; its control files are handled by gitControlFiles",
	"node_modules": "package trees are large and npm keeps no .git in them; descending would slow every start",
}

// gitDir resolves a work tree's .git (a directory, or a gitfile pointing elsewhere as
// in worktrees and submodules) to the real git dir. ok is false when there is none.
func gitDir(workTree string) (dir string, ok bool) {
	dotgit := filepath.Join(workTree, ".git")
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return "", false
	case fi.IsDir():
		dir = dotgit
	case fi.Mode().IsRegular():
		data, err := readSmall(dotgit)
		if err != nil {
			return "", false
		}
		line, _, _ := strings.Cut(string(data), "\n")
		target, found := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
		if !found {
			return "", false
		}
		target = strings.TrimSpace(target)
		if !filepath.IsAbs(target) {
			target = filepath.Join(workTree, target)
		}
		dir = filepath.Clean(target)
	default:
		return "", false
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real, true
	}
	return "", false
}

// commonDir is the directory git takes config and hooks from for gitdir.
func commonDir(gitdir string) string {
	data, err := readSmall(filepath.Join(gitdir, "commondir"))
	if err != nil {
		return gitdir
	}
	common := strings.TrimSpace(string(data))
	if common == "" {
		return gitdir
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitdir, common)
	}
	if real, err := filepath.EvalSymlinks(common); err == nil {
		return real
	}
	return filepath.Clean(common)
}

// gitControlFiles lists the control files of the repository whose work tree is
// workTree: those of its git dir and common dir, of every submodule git dir under
// modules/, of the linked worktrees' admin dirs, the configured core.hooksPath and
// every config file the config includes.
func gitControlFiles(workTree string) []gitFile {
	gd, ok := gitDir(workTree)
	if !ok {
		return nil
	}
	return gitDirControlFiles(gd, workTree)
}

// isBareRepo says whether dir is a git dir of its own (a bare repository, or
// one git would take for one): HEAD, objects/ and refs/ in it.
func isBareRepo(dir string) bool {
	for _, e := range []struct {
		name string
		dir  bool
	}{{"HEAD", false}, {"objects", true}, {"refs", true}} {
		fi, err := os.Lstat(filepath.Join(dir, e.name))
		if err != nil || fi.IsDir() != e.dir {
			return false
		}
	}
	return true
}

// gitDirControlFiles is gitControlFiles for the git dir gd, whose work tree is
// workTree (for a bare repository, gd itself: git runs its hooks, and takes a
// relative core.hooksPath, from there).
func gitDirControlFiles(gd, workTree string) []gitFile {
	var out []gitFile
	seen := map[string]bool{}
	add := func(f gitFile) {
		if !seen[f.path] {
			seen[f.path] = true
			out = append(out, f)
		}
	}
	if fi, err := os.Lstat(filepath.Join(workTree, ".git")); err == nil && fi.Mode().IsRegular() {
		// A worktree's or submodule's .git file names its git dir: rewritten, it
		// would send the user's next git command to a git dir the sandbox made.
		add(gitFile{path: filepath.Join(workTree, ".git"),
			reason: "a .git file names the git dir, and so the config and hooks, git uses"})
	}
	var visit func(gitdir, workTree string, depth int)
	visit = func(gitdir, workTree string, depth int) {
		if depth > 8 {
			return // submodules nested deeper than anyone uses
		}
		common := commonDir(gitdir)
		add(gitFile{path: filepath.Join(gitdir, "commondir"), placeholder: commondirSelf,
			reason: "a commondir file makes git read config and hooks from another directory"})
		for _, d := range uniq(gitdir, common) {
			add(gitFile{path: filepath.Join(d, "hooks"), dir: true, hooks: true, reason: "git runs these scripts on commit, checkout, merge and push"})
			add(gitFile{path: filepath.Join(d, "config"), reason: "core.hooksPath, core.fsmonitor, core.sshCommand and aliases run commands"})
			add(gitFile{path: filepath.Join(d, "config.worktree"), reason: "per-worktree config runs commands like config does"})
		}
		// The user's and the system's config count too: a relative core.hooksPath
		// there (a team's ".githooks") names a directory in every work tree.
		configs := append(globalGitConfigs(), filepath.Join(common, "config"), filepath.Join(gitdir, "config.worktree"))
		for _, cfg := range configs {
			hooksPaths, includes := readGitConfig(cfg, workTree, 0)
			for _, hp := range hooksPaths {
				add(gitFile{path: hp, dir: true, hooks: true, reason: "the configured core.hooksPath: git runs these scripts"})
			}
			for _, inc := range includes {
				add(gitFile{path: inc, placeholder: "", reason: "a config file included by " + cfg})
			}
		}
		// Linked worktrees keep an admin dir each; its commondir names the repository,
		// and its config.worktree is read as config when extensions.worktreeConfig is
		// set (a missing one reads like an empty one).
		if ents, err := os.ReadDir(filepath.Join(common, "worktrees")); err == nil {
			for _, e := range ents {
				if e.IsDir() {
					add(gitFile{path: filepath.Join(common, "worktrees", e.Name(), "commondir"),
						reason: "a linked worktree's commondir names the repository whose config and hooks it uses"})
					add(gitFile{path: filepath.Join(common, "worktrees", e.Name(), "config.worktree"),
						reason: "a linked worktree's own config runs commands like config does"})
				}
			}
		}
		// Submodule git dirs: modules/<name>[/modules/<name>...], each a git dir.
		for _, sub := range submoduleGitDirs(filepath.Join(common, "modules"), 0) {
			visit(sub, "", depth+1)
		}
	}
	visit(gd, workTree, 0)
	return out
}

// globalGitConfigs are the config files git reads before a repository's own:
// the system's and the user's (GIT_CONFIG_SYSTEM, GIT_CONFIG_NOSYSTEM and
// GIT_CONFIG_GLOBAL as git takes them), in git's order.
func globalGitConfigs() []string {
	var out []string
	if os.Getenv("GIT_CONFIG_NOSYSTEM") == "" {
		sys := os.Getenv("GIT_CONFIG_SYSTEM")
		if sys == "" {
			sys = "/etc/gitconfig"
		}
		out = append(out, sys)
	}
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		return append(out, g)
	}
	home, _ := os.UserHomeDir()
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	if xdg != "" {
		out = append(out, filepath.Join(xdg, "git", "config"))
	}
	if home != "" {
		out = append(out, filepath.Join(home, ".gitconfig"))
	}
	return out
}

// submoduleGitDirs finds git dirs below a modules/ dir. Submodule names may contain
// slashes, so a git dir is recognised by its HEAD file rather than by depth.
func submoduleGitDirs(dir string, depth int) []string {
	if depth > 6 {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		d := filepath.Join(dir, e.Name())
		if fi, err := os.Lstat(filepath.Join(d, "HEAD")); err == nil && fi.Mode().IsRegular() {
			out = append(out, d)
			continue // its own modules/ is handled when it is visited
		}
		out = append(out, submoduleGitDirs(d, depth+1)...)
	}
	return out
}

// readGitConfig reads the parts of a git config file that name other files git
// trusts: core.hooksPath and include.path / includeIf.*.path, followed
// recursively. Every hooksPath value counts, not only the last: which one git
// uses depends on includeIf conditions moat doesn't evaluate. Relative hook paths are relative to the work tree (empty for
// a submodule git dir, whose work tree moat does not need here); relative include
// paths to the including file's directory.
func readGitConfig(path, workTree string, depth int) (hooksPaths, includes []string) {
	if depth > 10 {
		return nil, nil
	}
	data, err := readSmall(path)
	if err != nil {
		return nil, nil
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // git skips a UTF-8 byte order mark
	// A line ending in a backslash continues on the next (git joins them).
	data = bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\\\r\n"), nil), []byte("\\\n"), nil)
	if workTree == "" {
		workTree = configWorkTree(data, filepath.Dir(path))
	}
	home, _ := os.UserHomeDir()
	expand := func(v, rel string) string {
		if rest, ok := strings.CutPrefix(v, "~/"); ok && home != "" {
			return filepath.Join(home, rest)
		}
		if filepath.IsAbs(v) {
			return filepath.Clean(v)
		}
		if rel == "" {
			return ""
		}
		return filepath.Join(rel, v)
	}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			// [core], [includeIf "gitdir:..."], and the old [section.sub]: the
			// section is the first word.
			name, _, _ := strings.Cut(line[1:end], " ")
			name, _, _ = strings.Cut(name, ".")
			section = strings.ToLower(name)
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		key, val, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = gitConfigValue(val)
		switch {
		case section == "core" && key == "hookspath":
			if hp := expand(val, workTree); hp != "" {
				hooksPaths = append(hooksPaths, hp)
			}
		case (section == "include" || section == "includeif") && key == "path":
			inc := expand(val, filepath.Dir(path))
			if inc == "" {
				continue
			}
			includes = append(includes, inc)
			hps, more := readGitConfig(inc, workTree, depth+1)
			hooksPaths = append(hooksPaths, hps...)
			includes = append(includes, more...)
		}
	}
	return hooksPaths, includes
}

// configWorkTree is core.worktree of a submodule's git dir config, relative to
// that git dir; empty when unset.
func configWorkTree(data []byte, gitdir string) string {
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = strings.ToLower(strings.Trim(line, "[] \t"))
			continue
		}
		key, val, _ := strings.Cut(line, "=")
		if section == "core" && strings.EqualFold(strings.TrimSpace(key), "worktree") {
			v := gitConfigValue(val)
			if filepath.IsAbs(v) {
				return filepath.Clean(v)
			}
			return filepath.Join(gitdir, v)
		}
	}
	return ""
}

// gitConfigValue strips comments and quotes from a config value. It needs to be
// right only for paths; a value it gets wrong names a file that is merely kept
// read-only in addition.
func gitConfigValue(v string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(v[i])
			}
		case (c == '#' || c == ';') && !quoted:
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// readSmall reads a control file, refusing anything large: these are a line or a
// few kilobytes, and a huge one is not worth the start-up time.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(io.LimitReader(f, 1<<20))
	return buf.Bytes(), err
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}
