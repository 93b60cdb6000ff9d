package direct

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linux/connbroker"
)

// entryBroker makes, removes, renames and opens entries of the zone, the guarded
// directories that should be writable (a workspace root holding .git/hooks, .git itself),
// on the sandboxed process's behalf, and of directories it made there.
//
// Landlock gives the zone only the rights its protected entries may have, so the kernel
// itself can't make or remove an entry in it: whenever a call doesn't concern the zone,
// or concerns an entry the plan's Landlock rules cover, the broker lets the kernel run it
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE), and a process that rewrites the path after the
// broker looked can only reach what Landlock allows. In the zone, the broker acts itself,
// through descriptors it holds on the zone's directories, on a single name it checked:
// never on a pinned entry (protected, or leading to something protected), never through
// a symlink, never on an entry that existed at start (Landlock decides those).
type entryBroker struct {
	mu     sync.Mutex
	zone   map[zoneKey]*os.File // zone directories; a descriptor pins those without a file handle
	start  map[FileID]bool      // entries of the zone at start: Landlock's business
	pinned map[FileID]bool      // never removed, renamed or replaced
	// reserved names, by directory, are never made: they lead to protected paths
	reserved map[FileID]map[string]bool
	reads    bool // a zone directory lacks read rights: opens come too
}

func newEntryBroker(plan *Plan) (*entryBroker, error) {
	e := &entryBroker{zone: map[zoneKey]*os.File{}, start: plan.Start, pinned: plan.Pinned, reserved: plan.Reserved}
	for _, g := range plan.Guarded {
		for _, z := range plan.Zone {
			if z == g.Path && g.Lost&llsys.AccessFSReadFile != 0 {
				e.reads = true
			}
		}
	}
	for _, path := range plan.Zone {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			e.Close()
			return nil, &os.PathError{Op: "open guarded directory", Path: path, Err: err}
		}
		if err := e.join(fd, path); err != nil {
			e.Close()
			return nil, &os.PathError{Op: "identify guarded directory", Path: path, Err: err}
		}
	}
	return e, nil
}

// zoneKey identifies a directory for as long as it exists and never again: its device and
// file handle (name_to_handle_at: inode and generation), or, on a filesystem without file
// handles, its device and inode while a descriptor the broker holds keeps the inode alive.
type zoneKey string

// keyOf returns fd's key, and whether fd must be kept to pin it.
func keyOf(fd int) (zoneKey, bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", false, err
	}
	if h, _, err := unix.NameToHandleAt(fd, "", unix.AT_EMPTY_PATH); err == nil {
		return zoneKey(fmt.Sprintf("h%d:%d:%x", st.Dev, h.Type(), h.Bytes())), false, nil
	}
	return zoneKey(fmt.Sprintf("i%d:%d", st.Dev, st.Ino)), true, nil
}

// join adds the directory fd to the zone; it takes fd.
func (e *entryBroker) join(fd int, name string) error {
	key, pin, err := keyOf(fd)
	if err != nil {
		unix.Close(fd)
		return err
	}
	if old := e.zone[key]; old != nil {
		old.Close()
	}
	if pin {
		e.zone[key] = os.NewFile(uintptr(fd), name)
		return nil
	}
	unix.Close(fd)
	e.zone[key] = nil
	return nil
}

// inZone reports whether the directory fd is in the zone.
func (e *entryBroker) inZone(fd int) bool {
	key, _, err := keyOf(fd)
	if err != nil {
		return false
	}
	_, ok := e.zone[key]
	return ok
}

// active reports whether the filter must send filesystem calls at all.
func (e *entryBroker) active() bool { return len(e.zone) > 0 }

// readGuard reports whether it must send every open.
func (e *entryBroker) readGuard() bool { return e.reads }

func (e *entryBroker) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for key, f := range e.zone {
		if f != nil {
			f.Close()
		}
		delete(e.zone, key)
	}
}

// call is a path call in its *at form.
type call struct {
	op                 string // open, mkdir, mknod, symlink, link, rename, unlink, truncate
	dirfd, dirfd2      int32
	path, path2        uint64 // addresses in the process
	flags, mode, extra uint64
}

const atFDCWD = -100

// Handle answers n if it is a filesystem call the broker filter sends.
func (e *entryBroker) Handle(n *connbroker.Notif) bool {
	c, ok := decode(n)
	if !ok {
		return false
	}
	if !e.active() {
		n.Continue() // not sent by this run's filter; can't happen
		return true
	}
	e.handle(n, c)
	return true
}

// decode maps a notification to its *at call.
func decode(n *connbroker.Notif) (call, bool) {
	a := n.Args
	switch n.Nr {
	case unix.SYS_OPENAT:
		return call{op: "open", dirfd: int32(a[0]), path: a[1], flags: a[2], mode: a[3]}, true
	case unix.SYS_MKDIRAT:
		return call{op: "mkdir", dirfd: int32(a[0]), path: a[1], mode: a[2]}, true
	case unix.SYS_MKNODAT:
		return call{op: "mknod", dirfd: int32(a[0]), path: a[1], mode: a[2], extra: a[3]}, true
	case unix.SYS_SYMLINKAT:
		return call{op: "symlink", path2: a[0], dirfd: int32(a[1]), path: a[2]}, true
	case unix.SYS_LINKAT:
		return call{op: "link", dirfd2: int32(a[0]), path2: a[1], dirfd: int32(a[2]), path: a[3], flags: a[4]}, true
	case unix.SYS_RENAMEAT2:
		return call{op: "rename", dirfd2: int32(a[0]), path2: a[1], dirfd: int32(a[2]), path: a[3], flags: a[4]}, true
	case unix.SYS_UNLINKAT:
		return call{op: "unlink", dirfd: int32(a[0]), path: a[1], flags: a[2]}, true
	case unix.SYS_TRUNCATE:
		return call{op: "truncate", dirfd: atFDCWD, path: a[0], extra: a[1]}, true
	}
	return decodeLegacy(n)
}

// place is a resolved parent directory and a name in it.
type place struct {
	fd     *os.File // the parent, opened O_PATH while resolving
	dir    *os.File // the same, set under the lock if the parent is in the zone
	name   string
	parent FileID
}

func (p place) close() {
	if p.fd != nil {
		p.fd.Close()
	}
}

// resolve finds where path, relative to the process's dirfd, would put its last
// component: which directory, and the name in it. ok is false when the broker should leave the
// call to the kernel (not a plain name in a directory it can resolve).
func (e *entryBroker) resolve(n *connbroker.Notif, dirfd int32, path string) (p place, ok bool, err error) {
	trimmed := strings.TrimRight(path, "/")
	if trimmed == "" {
		return place{}, false, nil // "" or "/": the kernel answers
	}
	dir, name := ".", trimmed
	if i := strings.LastIndexByte(trimmed, '/'); i >= 0 {
		dir, name = trimmed[:i], trimmed[i+1:]
		if dir == "" {
			dir = "/"
		}
	}
	if name == "." || name == ".." {
		return place{}, false, nil
	}
	var base *os.File
	switch {
	case strings.HasPrefix(path, "/"):
	case dirfd == atFDCWD:
		base, err = n.OpenProcDir("cwd")
	default:
		base, err = n.GetFD(int(dirfd))
	}
	if err != nil {
		return place{}, false, err
	}
	bfd := unix.AT_FDCWD
	if base != nil {
		defer base.Close()
		bfd = int(base.Fd())
	}
	fd, err := unix.Openat2(bfd, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return place{}, false, nil // the kernel will say why
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return place{}, false, nil
	}
	return place{fd: os.NewFile(uintptr(fd), dir), name: name, parent: idOf(&st)}, true, nil
}

// umask reads the calling thread's umask.
func umask(n *connbroker.Notif) (uint32, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(n.Pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			u, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				return 0, err
			}
			if !n.Valid() {
				return 0, errGone
			}
			return uint32(u), nil
		}
	}
	return 0, errors.New("no Umask in /proc status")
}

var errGone = errors.New("the sandboxed thread is gone")

func errno(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EACCES
}

// lstat looks at name in dir without following it; ok is false if it doesn't exist.
func lstat(dir *os.File, name string) (unix.Stat_t, bool, error) {
	var st unix.Stat_t
	err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return st, false, nil
	}
	return st, err == nil, err
}

func (e *entryBroker) handle(n *connbroker.Notif, c call) {
	path, err := n.ReadString(c.path, unix.PathMax)
	if err != nil {
		e.readFailed(n, err)
		return
	}
	p, ok, err := e.resolve(n, c.dirfd, path)
	if err != nil {
		e.readFailed(n, err)
		return
	}
	defer p.close()
	var p2 place
	ok2 := false
	if c.op == "rename" || c.op == "link" {
		path2, err := n.ReadString(c.path2, unix.PathMax)
		if err != nil {
			e.readFailed(n, err)
			return
		}
		if p2, ok2, err = e.resolve(n, c.dirfd2, path2); err != nil {
			e.readFailed(n, err)
			return
		}
		defer p2.close()
	}
	// The zone is looked up and changed only under the lock; the broker acts through the
	// descriptors it resolved, whose directories it just found in the zone.
	e.mu.Lock()
	defer e.mu.Unlock()
	if ok && e.inZone(int(p.fd.Fd())) {
		p.dir = p.fd
	}
	if ok2 && e.inZone(int(p2.fd.Fd())) {
		p2.dir = p2.fd
	}
	if !ok || p.dir == nil {
		if (c.op == "rename" || c.op == "link") && ok2 && p2.dir != nil {
			n.Deny(unix.EXDEV) // out of the zone: the caller copies instead
			return
		}
		n.Continue() // not the zone's: Landlock decides, whatever the path says by then
		return
	}
	creates := c.op != "unlink" && c.op != "truncate" && (c.op != "open" || int32(c.flags)&unix.O_CREAT != 0)
	if creates && e.reserved[p.parent][p.name] {
		n.Deny(unix.EACCES) // the name leads to a protected path
		return
	}
	switch c.op {
	case "open":
		e.open(n, p, int(int32(c.flags)), uint32(c.mode))
	case "mkdir":
		e.mkdir(n, p, uint32(c.mode))
	case "mknod":
		e.mknod(n, p, uint32(c.mode), int(c.extra))
	case "symlink":
		target, err := n.ReadString(c.path2, unix.PathMax)
		if err != nil {
			e.readFailed(n, err)
			return
		}
		answer(n, unix.Symlinkat(target, int(p.dir.Fd()), p.name))
	case "link":
		e.link(n, p2, ok2, p, int(int32(c.flags)))
	case "rename":
		e.rename(n, p2, ok2, p, uint(c.flags))
	case "unlink":
		e.unlink(n, p, int(int32(c.flags)))
	case "truncate":
		e.truncate(n, p, int64(c.extra))
	default:
		n.Continue()
	}
}

func (e *entryBroker) readFailed(n *connbroker.Notif, err error) {
	switch {
	case errors.Is(err, unix.EFAULT), errors.Is(err, unix.ENAMETOOLONG), errors.Is(err, unix.EBADF), errors.Is(err, unix.ENOTDIR):
		n.Deny(errno(err))
	case errors.Is(err, unix.ESRCH) || !n.Valid():
		// gone: nobody waits for an answer
	default:
		n.Deny(unix.EACCES)
	}
}

func answer(n *connbroker.Notif, err error) {
	if err != nil {
		n.Deny(errno(err))
		return
	}
	n.Return(0)
}

func (e *entryBroker) open(n *connbroker.Notif, p place, flags int, mode uint32) {
	if flags&unix.O_PATH != 0 || flags&unix.O_TMPFILE == unix.O_TMPFILE {
		n.Continue() // no rights needed / an unnamed file: Landlock decides
		return
	}
	st, exists, err := lstat(p.dir, p.name)
	switch {
	case err != nil:
		n.Continue()
		return
	case exists && (st.Mode&unix.S_IFMT == unix.S_IFLNK || e.start[idOf(&st)]):
		n.Continue() // through a symlink, or an entry Landlock has rules for
		return
	case exists && st.Mode&unix.S_IFMT != unix.S_IFREG && st.Mode&unix.S_IFMT != unix.S_IFDIR:
		n.Continue()
		return
	case exists && flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL:
		n.Deny(unix.EEXIST)
		return
	case !exists && flags&unix.O_CREAT == 0:
		n.Continue() // the kernel says ENOENT
		return
	}
	if flags&unix.O_CREAT != 0 {
		mask, err := umask(n)
		if err != nil {
			e.readFailed(n, err)
			return
		}
		mode &^= mask
	}
	cloexec := flags&unix.O_CLOEXEC != 0
	fd, err := unix.Openat(int(p.dir.Fd()), p.name, flags&^unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode&0o7777)
	if err != nil {
		n.Deny(errno(err))
		return
	}
	defer unix.Close(fd)
	n.ReturnFD(fd, cloexec)
}

// joined records a directory made in the zone as part of it.
func (e *entryBroker) joined(p place) {
	fd, err := unix.Openat(int(p.dir.Fd()), p.name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return // gone already (a host process): nothing to add
	}
	_ = e.join(fd, p.name)
}

// leaving returns the zone key of name in dir if it is a zone directory about to be
// removed or replaced.
func (e *entryBroker) leaving(dir *os.File, name string) zoneKey {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	key, _, err := keyOf(fd)
	if _, ok := e.zone[key]; err != nil || !ok {
		return ""
	}
	return key
}

// left forgets an entry that was removed or replaced: a zone directory stops being one,
// and a start entry's inode number may now be reused for a new file.
func (e *entryBroker) left(st *unix.Stat_t, key zoneKey) {
	if key != "" {
		if f := e.zone[key]; f != nil {
			f.Close()
		}
		delete(e.zone, key)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR || st.Nlink <= 1 {
		delete(e.start, idOf(st))
	}
}

func (e *entryBroker) mkdir(n *connbroker.Notif, p place, mode uint32) {
	mask, err := umask(n)
	if err != nil {
		e.readFailed(n, err)
		return
	}
	if err := unix.Mkdirat(int(p.dir.Fd()), p.name, mode&^mask&0o7777); err != nil {
		n.Deny(errno(err))
		return
	}
	e.joined(p)
	n.Return(0)
}

func (e *entryBroker) mknod(n *connbroker.Notif, p place, mode uint32, dev int) {
	switch mode & unix.S_IFMT {
	case 0, unix.S_IFREG, unix.S_IFIFO:
	default:
		n.Continue() // devices and sockets: the kernel and Landlock refuse them
		return
	}
	mask, err := umask(n)
	if err != nil {
		e.readFailed(n, err)
		return
	}
	answer(n, unix.Mknodat(int(p.dir.Fd()), p.name, mode&unix.S_IFMT|mode&^mask&0o7777, dev))
}

// link makes a hard link in the zone, only to a file made there during the run: a start
// entry or anything from outside could be a protected or denied file.
func (e *entryBroker) link(n *connbroker.Notif, from place, fromOK bool, to place, flags int) {
	if !fromOK || from.dir == nil || flags != 0 {
		n.Deny(unix.EXDEV)
		return
	}
	st, exists, err := lstat(from.dir, from.name)
	if err != nil || !exists {
		n.Deny(unix.ENOENT)
		return
	}
	if e.start[idOf(&st)] || e.pinned[idOf(&st)] || st.Mode&unix.S_IFMT == unix.S_IFDIR {
		n.Deny(unix.EXDEV)
		return
	}
	answer(n, unix.Linkat(int(from.dir.Fd()), from.name, int(to.dir.Fd()), to.name, 0))
}

func (e *entryBroker) rename(n *connbroker.Notif, from place, fromOK bool, to place, flags uint) {
	if !fromOK || from.dir == nil {
		n.Deny(unix.EXDEV)
		return
	}
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE) != 0 {
		n.Deny(unix.EINVAL) // RENAME_WHITEOUT needs CAP_MKNOD anyway
		return
	}
	st, exists, err := lstat(from.dir, from.name)
	if err != nil || !exists {
		n.Deny(unix.ENOENT)
		return
	}
	if e.pinned[idOf(&st)] {
		n.Deny(unix.EACCES)
		return
	}
	old, replaced, err := lstat(to.dir, to.name)
	if err != nil {
		n.Deny(errno(err))
		return
	}
	if replaced && e.pinned[idOf(&old)] {
		n.Deny(unix.EACCES)
		return
	}
	var key zoneKey
	if replaced && flags&unix.RENAME_EXCHANGE == 0 {
		key = e.leaving(to.dir, to.name)
	}
	if err := unix.Renameat2(int(from.dir.Fd()), from.name, int(to.dir.Fd()), to.name, flags); err != nil {
		n.Deny(errno(err))
		return
	}
	if replaced && flags&unix.RENAME_EXCHANGE == 0 {
		e.left(&old, key)
	}
	n.Return(0)
}

func (e *entryBroker) unlink(n *connbroker.Notif, p place, flags int) {
	st, exists, err := lstat(p.dir, p.name)
	if err != nil || !exists {
		n.Continue() // the kernel says ENOENT
		return
	}
	if e.pinned[idOf(&st)] {
		n.Deny(unix.EACCES)
		return
	}
	key := e.leaving(p.dir, p.name)
	if err := unix.Unlinkat(int(p.dir.Fd()), p.name, flags); err != nil {
		n.Deny(errno(err))
		return
	}
	e.left(&st, key)
	n.Return(0)
}

func (e *entryBroker) truncate(n *connbroker.Notif, p place, length int64) {
	st, exists, err := lstat(p.dir, p.name)
	if err != nil || !exists || st.Mode&unix.S_IFMT != unix.S_IFREG || e.start[idOf(&st)] {
		n.Continue() // missing, a link, or a start entry: the kernel and Landlock decide
		return
	}
	fd, err := unix.Openat(int(p.dir.Fd()), p.name, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		n.Deny(errno(err))
		return
	}
	defer unix.Close(fd)
	answer(n, unix.Ftruncate(fd, length))
}
