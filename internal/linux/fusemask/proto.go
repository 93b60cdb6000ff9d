package fusemask

import (
	"encoding/binary"
	"syscall"
	"time"
)

// Linux's values, whatever the OS this is built on: the protocol is Linux's.
const (
	eNOENT  = syscall.Errno(2)
	eIO     = syscall.Errno(5)
	eNOTDIR = syscall.Errno(20)
	eISDIR  = syscall.Errno(21)
	eINVAL  = syscall.Errno(22)
	eNOSYS  = syscall.Errno(38)
	eNODATA = syscall.Errno(61)
	ePROTO  = syscall.Errno(71)
	eSTALE  = syscall.Errno(116)

	sIFDIR  = 0o040000
	sIFREG  = 0o100000
	sIFSOCK = 0o140000
	dtDIR   = 4
	dtREG   = 8
	dtSOCK  = 12
)

// The FUSE protocol as far as the masks need it (include/uapi/linux/fuse.h). Messages
// are in the host's byte order.

// Opcodes.
const (
	opLookup      = 1
	opForget      = 2
	opGetattr     = 3
	opReadlink    = 5
	opOpen        = 14
	opRead        = 15
	opStatfs      = 17
	opRelease     = 18
	opGetxattr    = 22
	opListxattr   = 23
	opFlush       = 25
	opInit        = 26
	opOpendir     = 27
	opReaddir     = 28
	opReleasedir  = 29
	opAccess      = 34
	opInterrupt   = 36
	opDestroy     = 38
	opBatchForget = 42
	opReaddirplus = 44
)

// doReaddirplus is the INIT flag that makes the kernel list directories with
// READDIRPLUS, whose entries carry what LOOKUP returns: init learns every mask node
// from one listing of the root instead of one LOOKUP each.
const doReaddirplus = 1 << 13

const (
	inHeaderSize  = 40 // len, opcode, unique, nodeid, uid, gid, pid, total_extlen, padding
	outHeaderSize = 16 // len, error, unique
	attrSize      = 88
	entryOutSize  = 40 + attrSize
	attrOutSize   = 16 + attrSize
	openOutSize   = 16
	initOutSize   = 64
	statfsOutSize = 80
	direntBase    = 24 // ino, off, namelen, type; then the name, padded to 8 bytes

	// kernelMajor and ourMinor are the protocol version the server speaks: 7.31
	// (Linux 5.8) has every message it uses in its present size.
	kernelMajor = 7
	ourMinor    = 31

	// forever is how long the kernel may keep entries and attributes: they never
	// change, and a dentry that is never revalidated keeps the mounts on it.
	forever = 100 * 365 * 24 * 3600

	maxName = 255
)

// Modes of the nodes: those of the plain masks (an empty tmpfs directory, an empty
// read-only file), and for a host socket a socket no one may write, which connect(2)
// refuses with EACCES as it refuses the plain mask.
const (
	dirMode    = sIFDIR | 0o755
	fileMode   = sIFREG | 0o444
	socketMode = sIFSOCK | 0o444
)

// initPid is init's pid in the sandbox's pid namespace, to which the kernel
// translates a request's pid: init's own requests, as it mounts the masks, are not
// the command's.
const initPid = 1

var ne = binary.NativeEndian

// Server answers the kernel's requests for one Tree. Its zero value is not usable; see
// NewServer.
type Server struct {
	tree     *Tree
	uid, gid uint32
	now      uint64 // the nodes' times, seconds
	// deny is called for each access to a hidden path; it must not block.
	deny func(Denial)
}

// NewServer returns a server for t whose nodes belong to uid and gid (as seen inside
// the sandbox) and that passes each access to a hidden path to deny.
func NewServer(t *Tree, uid, gid uint32, deny func(Denial)) *Server {
	return &Server{tree: t, uid: uid, gid: gid, now: uint64(time.Now().Unix()), deny: deny}
}

// Handle answers one request: it returns the reply to write, or nil when the
// request has none (FORGET, INTERRUPT) or is too malformed to answer.
func (s *Server) Handle(req []byte) []byte {
	if len(req) < inHeaderSize || int(ne.Uint32(req[0:])) != len(req) {
		return nil
	}
	opcode := ne.Uint32(req[4:])
	unique := ne.Uint64(req[8:])
	nodeid := ne.Uint64(req[16:])
	arg := req[inHeaderSize:]
	switch opcode {
	case opForget, opBatchForget, opInterrupt:
		// The nodes are fixed; and requests are answered in order, so an interrupted
		// one has been answered already.
		return nil
	case opInit:
		return s.init(unique, arg)
	case opStatfs:
		return reply(unique, 0, statfs())
	case opDestroy, opRelease, opReleasedir:
		return reply(unique, 0, nil)
	case opAccess:
		// Not sent with default_permissions, where the kernel checks the modes.
		return reply(unique, 0, nil)
	}
	n := s.tree.node(nodeid)
	if n == nil {
		return reply(unique, eSTALE, nil)
	}
	switch opcode {
	case opLookup:
		name := cstring(arg)
		if name == "" || len(name) > maxName {
			return reply(unique, eNOENT, nil)
		}
		if !n.dir {
			return reply(unique, eNOTDIR, nil)
		}
		id, ok := n.children[name]
		if !ok {
			if n.mask >= 0 {
				s.deny(s.tree.denial(OpRead, n, name))
			}
			return reply(unique, eNOENT, nil)
		}
		return reply(unique, 0, s.entry(id))
	case opGetattr:
		if n.socket && n.mask >= 0 && ne.Uint32(req[32:]) != initPid {
			// A socket node's attributes are never cached, so that the kernel asks
			// for them at each permission check: connect(2) makes one (so does
			// stat(2), which can't be told apart).
			s.deny(s.tree.denial(OpConnect, n, ""))
		}
		out := make([]byte, attrOutSize)
		ne.PutUint64(out[0:], s.attrValid(n))
		s.attr(out[16:], nodeid)
		return reply(unique, 0, out)
	case opOpen:
		if n.dir {
			return reply(unique, eISDIR, nil)
		}
		if n.mask >= 0 {
			s.deny(s.tree.denial(OpRead, n, ""))
		}
		// Opening succeeds, as on the plain mask, and the file is empty: the kernel
		// answers reads at offset 0 itself, and READ gets nothing either.
		return reply(unique, 0, make([]byte, openOutSize))
	case opOpendir:
		if !n.dir {
			return reply(unique, eNOTDIR, nil)
		}
		if n.mask >= 0 {
			s.deny(s.tree.denial(OpList, n, ""))
		}
		return reply(unique, 0, make([]byte, openOutSize))
	case opRead:
		if n.dir {
			return reply(unique, eISDIR, nil)
		}
		return reply(unique, 0, nil) // no data, ever: the masks hold none
	case opReaddir, opReaddirplus:
		if !n.dir {
			return reply(unique, eNOTDIR, nil)
		}
		if len(arg) < 24 {
			return reply(unique, eIO, nil)
		}
		return reply(unique, 0, s.readdir(nodeid, n, ne.Uint64(arg[8:]), ne.Uint32(arg[16:]), opcode == opReaddirplus))
	case opGetxattr:
		return reply(unique, eNODATA, nil) // as on tmpfs: no such attribute
	case opListxattr:
		if len(arg) >= 4 && ne.Uint32(arg[0:]) == 0 {
			return reply(unique, 0, make([]byte, 8)) // size 0: no attributes
		}
		return reply(unique, 0, nil)
	case opReadlink:
		return reply(unique, eINVAL, nil)
	}
	// Everything that would change the filesystem is refused by the read-only mount
	// before it gets here; anything else is not implemented.
	return reply(unique, eNOSYS, nil)
}

// init answers FUSE_INIT with protocol 7.31 and no optional feature but READDIRPLUS:
// the kernel does locking, permission checks (default_permissions) and read-ahead
// itself.
func (s *Server) init(unique uint64, arg []byte) []byte {
	if len(arg) < 8 {
		return reply(unique, eIO, nil)
	}
	major, minor := ne.Uint32(arg[0:]), ne.Uint32(arg[4:])
	out := make([]byte, initOutSize)
	ne.PutUint32(out[0:], kernelMajor)
	if major > kernelMajor {
		// The kernel sends INIT again with our major version.
		return reply(unique, 0, out[:8])
	}
	if major < kernelMajor {
		return reply(unique, ePROTO, nil)
	}
	ne.PutUint32(out[4:], min(minor, ourMinor))
	ne.PutUint32(out[8:], 0)              // max_readahead
	ne.PutUint32(out[12:], doReaddirplus) // flags
	ne.PutUint16(out[16:], 16)            // max_background
	ne.PutUint16(out[18:], 12)            // congestion_threshold
	ne.PutUint32(out[20:], 4096)          // max_write
	ne.PutUint32(out[24:], 1)             // time_gran, ns
	size := initOutSize
	if minor < 23 {
		size = 24 // the reply's size before 7.23
	}
	return reply(unique, 0, out[:size])
}

// entry is a LOOKUP reply for node id.
func (s *Server) entry(id uint64) []byte {
	out := make([]byte, entryOutSize)
	ne.PutUint64(out[0:], id)
	ne.PutUint64(out[8:], 1)                             // generation
	ne.PutUint64(out[16:], forever)                      // entry_valid
	ne.PutUint64(out[24:], s.attrValid(s.tree.node(id))) // attr_valid
	s.attr(out[40:], id)
	return out
}

// attrValid is how long the kernel may keep n's attributes, in seconds: forever, but
// a socket's not at all (see opGetattr).
func (s *Server) attrValid(n *node) uint64 {
	if n.socket {
		return 0
	}
	return forever
}

// attr fills a struct fuse_attr for node id.
func (s *Server) attr(b []byte, id uint64) {
	n := s.tree.node(id)
	mode, nlink := uint32(fileMode), uint32(1)
	switch {
	case n.dir:
		mode, nlink = dirMode, 2
	case n.socket:
		mode = socketMode
	}
	ne.PutUint64(b[0:], id)     // ino
	ne.PutUint64(b[8:], 0)      // size
	ne.PutUint64(b[16:], 0)     // blocks
	ne.PutUint64(b[24:], s.now) // atime
	ne.PutUint64(b[32:], s.now) // mtime
	ne.PutUint64(b[40:], s.now) // ctime
	ne.PutUint32(b[60:], mode)
	ne.PutUint32(b[64:], nlink)
	ne.PutUint32(b[68:], s.uid)
	ne.PutUint32(b[72:], s.gid)
	ne.PutUint32(b[80:], 4096) // blksize
}

// readdir lists ".", ".." and the node's children from offset off, in at most size
// bytes; an entry's offset is its index plus one. With plus, each entry starts with
// the child's LOOKUP reply (none for "." and "..", which the kernel knows).
func (s *Server) readdir(id uint64, n *node, off uint64, size uint32, plus bool) []byte {
	var out []byte
	for i := off; i < uint64(len(n.names))+2; i++ {
		name, ino, typ := ".", id, uint32(dtDIR)
		switch {
		case i == 1:
			name, ino = "..", rootID
		case i > 1:
			name = n.names[i-2]
			ino = n.children[name]
			switch c := s.tree.node(ino); {
			case c.socket:
				typ = dtSOCK
			case !c.dir:
				typ = dtREG
			}
		}
		var entry []byte
		if plus {
			entry = make([]byte, entryOutSize)
			if i > 1 {
				entry = s.entry(ino)
			}
		}
		rec := len(entry) + (direntBase+len(name)+7)&^7
		if len(out)+rec > int(size) {
			break
		}
		e := make([]byte, rec)
		d := e[copy(e, entry):]
		ne.PutUint64(d[0:], ino)
		ne.PutUint64(d[8:], i+1)
		ne.PutUint32(d[16:], uint32(len(name)))
		ne.PutUint32(d[20:], typ)
		copy(d[direntBase:], name)
		out = append(out, e...)
	}
	return out
}

func statfs() []byte {
	out := make([]byte, statfsOutSize)
	ne.PutUint32(out[40:], 4096)    // bsize
	ne.PutUint32(out[44:], maxName) // namelen
	ne.PutUint32(out[48:], 4096)    // frsize
	return out
}

// reply builds a reply: an error (positive errno) or data.
func reply(unique uint64, errno syscall.Errno, data []byte) []byte {
	if errno != 0 {
		data = nil
	}
	out := make([]byte, outHeaderSize+len(data))
	ne.PutUint32(out[0:], uint32(len(out)))
	ne.PutUint32(out[4:], uint32(-int32(errno)))
	ne.PutUint64(out[8:], unique)
	copy(out[outHeaderSize:], data)
	return out
}

// cstring returns the NUL-terminated string at the start of b.
func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
