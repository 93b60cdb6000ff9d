package direct

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/spec"
)

// Landlock filesystem rights, by what they act on.
const (
	// fileRights are checked on the file opened (or executed, truncated): a rule on a
	// file may hold only these.
	fileRights = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSReadFile |
		llsys.AccessFSTruncate | llsys.AccessFSIoctlDev
	// dirRights are checked on a directory: listing it, or making and removing entries in it.
	dirRights = llsys.AccessFSReadDir | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile |
		llsys.AccessFSMakeChar | llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock |
		llsys.AccessFSMakeFifo | llsys.AccessFSMakeBlock | llsys.AccessFSMakeSym | llsys.AccessFSRefer

	readRights  = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir | llsys.AccessFSIoctlDev
	writeRights = fileRights | dirRights
	// devRights are for the device files a command needs (/dev/null, its terminal).
	devRights = llsys.AccessFSReadFile | llsys.AccessFSWriteFile | llsys.AccessFSTruncate | llsys.AccessFSIoctlDev
	// makeRights create entries in a directory.
	makeRights = llsys.AccessFSMakeChar | llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock |
		llsys.AccessFSMakeFifo | llsys.AccessFSMakeBlock | llsys.AccessFSMakeSym
)

// handledFS is every filesystem right Landlock ABI abi knows, up to device ioctl (ABI 5).
// ABI 9's pathname unix socket right is left alone: the broker connects for the process.
func handledFS(abi int) uint64 {
	switch {
	case abi >= 5:
		return (1 << 16) - 1
	case abi >= 3:
		return (1 << 15) - 1
	case abi == 2:
		return (1 << 14) - 1
	}
	return (1 << 13) - 1
}

// devices are the files under /dev a command may read and write; everything else there
// (other terminals of the user, /dev/shm, /dev/mqueue) is neither readable nor writable:
// without a mount namespace /dev is the host's.
var devices = []struct{ path, reason string }{
	{"/dev/null", "the bit bucket"},
	{"/dev/zero", "zeros"},
	{"/dev/full", "a full disk, for tests"},
	{"/dev/random", "randomness"},
	{"/dev/urandom", "randomness"},
	{"/dev/tty", "the controlling terminal: the session moat runs in"},
	{"/dev/ptmx", "new pseudo-terminals (their peers are opened with TIOCGPTPEER)"},
}

// hidden are host directories whose content the command must not see or change without
// a mount namespace to put empty private ones in their place; the private temp dir
// stands in for /tmp.
var hidden = []struct{ path, reason string }{
	{"/tmp", "host temp files; TMPDIR points at a private dir instead"},
	{"/var/tmp", "host temp files"},
	{"/dev/shm", "host shared memory"},
	{"/dev/mqueue", "host message queues"},
	{"/run", "host runtime dir: D-Bus, docker.sock, agent sockets"},
	{"/var/run", "host runtime dir"},
}

// node is a path whose rights the policy sets; everything beneath it has the same rights
// unless a deeper node says otherwise.
type node struct {
	rights uint64
	reason string
}

// Rule is one Landlock rule: Access on Path and, for a directory, everything beneath it.
type Rule struct {
	Path   string
	Access uint64
}

// Guard is a directory whose own rights fall short of what the policy wants for it,
// because something beneath it must have fewer: Landlock rights are inherited by every
// descendant, so the rights the descendant must lack can only be granted on the siblings.
type Guard struct {
	Path string
	// Lost are the rights it lacks: for directories that should be writable, making and
	// removing entries directly in it; for every guarded directory, the file rights of
	// files that will only appear after the sandbox starts.
	Lost uint64
	// Why names the deeper path that forced it.
	Why string
}

// Plan is the Landlock ruleset for one run.
type Plan struct {
	Rules   []Rule
	Guarded []Guard
	// Listable names the denied directories whose entries' names the command can list
	// (Landlock can't let it list a parent without them); their content stays unreadable.
	Listable []string
	// Zone lists the guarded directories that should be writable: the entry broker makes
	// and removes entries there on the process's behalf.
	Zone []string
	// Start holds the identity of every entry of a guarded directory when the plan was
	// made; Pinned those that are protected or lead to something protected: the entry
	// broker never removes, renames or replaces them.
	Start, Pinned map[FileID]bool
	// Reserved holds, by guarded directory, the names that don't exist but lead to a
	// path the policy protects or denies: the entry broker never makes them.
	Reserved map[FileID]map[string]bool
	Notes    []string
}

// FileID names a file by device and inode.
type FileID struct{ Dev, Ino uint64 }

func idOf(st *unix.Stat_t) FileID { return FileID{uint64(st.Dev), st.Ino} }

// planner computes a Plan.
type planner struct {
	handled uint64
	nodes   map[string]node
	plan    *Plan
}

// nodesOf turns a direct-mode spec into nodes: the mount plan's steps as rights, the
// private temp dir, the device allow list and the hidden host dirs.
func nodesOf(s *Spec) map[string]node {
	nodes := map[string]node{"/": {rights: readRights, reason: "everything readable unless denied"}}
	for _, h := range hidden {
		nodes[h.path] = node{0, h.reason}
	}
	nodes["/dev"] = node{llsys.AccessFSReadDir, "host devices: only the listed ones are usable"}
	for _, d := range devices {
		nodes[d.path] = node{devRights, d.reason}
	}
	for _, d := range s.Devices {
		nodes[d] = node{devRights, "the command's terminal"}
	}
	for _, m := range s.Mounts {
		var r uint64
		switch m.Op {
		case spec.OpBindRW:
			r = writeRights
		case spec.OpBindRO, spec.OpPlaceholder:
			r = readRights
		case spec.OpMaskDir, spec.OpMaskFile, spec.OpTmpfs:
			r = 0
		default:
			continue
		}
		nodes[m.Path] = node{r, m.Reason}
	}
	for _, w := range s.Writable {
		if _, ok := nodes[w]; !ok {
			nodes[w] = node{writeRights, "writable"}
		}
	}
	if s.TempDir != "" {
		nodes[s.TempDir] = node{writeRights, "private temp dir"}
	}
	return nodes
}

// NewPlan computes the Landlock rules for s on the filesystem as it is now, for a kernel
// with Landlock ABI abi. A bind step from another place (Source not Path) can't be
// expressed without a mount namespace and is an error.
func NewPlan(s *Spec, abi int) (*Plan, error) {
	for _, m := range s.Mounts {
		if (m.Op == spec.OpBindRW || m.Op == spec.OpBindRO) && m.Source != "" && m.Source != m.Path {
			return nil, fmt.Errorf("landlock plan: %s binds %s at %s, which needs a mount namespace", m.Op, m.Source, m.Path)
		}
	}
	p := &planner{handled: handledFS(abi), nodes: nodesOf(s), plan: &Plan{Start: map[FileID]bool{}, Pinned: map[FileID]bool{}, Reserved: map[FileID]map[string]bool{}}}
	for path, n := range p.nodes {
		if !filepath.IsAbs(path) || filepath.Clean(path) != path {
			return nil, fmt.Errorf("landlock plan: path %q is not absolute and clean (bug)", path)
		}
		p.nodes[path] = node{n.rights & p.handled, n.reason}
	}
	if err := p.grant("/", 0); err != nil {
		return nil, err
	}
	sort.Strings(p.plan.Listable)
	p.plan.Listable = slices.Compact(p.plan.Listable)
	return p.plan, nil
}

// want is the rights path gets from the deepest node at or above it.
func (p *planner) want(path string) (uint64, string) {
	for cur := path; ; cur = filepath.Dir(cur) {
		if n, ok := p.nodes[cur]; ok {
			return n.rights, cur
		}
		if cur == "/" {
			return 0, "/" // unreachable: "/" is always a node
		}
	}
}

func beneath(path, dir string) bool {
	return dir == "/" && path != "/" || strings.HasPrefix(path, dir+"/")
}

// below lists the nodes strictly beneath dir.
func (p *planner) below(dir string) []string {
	var out []string
	for path := range p.nodes {
		if beneath(path, dir) {
			out = append(out, path)
		}
	}
	sort.Strings(out)
	return out
}

// effective is what a node's rights mean for deciding its ancestors' rules: rights a
// non-directory can't be checked for don't constrain them, and a symlink (whose target
// has rights of its own where it lives) constrains nothing. A node that doesn't exist
// constrains as a directory would: it could be made as one.
func (p *planner) effective(path string) uint64 {
	r := p.nodes[path].rights
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
	case fi.Mode()&fs.ModeSymlink != 0:
		return ^uint64(0)
	case !fi.IsDir():
		r |= dirRights & p.handled
	}
	return r
}

// grant adds the rules that give dir and everything beneath it their rights, given the
// rights above already grants there.
func (p *planner) grant(dir string, above uint64) error {
	want, _ := p.want(dir)
	fi, err := os.Lstat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			p.plan.Notes = append(p.plan.Notes, dir+" does not exist; no rule")
			return nil
		}
		return fmt.Errorf("landlock plan: %w", err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// A rule on a link would apply to its target; the planner resolves links, so
		// this is one the policy names as itself (a masked link): it gets nothing.
		return nil
	}
	below := p.below(dir)
	common := want
	var why string
	for _, q := range below {
		if e := p.effective(q); want&^e != 0 && fi.IsDir() {
			common &= e
			if why == "" {
				why = q
			}
		}
	}
	if common == want || !fi.IsDir() {
		p.rule(dir, want&^above, fi.IsDir())
		// Deeper nodes that want more than this: each top-most one is granted on its own.
		for _, q := range below {
			if !p.hasNodeBetween(dir, q) {
				if err := p.grant(q, above|want); err != nil {
					return err
				}
			}
		}
		return nil
	}
	// Mixed: grant on dir only what everything beneath may have, and the rest on each
	// entry that isn't (or doesn't lead to) a node wanting less.
	if want&llsys.AccessFSReadDir != 0 {
		common |= llsys.AccessFSReadDir // listing: see Plan.Listable
		for _, q := range below {
			if p.effective(q)&llsys.AccessFSReadDir == 0 {
				p.plan.Listable = append(p.plan.Listable, q)
			}
		}
	}
	p.rule(dir, common&^above, true)
	if lost := want &^ (above | common); lost != 0 {
		p.plan.Guarded = append(p.plan.Guarded, Guard{Path: dir, Lost: lost, Why: why})
		if want&llsys.AccessFSMakeReg != 0 {
			p.plan.Zone = append(p.plan.Zone, dir)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("landlock plan: list %s to grant around %s: %w", dir, why, err)
	}
	var dst unix.Stat_t
	if err := unix.Lstat(dir, &dst); err != nil {
		return fmt.Errorf("landlock plan: %w", &os.PathError{Op: "lstat", Path: dir, Err: err})
	}
	for _, q := range below {
		first, _, _ := strings.Cut(strings.TrimPrefix(q, strings.TrimSuffix(dir, "/")+"/"), "/")
		if _, err := os.Lstat(filepath.Join(dir, first)); errors.Is(err, fs.ErrNotExist) {
			if p.plan.Reserved[idOf(&dst)] == nil {
				p.plan.Reserved[idOf(&dst)] = map[string]bool{}
			}
			p.plan.Reserved[idOf(&dst)][first] = true
		}
	}
	for _, e := range ents {
		child := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if err := unix.Lstat(child, &st); err != nil {
			continue // gone meanwhile
		}
		id := idOf(&st)
		p.plan.Start[id] = true
		_, isNode := p.nodes[child]
		if isNode || len(p.below(child)) > 0 {
			p.plan.Pinned[id] = true
			if err := p.grant(child, above|common); err != nil {
				return err
			}
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			continue // its target has its own rights where it lives
		}
		p.rule(child, want&^(above|common), e.IsDir())
	}
	return nil
}

// hasNodeBetween reports whether a node lies strictly between dir and q.
func (p *planner) hasNodeBetween(dir, q string) bool {
	for cur := filepath.Dir(q); cur != dir && beneath(cur, dir); cur = filepath.Dir(cur) {
		if _, ok := p.nodes[cur]; ok {
			return true
		}
	}
	return false
}

func (p *planner) rule(path string, access uint64, isDir bool) {
	if !isDir {
		access &= fileRights
	}
	if access &= p.handled; access != 0 {
		p.plan.Rules = append(p.plan.Rules, Rule{Path: path, Access: access})
	}
}
