// Package fusemask serves, from the supervisor, the FUSE filesystem whose nodes cover
// the sandbox's hidden paths: empty directories and empty files, like the plain masks
// they replace, that report each access to a hidden path and never hold any data.
package fusemask

import (
	"sort"
	"strconv"
	"strings"

	"github.com/moat-sandbox/moat/internal/spec"
)

// Device is the FUSE device.
const Device = "/dev/fuse"

// Operations a Denial names.
const (
	OpRead = "read" // a hidden file was opened, or a name looked up in a hidden directory
	OpList = "list" // a hidden directory was listed
	// OpConnect: the permissions of a hidden host socket (spec.Mount.Socket) were
	// checked, as connect(2) does before it fails; stat(2) asks the same question,
	// and the two can't be told apart.
	OpConnect = "connect"
)

// Denial is one access to a hidden path: what the command asked for, and the mask step
// that hid it.
type Denial struct {
	Op     string // OpRead, OpList or OpConnect
	Path   string // the path the command asked for, as seen inside the sandbox
	Hidden string // the mask step's path: Path itself, or a directory above it
	Rule   string // the mask step's reason
}

// rootID is the FUSE node id of the filesystem's root.
const rootID = 1

// node is one file or directory of the filesystem. The tree is fixed when the server
// is made: nothing inside the sandbox can add to it.
type node struct {
	dir    bool
	socket bool   // a hidden host socket's cover
	path   string // as seen inside the sandbox; "" for the root
	mask   int    // index in Tree.masks of the step this node belongs to; -1 for the root
	// children by name, and their names in listing order.
	children map[string]uint64
	names    []string
}

type mask struct{ path, rule string }

// Tree is the filesystem for one sandbox's mount plan: the root holds one entry per
// mask step, named by the step's index in decimal (spec.Spec.FUSE), and a hidden
// directory holds the mount points of the later steps it encloses, as init's plain
// masks do (nsinit's makeMountpoints).
type Tree struct {
	nodes []node // nodes[id-1]
	masks []mask
}

// IsMask reports whether a mount step is one a Tree serves a node for.
func IsMask(m spec.Mount) bool { return m.Op == spec.OpMaskDir || m.Op == spec.OpMaskFile }

// NewTree builds the tree for a mount plan; it has no mask entries when the plan
// has no mask steps.
func NewTree(mounts []spec.Mount) *Tree {
	t := &Tree{nodes: []node{{dir: true, mask: -1, children: map[string]uint64{}}}}
	stepNode := map[int]uint64{}
	for i, m := range mounts {
		if !IsMask(m) {
			continue
		}
		t.masks = append(t.masks, mask{m.Path, m.Reason})
		id := t.add(rootID, strconv.Itoa(i), m.Op == spec.OpMaskDir, m.Path, len(t.masks)-1)
		if m.Op == spec.OpMaskDir {
			stepNode[i] = id
		} else {
			t.nodes[id-1].socket = m.Socket
		}
	}
	for j := range mounts {
		i := spec.Enclosing(mounts, j)
		top, ok := stepNode[i]
		if i < 0 || !ok {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(mounts[j].Path, mounts[i].Path), "/")
		parts := strings.Split(rel, "/")
		cur := top
		for k, part := range parts {
			last := k == len(parts)-1
			n := &t.nodes[cur-1]
			if id, ok := n.children[part]; ok {
				cur = id
				continue
			}
			cur = t.add(cur, part, !last || mounts[j].WantsDir(), n.path+"/"+part, n.mask)
		}
	}
	for i := range t.nodes {
		sort.Strings(t.nodes[i].names)
	}
	return t
}

// Masks is the number of mask steps the tree serves.
func (t *Tree) Masks() int { return len(t.masks) }

func (t *Tree) add(parent uint64, name string, dir bool, path string, mask int) uint64 {
	t.nodes = append(t.nodes, node{dir: dir, path: path, mask: mask})
	id := uint64(len(t.nodes))
	if dir {
		t.nodes[id-1].children = map[string]uint64{}
	}
	p := &t.nodes[parent-1]
	p.children[name] = id
	p.names = append(p.names, name)
	return id
}

func (t *Tree) node(id uint64) *node {
	if id < 1 || id > uint64(len(t.nodes)) {
		return nil
	}
	return &t.nodes[id-1]
}

// denial describes an access to node n (name below it, when not empty).
func (t *Tree) denial(op string, n *node, name string) Denial {
	m := t.masks[n.mask]
	p := n.path
	if name != "" {
		p += "/" + name
	}
	return Denial{Op: op, Path: p, Hidden: m.path, Rule: m.rule}
}
