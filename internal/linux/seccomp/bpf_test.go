package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
)

// Verdicts, as a seccomp filter returns them.
const (
	allow = retAllow
	kill  = retKillProcess
)

func deny(e Errno) uint32 { return retErrno | uint32(e) }

func verdictString(v uint32) string {
	switch {
	case v == allow:
		return "ALLOW"
	case v == kill:
		return "KILL_PROCESS"
	case v&0xffff0000 == retErrno:
		return "ERRNO(" + Errno(v&0xffff).String() + ")"
	}
	return fmt.Sprintf("%#x", v)
}

// call is one struct seccomp_data.
type call struct {
	arch uint32
	nr   uint32
	args [6]uint64
}

// bytes lays the call out as the kernel does on a little-endian machine.
func (c call) bytes() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], c.nr)
	binary.LittleEndian.PutUint32(b[4:], c.arch)
	binary.LittleEndian.PutUint64(b[8:], 0x00007f0012345678) // instruction pointer: never read
	for i, a := range c.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// vmInput adapts seccomp_data for x/net/bpf's VM, which loads words big-endian (packet
// order) where the kernel loads them in host order. Byte-swapping every 32-bit word makes
// the VM's load of a word equal the kernel's; TestProgramShape checks the program only does
// aligned 32-bit loads, which is what makes this exact.
func vmInput(b []byte) []byte {
	out := make([]byte, len(b))
	for i := 0; i+4 <= len(b); i += 4 {
		binary.BigEndian.PutUint32(out[i:], binary.LittleEndian.Uint32(b[i:]))
	}
	return out
}

type vm struct{ *bpf.VM }

func newVM(t testing.TB, insns []bpf.Instruction) vm {
	t.Helper()
	m, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatalf("bpf.NewVM: %v", err)
	}
	return vm{m}
}

func programVM(t testing.TB, arch string) vm {
	t.Helper()
	raw, err := Program(arch)
	if err != nil {
		t.Fatalf("Program(%q): %v", arch, err)
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("Program(%q) has instructions x/net/bpf can't decode", arch)
	}
	return newVM(t, insns)
}

func (m vm) run(t testing.TB, c call) uint32 {
	t.Helper()
	v, err := m.Run(vmInput(c.bytes()))
	if err != nil {
		t.Fatalf("vm run: %v", err)
	}
	return uint32(v)
}

// reference is the table's meaning, written plainly: what the filter must answer for c.
func reference(info archInfo, nums map[string]int, rules []Rule, c call) uint32 {
	if c.arch != info.audit {
		return kill
	}
	if info.x32 && c.nr&x32Bit != 0 {
		return deny(ENOSYS)
	}
	for _, r := range rules {
		if n := nums[r.Syscall]; n == absent || uint32(n) != c.nr {
			continue
		}
		if matchesAll(r.Args, c.args) {
			return deny(r.Errno)
		}
	}
	return allow
}

func matchesAll(ms []ArgMatch, args [6]uint64) bool {
	for _, m := range ms {
		v := uint32(args[m.Index]) // the low word: what the kernel uses for every tested argument
		if m.Mask != 0 {
			v &= m.Mask
		}
		var ok bool
		switch m.Op {
		case In:
			ok = slices.Contains(m.Values, v)
		case NotIn:
			ok = !slices.Contains(m.Values, v)
		case AnyBit:
			for _, f := range m.Values {
				ok = ok || v&f != 0
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// Syscalls the tests make that the table doesn't name.
var otherNums = map[string]map[string]uint32{
	"amd64": {"read": 0, "write": 1, "openat": 257, "getpid": 39, "close": 3},
	"arm64": {"read": 63, "write": 64, "openat": 56, "getpid": 172, "close": 57},
}

func nr(t testing.TB, arch, name string) uint32 {
	t.Helper()
	if n, ok := otherNums[arch][name]; ok {
		return n
	}
	n, ok := sysnums[arch][name]
	if !ok || n == absent {
		t.Fatalf("no %s syscall %q", arch, name)
	}
	return uint32(n)
}

func TestProgramArches(t *testing.T) {
	if got, want := Arches(), []string{"amd64", "arm64"}; !slices.Equal(got, want) {
		t.Errorf("Arches() = %v, want %v", got, want)
	}
	for _, arch := range []string{"386", "riscv64", "arm", "", "AMD64"} {
		if _, err := Program(arch); !errors.Is(err, ErrUnsupportedArch) {
			t.Errorf("Program(%q) error = %v, want ErrUnsupportedArch", arch, err)
		}
		if _, err := Compile(arch); !errors.Is(err, ErrUnsupportedArch) {
			t.Errorf("Compile(%q) error = %v, want ErrUnsupportedArch", arch, err)
		}
	}
}

// TestPrecompiled checks that the programs Program returns, which gen.go wrote into
// program_<arch>_gen.go, are exactly what the table compiles to now.
func TestPrecompiled(t *testing.T) {
	const regen = "run go generate ./internal/linux/seccomp"
	for _, arch := range Arches() {
		want, err := Compile(arch)
		if err != nil {
			t.Fatalf("Compile(%q): %v", arch, err)
		}
		got, err := Program(arch)
		if err != nil {
			t.Fatalf("Program(%q): %v (no precompiled program: %s)", arch, err, regen)
		}
		if i := firstDiff(got, want); i >= 0 {
			t.Errorf("%s: program_%s_gen.go (%d instructions) is not what the table compiles to (%d instructions); first difference at instruction %d: %s",
				arch, arch, len(got), len(want), i, regen)
		}
		// Program hands out a copy: a caller can't change what the next one installs.
		orig := slices.Clone(got)
		got[0].K ^= 1
		if again, _ := Program(arch); firstDiff(again, orig) >= 0 {
			t.Errorf("%s: changing Program's result changed the precompiled program", arch)
		}
	}
}

// firstDiff returns the index of the first instruction where a and b differ, or -1.
func firstDiff(a, b []bpf.RawInstruction) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// TestProgramShape checks the program uses only what the kernel's seccomp checker accepts and
// what vmInput models: aligned 32-bit loads inside seccomp_data, AND, jumps, constant returns.
func TestProgramShape(t *testing.T) {
	for _, arch := range Arches() {
		raw, err := Program(arch)
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) > maxInsns {
			t.Errorf("%s: %d instructions, over %d", arch, len(raw), maxInsns)
		}
		insns, _ := bpf.Disassemble(raw)
		for i, ins := range insns {
			switch ins := ins.(type) {
			case bpf.LoadAbsolute:
				if ins.Size != 4 || ins.Off%4 != 0 || ins.Off >= 64 {
					t.Errorf("%s: instruction %d: %v is not an aligned word load inside seccomp_data", arch, i, ins)
				}
			case bpf.ALUOpConstant:
				if ins.Op != bpf.ALUOpAnd {
					t.Errorf("%s: instruction %d: unexpected %v", arch, i, ins)
				}
			case bpf.JumpIf, bpf.Jump:
			case bpf.RetConstant:
				switch {
				case ins.Val == allow, ins.Val == kill:
				case ins.Val&0xffff0000 == retErrno && ins.Val&0xffff != 0:
				default:
					t.Errorf("%s: instruction %d: unexpected return %#x", arch, i, ins.Val)
				}
			default:
				t.Errorf("%s: instruction %d: unexpected %T %v", arch, i, ins, ins)
			}
		}
		if _, ok := insns[len(insns)-1].(bpf.RetConstant); !ok {
			t.Errorf("%s: last instruction %v is not a return", arch, insns[len(insns)-1])
		}
	}
}

func TestTable(t *testing.T) {
	used := make(map[string]bool)
	for _, r := range table {
		used[r.Syscall] = true
		present := false
		for _, arch := range Arches() {
			if err := validate(r, sysnums[arch]); err != nil {
				t.Errorf("%s: %v", arch, err)
			}
			present = present || sysnums[arch][r.Syscall] != absent
		}
		if !present {
			t.Errorf("%s is absent on every architecture: the rule does nothing", r.Syscall)
		}
	}
	for _, arch := range Arches() {
		for name := range sysnums[arch] {
			if !used[name] {
				t.Errorf("sysnums[%s] has %q, which no rule uses", arch, name)
			}
		}
	}
	if len(Rules()) != len(table) {
		t.Errorf("Rules() has %d rules, table %d", len(Rules()), len(table))
	}
}

func TestRulesReturnsCopy(t *testing.T) {
	rs := Rules()
	for i := range rs {
		rs[i].Reason = "changed"
		for j := range rs[i].Args {
			rs[i].Args[j].Values[0] = 12345
		}
	}
	for _, r := range Rules() {
		if r.Reason == "changed" {
			t.Fatal("Rules() shares Reason with the table")
		}
		for _, m := range r.Args {
			if m.Values[0] == 12345 {
				t.Fatal("Rules() shares Values with the table")
			}
		}
	}
}

func TestRuleString(t *testing.T) {
	var got []string
	for _, r := range Rules() {
		got = append(got, r.String())
	}
	for _, want := range []string{
		"ptrace -> EPERM: ",
		"io_uring_setup -> ENOSYS: ",
		"ioctl(arg1 in {0x5412}) -> EPERM: ",
		"socket(arg0 in {0x2,0xa} && arg2 in {0x106}) -> EPERM: ",
		"socket(arg0 in {0x2,0xa} && arg1&0xf in {0x3,0xa}) -> EPERM: ",
		"personality(arg0 not in {0x0,0xffffffff}) -> EPERM: ",
		"unshare(arg0 has any bit of {",
	} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("no rule prints as %q...", want)
		}
	}
}

// Linux constants the tests use beyond the table's own.
const (
	auditArchI386 = 0x40000003 // AUDIT_ARCH_I386
	auditArchARM  = 0x40000028 // AUDIT_ARCH_ARM (AArch32)

	afPacket    = 17
	afVsock     = 40
	afAlg       = 38
	afKey       = 15
	afBluetooth = 31
	sockStream  = 1
	sockDgram   = 2
	sockCloexec = 0x80000
	ipprotoICMP = 1

	cloneVM      = 0x100
	cloneFS      = 0x200
	cloneFiles   = 0x400
	cloneSighand = 0x800
	cloneThread  = 0x10000
	cloneSysvsem = 0x40000
	cloneSettls  = 0x80000
	clonePidfd   = 0x1000
	cloneVfork   = 0x4000
	sigchld      = 17

	tcgets           = 0x5401
	addrNoRandomize  = 0x0040000
	perLinux32       = 0x0008
	readImpliesExec  = 0x0400000
	highGarbage      = 0xdeadbeef_00000000
	goThreadFlags    = cloneVM | cloneFS | cloneFiles | cloneSighand | cloneSysvsem | cloneThread
	glibcThreadFlags = goThreadFlags | cloneSettls | 0x100000 | 0x200000 // + PARENT_SETTID, CHILD_CLEARTID
)

type verdictCase struct {
	name    string
	arch    uint32 // 0: the program's own
	syscall string // name, or "" to use nr
	nr      uint32
	args    [6]uint64
	want    uint32
}

// casesFor is the brief's list of calls with hand-written verdicts (not derived from the table).
func casesFor(arch string) []verdictCase {
	cs := []verdictCase{
		{name: "read allowed", syscall: "read", args: [6]uint64{0, 0x1000, 10}, want: allow},
		{name: "write allowed", syscall: "write", args: [6]uint64{1}, want: allow},
		{name: "openat allowed", syscall: "openat", args: [6]uint64{0xffffff9c}, want: allow},
		{name: "getpid allowed", syscall: "getpid", want: allow},
		{name: "clone with Go's thread flags allowed", syscall: "clone", args: [6]uint64{goThreadFlags}, want: allow},
		{name: "clone with glibc's thread flags allowed", syscall: "clone", args: [6]uint64{glibcThreadFlags}, want: allow},
		{name: "clone as Go's fork allowed", syscall: "clone", args: [6]uint64{cloneVM | cloneVfork | clonePidfd | sigchld}, want: allow},
		{name: "clone NEWUSER denied", syscall: "clone", args: [6]uint64{cloneNewUser | sigchld}, want: deny(EPERM)},
		{name: "clone NEWNS with garbage high word denied", syscall: "clone", args: [6]uint64{highGarbage | cloneNewNS}, want: deny(EPERM)},
		{name: "clone NEWNET denied", syscall: "clone", args: [6]uint64{cloneNewNet}, want: deny(EPERM)},
		{name: "clone exit signal 0x80 (=NEWTIME bit, ignored by clone) allowed", syscall: "clone", args: [6]uint64{0x80}, want: allow},
		{name: "clone3 ENOSYS", syscall: "clone3", want: deny(ENOSYS)},
		{name: "fchmod 0755 allowed", syscall: "fchmod", args: [6]uint64{3, 0o755}, want: allow},
		{name: "fchmod 04755 denied", syscall: "fchmod", args: [6]uint64{3, 0o4755}, want: deny(EPERM)},
		{name: "fchmodat 02775 denied", syscall: "fchmodat", args: [6]uint64{0xffffff9c, 0x1000, 0o2775}, want: deny(EPERM)},
		{name: "fchmodat2 04755 denied", syscall: "fchmodat2", args: [6]uint64{0xffffff9c, 0x1000, 0o4755, 0}, want: deny(EPERM)},
		{name: "openat O_CREAT 0644 allowed", syscall: "openat", args: [6]uint64{0xffffff9c, 0x1000, 0o100 | 1, 0o644}, want: allow},
		{name: "openat O_CREAT 04755 denied", syscall: "openat", args: [6]uint64{0xffffff9c, 0x1000, 0o100 | 1, 0o4755}, want: deny(EPERM)},
		{name: "mknodat S_IFREG|02755 denied", syscall: "mknodat", args: [6]uint64{0xffffff9c, 0x1000, 0o102755, 0}, want: deny(EPERM)},
		{name: "unshare FS allowed", syscall: "unshare", args: [6]uint64{cloneFS}, want: allow},
		{name: "unshare FILES|FS allowed", syscall: "unshare", args: [6]uint64{cloneFiles | cloneFS}, want: allow},
		{name: "unshare NEWUSER denied", syscall: "unshare", args: [6]uint64{cloneNewUser}, want: deny(EPERM)},
		{name: "unshare NEWTIME denied", syscall: "unshare", args: [6]uint64{cloneNewTime}, want: deny(EPERM)},
		{name: "unshare NEWCGROUP denied", syscall: "unshare", args: [6]uint64{cloneNewCgroup}, want: deny(EPERM)},
		{name: "unshare high bit only allowed (no namespace; kernel says EINVAL)", syscall: "unshare", args: [6]uint64{1 << 32}, want: allow},
		{name: "setns denied", syscall: "setns", want: deny(EPERM)},
		{name: "ioctl TCGETS allowed", syscall: "ioctl", args: [6]uint64{0, tcgets}, want: allow},
		{name: "ioctl 0x1_00005401 allowed", syscall: "ioctl", args: [6]uint64{0, 1<<32 | tcgets}, want: allow},
		{name: "ioctl TIOCSTI denied", syscall: "ioctl", args: [6]uint64{0, tiocsti}, want: deny(EPERM)},
		{name: "ioctl 0x1_00005412 (truncated to TIOCSTI) denied", syscall: "ioctl", args: [6]uint64{0, 1<<32 | tiocsti}, want: deny(EPERM)},
		{name: "ioctl 0xffffffff_00005412 denied", syscall: "ioctl", args: [6]uint64{0, 0xffffffff_00000000 | tiocsti}, want: deny(EPERM)},
		{name: "ioctl TIOCSTI in arg2 (not the request) allowed", syscall: "ioctl", args: [6]uint64{0, tcgets, tiocsti}, want: allow},
		{name: "ioctl TIOCLINUX denied", syscall: "ioctl", args: [6]uint64{0, tioclinux}, want: deny(EPERM)},
		{name: "ioctl 0x1_0000541c denied", syscall: "ioctl", args: [6]uint64{0, 1<<32 | tioclinux}, want: deny(EPERM)},
		{name: "ioctl TIOCSETD denied", syscall: "ioctl", args: [6]uint64{0, tiocsetd}, want: deny(EPERM)},
		{name: "socket inet stream allowed", syscall: "socket", args: [6]uint64{afInet, sockStream, 0}, want: allow},
		{name: "socket inet6 stream allowed", syscall: "socket", args: [6]uint64{afInet6, sockStream | sockCloexec, 6}, want: allow},
		{name: "socket inet dgram icmp (ping) allowed", syscall: "socket", args: [6]uint64{afInet, sockDgram, ipprotoICMP}, want: allow},
		{name: "socket inet MPTCP denied", syscall: "socket", args: [6]uint64{afInet, sockStream, ipprotoMPTCP}, want: deny(EPERM)},
		{name: "socket inet6 MPTCP cloexec denied", syscall: "socket", args: [6]uint64{afInet6, sockStream | sockCloexec, ipprotoMPTCP}, want: deny(EPERM)},
		{name: "socket inet MPTCP garbage high words denied", syscall: "socket", args: [6]uint64{highGarbage | afInet, sockStream, highGarbage | ipprotoMPTCP}, want: deny(EPERM)},
		{name: "socket inet raw denied", syscall: "socket", args: [6]uint64{afInet, sockRaw, ipprotoICMP}, want: deny(EPERM)},
		{name: "socket inet SOCK_PACKET cloexec denied", syscall: "socket", args: [6]uint64{afInet, sockPacket | sockCloexec, 0x300}, want: deny(EPERM)},
		{name: "socket unix allowed", syscall: "socket", args: [6]uint64{afUnix, sockStream, 0}, want: allow},
		{name: "socket netlink raw allowed", syscall: "socket", args: [6]uint64{afNetlink, sockRaw | sockCloexec, 0}, want: allow},
		{name: "socket packet denied", syscall: "socket", args: [6]uint64{afPacket, sockRaw, 0x300}, want: deny(EPERM)},
		{name: "socket packet hidden under high word denied", syscall: "socket", args: [6]uint64{1<<32 | afPacket, sockRaw}, want: deny(EPERM)},
		{name: "socket vsock denied", syscall: "socket", args: [6]uint64{afVsock, sockStream}, want: deny(EPERM)},
		{name: "socket alg denied", syscall: "socket", args: [6]uint64{afAlg, 5}, want: deny(EPERM)},
		{name: "socket key denied", syscall: "socket", args: [6]uint64{afKey, sockRaw, 2}, want: deny(EPERM)},
		{name: "socket bluetooth denied", syscall: "socket", args: [6]uint64{afBluetooth, sockRaw}, want: deny(EPERM)},
		{name: "socket family 46 (unassigned today) denied", syscall: "socket", args: [6]uint64{46, sockStream}, want: deny(EPERM)},
		{name: "socketpair unix allowed", syscall: "socketpair", args: [6]uint64{afUnix, sockStream}, want: allow},
		{name: "socketpair packet denied", syscall: "socketpair", args: [6]uint64{afPacket, sockDgram}, want: deny(EPERM)},
		{name: "personality PER_LINUX allowed", syscall: "personality", args: [6]uint64{perLinux}, want: allow},
		{name: "personality query allowed", syscall: "personality", args: [6]uint64{perQuery}, want: allow},
		{name: "personality ADDR_NO_RANDOMIZE denied", syscall: "personality", args: [6]uint64{addrNoRandomize}, want: deny(EPERM)},
		{name: "personality READ_IMPLIES_EXEC denied", syscall: "personality", args: [6]uint64{readImpliesExec}, want: deny(EPERM)},
		{name: "personality PER_LINUX32 denied", syscall: "personality", args: [6]uint64{perLinux32}, want: deny(EPERM)},
		{name: "ptrace denied", syscall: "ptrace", want: deny(EPERM)},
		{name: "io_uring_setup ENOSYS", syscall: "io_uring_setup", args: [6]uint64{8}, want: deny(ENOSYS)},
		{name: "io_uring_enter ENOSYS", syscall: "io_uring_enter", want: deny(ENOSYS)},
		{name: "mount denied", syscall: "mount", want: deny(EPERM)},
		{name: "bpf denied", syscall: "bpf", want: deny(EPERM)},
		{name: "unknown syscall 1023 allowed (the kernel answers ENOSYS)", nr: 1023, want: allow},
	}
	switch arch {
	case "amd64":
		cs = append(cs,
			verdictCase{name: "nr 0xffffffff (-1) has bit 30: the x32 check answers ENOSYS", nr: 0xffffffff, want: deny(ENOSYS)},
			verdictCase{name: "i386 entry killed", arch: auditArchI386, nr: 26, want: kill}, // i386 ptrace
			verdictCase{name: "i386 entry of read killed", arch: auditArchI386, nr: 3, want: kill},
			verdictCase{name: "aarch64 arch value killed", arch: arches["arm64"].audit, nr: 0, want: kill},
			verdictCase{name: "x32 read ENOSYS", nr: x32Bit | 0, want: deny(ENOSYS)},
			verdictCase{name: "x32 ptrace ENOSYS", nr: x32Bit | 101, want: deny(ENOSYS)},
			verdictCase{name: "x32-only ioctl 514 ENOSYS", nr: x32Bit | 514, args: [6]uint64{0, tiocsti}, want: deny(ENOSYS)},
			verdictCase{name: "x32 bit with i386 arch killed", arch: auditArchI386, nr: x32Bit | 101, want: kill},
			verdictCase{name: "modify_ldt denied", syscall: "modify_ldt", want: deny(EPERM)},
			verdictCase{name: "iopl denied", syscall: "iopl", want: deny(EPERM)},
		)
	case "arm64":
		cs = append(cs,
			verdictCase{name: "nr 0xffffffff (-1) allowed (the kernel answers ENOSYS)", nr: 0xffffffff, want: allow},
			verdictCase{name: "AArch32 entry killed", arch: auditArchARM, nr: 26, want: kill},
			verdictCase{name: "x86_64 arch value killed", arch: arches["amd64"].audit, nr: 101, want: kill},
			verdictCase{name: "bit 30 means nothing on arm64: allowed (kernel answers ENOSYS)", nr: x32Bit | 117, want: allow},
		)
	}
	return cs
}

func TestVerdicts(t *testing.T) {
	for _, arch := range Arches() {
		m := programVM(t, arch)
		for _, tc := range casesFor(arch) {
			t.Run(arch+"/"+tc.name, func(t *testing.T) {
				c := call{arch: tc.arch, nr: tc.nr, args: tc.args}
				if c.arch == 0 {
					c.arch = arches[arch].audit
				}
				if tc.syscall != "" {
					c.nr = nr(t, arch, tc.syscall)
				}
				if got := m.run(t, c); got != tc.want {
					t.Errorf("got %s, want %s", verdictString(got), verdictString(tc.want))
				}
				if ref := reference(arches[arch], sysnums[arch], table, c); ref != tc.want {
					t.Errorf("the reference model says %s, want %s: test case or model is wrong", verdictString(ref), verdictString(tc.want))
				}
			})
		}
	}
}

// triggers returns argument vectors that satisfy every condition of r, with garbage in the
// high words where the rule tests the argument (the filter must ignore it).
func triggers(r Rule) [][6]uint64 {
	out := [][6]uint64{{}}
	for _, m := range r.Args {
		var vals []uint32
		switch m.Op {
		case In:
			vals = m.Values
		case NotIn:
			for _, v := range []uint32{0, 3, 0x40, 0xffff, 0x7fffffff, 0xfffffffe} {
				if !slices.Contains(m.Values, v) {
					vals = append(vals, v)
				}
			}
		case AnyBit:
			for _, f := range m.Values {
				for bit := uint32(1); bit != 0; bit <<= 1 {
					if f&bit != 0 {
						vals = append(vals, bit)
					}
				}
			}
		}
		var next [][6]uint64
		for _, args := range out {
			for _, v := range vals {
				a := args
				a[m.Index] = highGarbage | uint64(v)
				if m.Mask != 0 {
					a[m.Index] |= uint64(^m.Mask) // bits the mask drops must not matter
				}
				next = append(next, a)
			}
		}
		out = next
	}
	return out
}

func TestEveryRuleDenies(t *testing.T) {
	for _, arch := range Arches() {
		m := programVM(t, arch)
		info := arches[arch]
		for _, r := range table {
			n := sysnums[arch][r.Syscall]
			if n == absent {
				continue
			}
			for _, args := range triggers(r) {
				c := call{arch: info.audit, nr: uint32(n), args: args}
				if got := m.run(t, c); got != deny(r.Errno) {
					t.Errorf("%s: %s%x: got %s, want %s (rule %q)", arch, r.Syscall, args, verdictString(got), verdictString(deny(r.Errno)), r.Reason)
				}
			}
		}
	}
}

// interestingArgs are argument values at and around every value rs test, by argument index.
func interestingArgs(rs []Rule) map[int][]uint64 {
	sets := map[int]map[uint64]bool{}
	for _, r := range rs {
		for _, m := range r.Args {
			set := sets[m.Index]
			if set == nil {
				set = map[uint64]bool{0: true, 0xffffffff: true, highGarbage: true}
				sets[m.Index] = set
			}
			for _, v := range m.Values {
				for _, x := range []uint32{v - 1, v, v + 1, v | 0x80000} {
					set[uint64(x)] = true
					set[1<<32|uint64(x)] = true
				}
			}
		}
	}
	out := map[int][]uint64{}
	for i, set := range sets {
		for v := range set {
			out[i] = append(out[i], v)
		}
		slices.Sort(out[i])
	}
	return out
}

// differential compares the program with the reference model for every syscall number up to
// maxNr and some beyond, with each argument a rule of that number tests set to the tested
// values and their neighbours, and with random mixes of those values in all six arguments.
func differential(t *testing.T, arch string, info archInfo, nums map[string]int, rules []Rule, m vm, maxNr uint32) {
	t.Helper()
	byNr := map[uint32][]Rule{}
	for _, r := range rules {
		if n := nums[r.Syscall]; n != absent {
			byNr[uint32(n)] = append(byNr[uint32(n)], r)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	failures := 0
	check := func(c call) {
		if got, want := m.run(t, c), reference(info, nums, rules, c); got != want && failures < 20 {
			failures++
			t.Errorf("%s: nr %d args %x: program says %s, reference %s", arch, c.nr, c.args, verdictString(got), verdictString(want))
		}
	}
	nrs := []uint32{x32Bit, x32Bit | 1, 0x7fffffff, 0x80000000, 0xffffffff}
	for n := uint32(0); n <= maxNr; n++ {
		nrs = append(nrs, n)
	}
	for _, n := range nrs {
		check(call{arch: info.audit, nr: n, args: [6]uint64{1, 2, 3, 4, 5, 6}})
		check(call{arch: auditArchI386, nr: n})
		check(call{arch: auditArchARM, nr: n})
		vals := interestingArgs(byNr[n])
		var all []uint64
		for i, vs := range vals {
			all = append(all, vs...)
			for _, v := range vs {
				c := call{arch: info.audit, nr: n}
				c.args[i] = v
				check(c)
			}
		}
		if len(all) == 0 {
			continue
		}
		for range 50 {
			c := call{arch: info.audit, nr: n}
			for i := range c.args {
				c.args[i] = all[rng.IntN(len(all))]
			}
			check(c)
		}
	}
}

func TestDifferential(t *testing.T) {
	for _, arch := range Arches() {
		differential(t, arch, arches[arch], sysnums[arch], table, programVM(t, arch), 600)
	}
}

// TestLargeTable grows the table past what short jumps reach, so the assembler must insert long
// jumps in the search tree, in In chains (true branch far) and in NotIn chains (false branch
// far), and checks the result against the reference model.
func TestLargeTable(t *testing.T) {
	nums := map[string]int{}
	var rules []Rule
	many := func(base uint32, n int) []uint32 {
		var vs []uint32
		for i := range n {
			vs = append(vs, base+uint32(3*i))
		}
		return vs
	}
	for i := range 120 {
		name := fmt.Sprintf("fake%d", i)
		nums[name] = 2 * i
		switch {
		case i%30 == 1:
			rules = append(rules, Rule{Syscall: name, Errno: Errno(i), Reason: "long In chain",
				Args: []ArgMatch{{Index: i % 6, Op: In, Values: many(uint32(i), 280)}}})
		case i%30 == 2:
			rules = append(rules, Rule{Syscall: name, Errno: EPERM, Reason: "long NotIn chain",
				Args: []ArgMatch{{Index: 1, Op: NotIn, Values: many(0, 280)}}})
		case i%5 == 3:
			rules = append(rules,
				Rule{Syscall: name, Errno: ENOSYS, Reason: "two conditions", Args: []ArgMatch{
					{Index: 0, Op: In, Values: many(1, 20)},
					{Index: 2, Mask: 0xff, Op: In, Values: []uint32{5, 7}}}},
				Rule{Syscall: name, Errno: EPERM, Reason: "flags", Args: []ArgMatch{{Index: 3, Op: AnyBit, Values: []uint32{0x10, 0x8000}}}},
			)
		case i%5 == 4:
			nums[name] = absent
			rules = append(rules, Rule{Syscall: name, Errno: EPERM, Reason: "absent here"})
		default:
			rules = append(rules, Rule{Syscall: name, Errno: EPERM, Reason: "plain"})
		}
	}
	info := archInfo{audit: 0xc000003e, x32: true}
	insns, err := compile(info, nums, rules)
	if err != nil {
		t.Fatal(err)
	}
	long := 0
	for _, ins := range insns {
		if _, ok := ins.(bpf.Jump); ok {
			long++
		}
	}
	if long == 0 {
		t.Fatalf("no long jumps in a %d-instruction program: the test does not exercise them", len(insns))
	}
	t.Logf("%d instructions, %d long jumps", len(insns), long)
	differential(t, "large", info, nums, rules, newVM(t, insns), 260)
}

func TestTooLarge(t *testing.T) {
	var vs []uint32
	for i := range 5000 {
		vs = append(vs, uint32(i))
	}
	rules := []Rule{{Syscall: "x", Errno: EPERM, Reason: "r", Args: []ArgMatch{{Index: 0, Op: In, Values: vs}}}}
	if _, err := compile(arches["amd64"], map[string]int{"x": 1}, rules); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("compile of a %d-value rule: error %v, want over the kernel's limit", len(vs), err)
	}
}

func TestInvalidRules(t *testing.T) {
	nums := map[string]int{"a": 1, "b": 2, "c": 2, "gone": absent}
	ok := Rule{Syscall: "a", Errno: EPERM, Reason: "r"}
	for _, tc := range []struct {
		name  string
		rules []Rule
	}{
		{"unknown syscall", []Rule{{Syscall: "typo", Errno: EPERM, Reason: "r"}}},
		{"empty reason", []Rule{{Syscall: "a", Errno: EPERM}}},
		{"two-line reason", []Rule{{Syscall: "a", Errno: EPERM, Reason: "x\ny"}}},
		{"zero errno", []Rule{{Syscall: "a", Reason: "r"}}},
		{"errno too large", []Rule{{Syscall: "a", Errno: 4096, Reason: "r"}}},
		{"argument 6", []Rule{{Syscall: "a", Errno: EPERM, Reason: "r", Args: []ArgMatch{{Index: 6, Op: In, Values: []uint32{1}}}}}},
		{"negative argument", []Rule{{Syscall: "a", Errno: EPERM, Reason: "r", Args: []ArgMatch{{Index: -1, Op: In, Values: []uint32{1}}}}}},
		{"no values", []Rule{{Syscall: "a", Errno: EPERM, Reason: "r", Args: []ArgMatch{{Index: 0, Op: In}}}}},
		{"no op", []Rule{{Syscall: "a", Errno: EPERM, Reason: "r", Args: []ArgMatch{{Index: 0, Values: []uint32{1}}}}}},
		{"zero flag", []Rule{{Syscall: "a", Errno: EPERM, Reason: "r", Args: []ArgMatch{{Index: 0, Op: AnyBit, Values: []uint32{0}}}}}},
		{"mask with AnyBit", []Rule{{Syscall: "a", Errno: EPERM, Reason: "r", Args: []ArgMatch{{Index: 0, Mask: 1, Op: AnyBit, Values: []uint32{1}}}}}},
		{"value outside mask", []Rule{{Syscall: "a", Errno: EPERM, Reason: "r", Args: []ArgMatch{{Index: 0, Mask: 0xf, Op: In, Values: []uint32{0x10}}}}}},
		{"rule after unconditional", []Rule{ok, {Syscall: "a", Errno: EPERM, Reason: "r", Args: []ArgMatch{{Index: 0, Op: In, Values: []uint32{1}}}}}},
		{"two names, one number", []Rule{{Syscall: "b", Errno: EPERM, Reason: "r", Args: []ArgMatch{{Index: 0, Op: In, Values: []uint32{1}}}}, {Syscall: "c", Errno: EPERM, Reason: "r"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := compile(arches["amd64"], nums, tc.rules); !errors.Is(err, ErrInvalidRule) {
				t.Errorf("error %v, want ErrInvalidRule", err)
			}
		})
	}
	// The control: valid rules, including one for a syscall this architecture lacks, compile.
	if _, err := compile(arches["amd64"], nums, []Rule{ok, {Syscall: "gone", Errno: EPERM, Reason: "r"}}); err != nil {
		t.Errorf("valid rules: %v", err)
	}
}

func BenchmarkProgram(b *testing.B) {
	for _, arch := range Arches() {
		b.Run(arch, func(b *testing.B) {
			var raw []bpf.RawInstruction
			for b.Loop() {
				raw, _ = Program(arch)
			}
			b.ReportMetric(float64(len(raw)), "insns")
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	for _, arch := range Arches() {
		b.Run(arch, func(b *testing.B) {
			var raw []bpf.RawInstruction
			for b.Loop() {
				raw, _ = Compile(arch)
			}
			b.ReportMetric(float64(len(raw)), "insns")
		})
	}
}
