package fusemask

import (
	"bytes"
	"slices"
	"syscall"
	"testing"

	"github.com/moat-sandbox/moat/internal/spec"
)

// plan is a mount plan with every kind of step the tree cares about: a hidden
// directory with a re-opened file and a socket inside it, a hidden file, and steps
// that are not masks.
var plan = []spec.Mount{
	{Op: spec.OpTmpfs, Path: "/tmp", Reason: "private /tmp"},                                  // 0
	{Op: spec.OpMaskDir, Path: "/home/u/.ssh", Reason: "credential store"},                    // 1
	{Op: spec.OpBindRW, Path: "/home/u/ws", Source: "/home/u/ws", Reason: "workspace"},        // 2
	{Op: spec.OpMaskFile, Path: "/home/u/ws/.env", Reason: "workspace secrets"},               // 3
	{Op: spec.OpBindRO, Path: "/home/u/.ssh/known_hosts", Source: "/x", Reason: "allowRead"},  // 4
	{Op: spec.OpBindRO, Path: "/home/u/.ssh/conf.d/a", Source: "/y", Dir: true, Reason: "ro"}, // 5
	{Op: spec.OpMaskFile, Path: "/tmp/sock", Reason: "host socket", Socket: true},             // 6
}

type tester struct {
	t      *testing.T
	s      *Server
	got    []Denial
	unique uint64
	pid    uint32 // of the requests: the command's, 2, unless a test says otherwise
}

func newTester(t *testing.T) *tester {
	tt := &tester{t: t, pid: 2}
	tt.s = NewServer(NewTree(plan), 1000, 1001, func(d Denial) { tt.got = append(tt.got, d) })
	tt.do(opInit, rootID, initIn(7, 45))
	return tt
}

func initIn(major, minor uint32) []byte {
	b := make([]byte, 64)
	ne.PutUint32(b[0:], major)
	ne.PutUint32(b[4:], minor)
	return b
}

// do sends one request and returns the reply's errno and data; ok is false when
// there is no reply.
func (tt *tester) do(op uint32, node uint64, arg []byte) (errno syscall.Errno, data []byte, ok bool) {
	tt.t.Helper()
	tt.unique++
	req := make([]byte, inHeaderSize+len(arg))
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint32(req[4:], op)
	ne.PutUint64(req[8:], tt.unique)
	ne.PutUint64(req[16:], node)
	ne.PutUint32(req[32:], tt.pid)
	copy(req[inHeaderSize:], arg)
	out := tt.s.Handle(req)
	if out == nil {
		return 0, nil, false
	}
	if len(out) < outHeaderSize || int(ne.Uint32(out[0:])) != len(out) || ne.Uint64(out[8:]) != tt.unique {
		tt.t.Fatalf("op %d: malformed reply %x", op, out)
	}
	return syscall.Errno(-int32(ne.Uint32(out[4:]))), out[outHeaderSize:], true
}

func (tt *tester) lookup(parent uint64, name string) (uint64, syscall.Errno) {
	tt.t.Helper()
	errno, data, _ := tt.do(opLookup, parent, append([]byte(name), 0))
	if errno != 0 {
		return 0, errno
	}
	if len(data) != entryOutSize {
		tt.t.Fatalf("lookup %q: entry of %d bytes", name, len(data))
	}
	return ne.Uint64(data[0:]), 0
}

// attr returns the mode, size, uid and gid of a LOOKUP or GETATTR reply's attr.
func attrOf(b []byte) (mode uint32, size uint64, uid, gid uint32) {
	return ne.Uint32(b[60:]), ne.Uint64(b[8:]), ne.Uint32(b[68:]), ne.Uint32(b[72:])
}

func TestTree(t *testing.T) {
	tree := NewTree(plan)
	root := tree.node(rootID)
	if got, want := root.names, []string{"1", "3", "6"}; !slices.Equal(got, want) {
		t.Fatalf("root entries %q, want %q (one per mask step, by index)", got, want)
	}
	ssh := tree.node(root.children["1"])
	if !ssh.dir || ssh.path != "/home/u/.ssh" || !slices.Equal(ssh.names, []string{"conf.d", "known_hosts"}) {
		t.Fatalf("hidden dir node: %+v", ssh)
	}
	if kh := tree.node(ssh.children["known_hosts"]); kh.dir || kh.path != "/home/u/.ssh/known_hosts" {
		t.Fatalf("mount point of a re-opened file: %+v", kh)
	}
	confd := tree.node(ssh.children["conf.d"])
	if a := tree.node(confd.children["a"]); !confd.dir || a == nil || !a.dir {
		t.Fatalf("mount point of a re-opened dir two levels down: %+v", confd)
	}
	if env := tree.node(root.children["3"]); env.dir || len(env.children) != 0 {
		t.Fatalf("hidden file node: %+v", env)
	}
	// /tmp/sock is inside a tmpfs step, not a mask: init makes its mount point.
	if tree.Masks() != 3 {
		t.Fatalf("Masks() = %d, want 3", tree.Masks())
	}
}

func TestInit(t *testing.T) {
	for _, tc := range []struct {
		name         string
		major, minor uint32
		wantErr      syscall.Errno
		wantMinor    uint32
		wantSize     int
	}{
		{"newer kernel", 7, 45, 0, ourMinor, initOutSize},
		{"same", 7, ourMinor, 0, ourMinor, initOutSize},
		{"older kernel", 7, 22, 0, 22, 24},
		{"ancient major", 6, 0, ePROTO, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tt := &tester{t: t, s: NewServer(NewTree(plan), 0, 0, func(Denial) {})}
			errno, data, _ := tt.do(opInit, 0, initIn(tc.major, tc.minor))
			if errno != tc.wantErr {
				t.Fatalf("errno %v, want %v", errno, tc.wantErr)
			}
			if errno != 0 {
				return
			}
			if len(data) != tc.wantSize || ne.Uint32(data[0:]) != 7 || ne.Uint32(data[4:]) != tc.wantMinor {
				t.Fatalf("init reply %x", data)
			}
			if flags := ne.Uint32(data[12:]); flags != doReaddirplus {
				t.Fatalf("asked for features %#x; the masks need READDIRPLUS only", flags)
			}
		})
	}
}

func TestHiddenDirectory(t *testing.T) {
	tt := newTester(t)
	ssh, errno := tt.lookup(rootID, "1")
	if errno != 0 {
		t.Fatal(errno)
	}
	if len(tt.got) != 0 {
		t.Fatalf("init's lookup of a mask reported %v", tt.got)
	}
	_, data, _ := tt.do(opGetattr, ssh, make([]byte, 16))
	if mode, size, uid, gid := attrOf(data[16:]); mode != dirMode || size != 0 || uid != 1000 || gid != 1001 {
		t.Fatalf("hidden dir attrs: mode %o size %d owner %d:%d", mode, size, uid, gid)
	}
	for _, name := range []string{"id_rsa", "id_rsa", "config", "../../etc/passwd"} {
		if _, errno := tt.lookup(ssh, name); errno != eNOENT {
			t.Fatalf("lookup %q: %v, want ENOENT (as in an empty directory)", name, errno)
		}
	}
	want := []Denial{
		{OpRead, "/home/u/.ssh/id_rsa", "/home/u/.ssh", "credential store"},
		{OpRead, "/home/u/.ssh/config", "/home/u/.ssh", "credential store"},
		{OpRead, "/home/u/.ssh/../../etc/passwd", "/home/u/.ssh", "credential store"},
	}
	// The tester records every report; the repeated id_rsa is reported twice here
	// and deduplicated by Conn.
	if len(tt.got) != 4 || tt.got[0] != want[0] || tt.got[2] != want[1] || tt.got[3] != want[2] {
		t.Fatalf("reports %+v, want %+v", tt.got, want)
	}

	// A re-opened file's mount point is there, and looking it up reports nothing.
	tt.got = nil
	if _, errno := tt.lookup(ssh, "known_hosts"); errno != 0 || len(tt.got) != 0 {
		t.Fatalf("lookup of a mount point: %v, reports %v", errno, tt.got)
	}

	// Listing shows the mount points only, and is reported.
	errno, _, _ = tt.do(opOpendir, ssh, make([]byte, 8))
	if errno != 0 || len(tt.got) != 1 || tt.got[0].Op != OpList || tt.got[0].Path != "/home/u/.ssh" {
		t.Fatalf("opendir: %v, reports %+v", errno, tt.got)
	}
	for _, plus := range []bool{false, true} {
		if names := tt.readdir(ssh, plus); !slices.Equal(names, []string{".", "..", "conf.d", "known_hosts"}) {
			t.Fatalf("listing (plus %v): %q", plus, names)
		}
	}
}

// TestRootListing: one READDIRPLUS of the root gives init every mask node, with the
// ids and attributes LOOKUP gives, and reports nothing.
func TestRootListing(t *testing.T) {
	tt := newTester(t)
	in := make([]byte, 40)
	ne.PutUint32(in[16:], 4096)
	errno, data, _ := tt.do(opReaddirplus, rootID, in)
	if errno != 0 {
		t.Fatal(errno)
	}
	got := map[string][]byte{}
	for len(data) > 0 {
		d := data[entryOutSize:]
		n := ne.Uint32(d[16:])
		got[string(d[direntBase:direntBase+n])] = data[:entryOutSize]
		data = data[entryOutSize+(direntBase+int(n)+7)&^7:]
	}
	if len(got) != 5 || ne.Uint64(got["."][0:]) != 0 || ne.Uint64(got[".."][0:]) != 0 {
		t.Fatalf("root listing: %q", got)
	}
	for _, name := range []string{"1", "3", "6"} {
		id, _ := tt.lookup(rootID, name)
		if !bytes.Equal(got[name], tt.s.entry(id)) {
			t.Errorf("entry %q differs from its LOOKUP reply", name)
		}
	}
	if len(tt.got) != 0 {
		t.Fatalf("reports %v", tt.got)
	}
}

// readdir lists a directory in requests too small for more than one entry.
func (tt *tester) readdir(dir uint64, plus bool) []string {
	tt.t.Helper()
	var names []string
	var off uint64
	for range 100 {
		in := make([]byte, 40)
		ne.PutUint64(in[8:], off)
		op, size, head := uint32(opReaddir), 40, 0
		if plus {
			op, size, head = opReaddirplus, 40+entryOutSize, entryOutSize
		}
		ne.PutUint32(in[16:], uint32(size))
		errno, data, _ := tt.do(op, dir, in)
		if errno != 0 {
			tt.t.Fatalf("readdir: %v", errno)
		}
		if len(data) == 0 {
			return names
		}
		for len(data) > 0 {
			d := data[head:]
			n := ne.Uint32(d[16:])
			names = append(names, string(d[direntBase:direntBase+n]))
			off = ne.Uint64(d[8:])
			data = d[(direntBase+int(n)+7)&^7:]
		}
	}
	tt.t.Fatal("readdir never ended")
	return nil
}

func TestHiddenFileHasNoData(t *testing.T) {
	tt := newTester(t)
	env, errno := tt.lookup(rootID, "3")
	if errno != 0 {
		t.Fatal(errno)
	}
	_, data, _ := tt.do(opGetattr, env, make([]byte, 16))
	if mode, size, _, _ := attrOf(data[16:]); mode != fileMode || size != 0 {
		t.Fatalf("hidden file attrs: mode %o size %d, want %o and 0", mode, size, fileMode)
	}
	errno, _, _ = tt.do(opOpen, env, make([]byte, 8))
	if errno != 0 {
		t.Fatalf("open: %v, want success as on the plain mask", errno)
	}
	if len(tt.got) != 1 || tt.got[0] != (Denial{OpRead, "/home/u/ws/.env", "/home/u/ws/.env", "workspace secrets"}) {
		t.Fatalf("reports %+v", tt.got)
	}
	// Whatever is asked, a read returns nothing.
	for _, off := range []uint64{0, 1, 4096, 1 << 40} {
		in := make([]byte, 40)
		ne.PutUint64(in[8:], off)
		ne.PutUint32(in[16:], 1<<16)
		errno, data, _ := tt.do(opRead, env, in)
		if errno != 0 || len(data) != 0 {
			t.Fatalf("read at %d: %v, %d bytes", off, errno, len(data))
		}
	}
	if errno, _, _ := tt.do(opLookup, env, []byte("x\x00")); errno != eNOTDIR {
		t.Fatalf("lookup below a file: %v", errno)
	}
}

// TestHiddenSocket checks a host socket's cover: a socket no one may write, whose
// attributes the kernel may not keep, so that each permission check (connect's)
// asks for them and is reported; init's own requests, as it mounts the masks, are not.
func TestHiddenSocket(t *testing.T) {
	tt := newTester(t)
	tt.pid = initPid
	errno, data, _ := tt.do(opLookup, rootID, []byte("6\x00"))
	if errno != 0 {
		t.Fatal(errno)
	}
	sock := ne.Uint64(data[0:])
	if valid := ne.Uint64(data[24:]); valid != 0 {
		t.Fatalf("socket entry's attr_valid %d, want 0", valid)
	}
	if mode, _, _, _ := attrOf(data[40:]); mode != socketMode || mode&0o222 != 0 {
		t.Fatalf("socket mode %o, want %o (a socket no one may write)", mode, socketMode)
	}
	_, data, _ = tt.do(opGetattr, sock, make([]byte, 16))
	if len(tt.got) != 0 {
		t.Fatalf("init's GETATTR reported: %+v", tt.got)
	}
	if valid := ne.Uint64(data[0:]); valid != 0 {
		t.Fatalf("socket GETATTR's attr_valid %d, want 0", valid)
	}
	tt.pid = 2
	tt.do(opGetattr, sock, make([]byte, 16))
	if len(tt.got) != 1 || tt.got[0] != (Denial{OpConnect, "/tmp/sock", "/tmp/sock", "host socket"}) {
		t.Fatalf("reports %+v, want one connect of /tmp/sock", tt.got)
	}
	// A file's attributes are kept, and reading them reports nothing.
	env, _ := tt.lookup(rootID, "3")
	_, data, _ = tt.do(opGetattr, env, make([]byte, 16))
	if valid := ne.Uint64(data[0:]); valid != forever || len(tt.got) != 1 {
		t.Fatalf("file GETATTR: attr_valid %d, reports %+v", valid, tt.got)
	}
}

// TestEveryOpcode sends every opcode to every node, with arguments of every short
// length: the server must not panic, must answer each (but FORGET, BATCH_FORGET and
// INTERRUPT), and must never answer with more than fixed-size metadata.
func TestEveryOpcode(t *testing.T) {
	tt := newTester(t)
	nodes := []uint64{0, rootID, 2, 3, 4, 5, 6, 7, 99, 1 << 63}
	for op := uint32(0); op < 64; op++ {
		for _, n := range nodes {
			for l := 0; l <= 80; l += 4 {
				errno, data, ok := tt.do(op, n, bytes.Repeat([]byte{'a'}, l))
				if !ok {
					if op != opForget && op != opBatchForget && op != opInterrupt {
						t.Fatalf("op %d node %d: no reply", op, n)
					}
					continue
				}
				if errno == 0 && len(data) > entryOutSize && op != opReaddir && op != opReaddirplus {
					t.Fatalf("op %d node %d: %d bytes of reply", op, n, len(data))
				}
				if op == opRead && len(data) != 0 {
					t.Fatalf("READ answered %d bytes", len(data))
				}
			}
		}
	}
}

func TestMalformedRequests(t *testing.T) {
	s := NewServer(NewTree(plan), 0, 0, func(Denial) {})
	for _, req := range [][]byte{nil, make([]byte, 39), func() []byte {
		b := make([]byte, 48)
		ne.PutUint32(b, 47) // length disagrees
		return b
	}()} {
		if out := s.Handle(req); out != nil {
			t.Fatalf("answered malformed request %x", req)
		}
	}
}

// FuzzHandle: whatever the request, the server neither panics nor answers with
// data: its replies are metadata of a bounded size, and READ gets nothing.
func FuzzHandle(f *testing.F) {
	f.Add(uint32(opLookup), uint64(2), []byte("id_rsa\x00"))
	f.Add(uint32(opReaddirplus), uint64(rootID), make([]byte, 40))
	f.Add(uint32(opRead), uint64(4), make([]byte, 40))
	f.Add(uint32(opInit), uint64(0), initIn(7, 99))
	f.Fuzz(func(t *testing.T, op uint32, node uint64, arg []byte) {
		s := NewServer(NewTree(plan), 1, 1, func(Denial) {})
		req := make([]byte, inHeaderSize+len(arg))
		ne.PutUint32(req[0:], uint32(len(req)))
		ne.PutUint32(req[4:], op)
		ne.PutUint64(req[16:], node)
		copy(req[inHeaderSize:], arg)
		out := s.Handle(req)
		if out == nil {
			return
		}
		data := out[outHeaderSize:]
		if op == opRead && len(data) != 0 {
			t.Fatalf("READ answered %d bytes", len(data))
		}
		if len(data) > entryOutSize && op != opReaddir && op != opReaddirplus {
			t.Fatalf("op %d: %d bytes of reply", op, len(data))
		}
		if (op == opReaddir || op == opReaddirplus) && len(arg) >= 24 && len(data) > int(ne.Uint32(arg[16:])) {
			t.Fatalf("readdir answered %d bytes for %d asked", len(data), ne.Uint32(arg[16:]))
		}
	})
}
