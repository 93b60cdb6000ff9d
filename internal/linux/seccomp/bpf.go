package seccomp

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/net/bpf"
)

// Return values of a seccomp filter (include/uapi/linux/seccomp.h).
const (
	retKillProcess = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	retErrno       = 0x00050000 // SECCOMP_RET_ERRNO; the errno goes in the low 16 bits
	retAllow       = 0x7fff0000 // SECCOMP_RET_ALLOW
)

// Offsets into struct seccomp_data, which filters read as 32-bit words in the kernel's byte
// order. Both supported architectures are little-endian (the arch check rejects big-endian
// arm64), so an argument's low word is at its offset and its high word 4 bytes later.
const (
	offNr   = 0  // int nr
	offArch = 4  // __u32 arch
	offArgs = 16 // __u64 args[6]
)

// maxInsns is the kernel's limit on a classic BPF program (BPF_MAXINSNS).
const maxInsns = 4096

// x32Bit is __X32_SYSCALL_BIT: x86-64 syscall numbers with it set use the x32 ABI.
const x32Bit = 0x40000000

type archInfo struct {
	audit uint32 // AUDIT_ARCH_* value seccomp_data.arch must hold
	x32   bool   // whether x32 syscall numbers enter through this architecture
}

var arches = map[string]archInfo{
	"amd64": {audit: 0xc000003e, x32: true}, // AUDIT_ARCH_X86_64
	"arm64": {audit: 0xc00000b7},            // AUDIT_ARCH_AARCH64 (little-endian)
}

// Arches lists the GOARCH values [Program] supports.
func Arches() []string {
	return slices.Sorted(maps.Keys(arches))
}

//go:generate go run gen.go

// Program returns the filter for GOARCH arch ("amd64" or "arm64"), ready for [Install].
//
// It first kills the process if the call entered through another architecture (i386 int 0x80
// on amd64, AArch32 on arm64), answers ENOSYS to x32 calls on amd64, then finds the call's
// rules by binary search on the syscall number; calls without a matching rule are allowed.
//
// The program depends only on the table and the architecture, so it is compiled at
// development time: Program returns a copy of the one program_<arch>_gen.go holds, which
// TestPrecompiled checks equals what [Compile] makes of the table now (after a change to
// the table, run go generate ./internal/linux/seccomp).
func Program(arch string) ([]bpf.RawInstruction, error) {
	var prog []bpf.RawInstruction
	switch arch {
	case "amd64":
		prog = programAMD64
	case "arm64":
		prog = programARM64
	default:
		return nil, fmt.Errorf("seccomp program for %q: %w", arch, ErrUnsupportedArch)
	}
	return slices.Clone(prog), nil
}

// Compile builds the filter [Program] returns from the table, for GOARCH arch. Only the
// generator (gen.go) and the tests need it.
func Compile(arch string) ([]bpf.RawInstruction, error) {
	info, ok := arches[arch]
	if !ok {
		return nil, fmt.Errorf("seccomp program for %q: %w", arch, ErrUnsupportedArch)
	}
	insns, err := compile(info, sysnums[arch], table)
	if err != nil {
		return nil, fmt.Errorf("seccomp program for %s: %w", arch, err)
	}
	raw, err := bpf.Assemble(insns)
	if err != nil {
		return nil, fmt.Errorf("seccomp program for %s: assemble: %w (bug)", arch, err)
	}
	return raw, nil
}

// block is the rules of one syscall on one architecture.
type block struct {
	nr    uint32
	rules []Rule
}

// validate checks one rule; nums is the architecture's syscall table.
func validate(r Rule, nums map[string]int) error {
	if _, ok := nums[r.Syscall]; !ok {
		return fmt.Errorf("%w: syscall %q has no number for this architecture (add it to sysnums, or mark it absent)", ErrInvalidRule, r.Syscall)
	}
	if r.Reason == "" || strings.ContainsAny(r.Reason, "\r\n") {
		return fmt.Errorf("%w: %s: reason must be one non-empty line", ErrInvalidRule, r.Syscall)
	}
	if r.Errno == 0 || r.Errno > 4095 {
		return fmt.Errorf("%w: %s: errno %d out of range 1..4095", ErrInvalidRule, r.Syscall, r.Errno)
	}
	for _, m := range r.Args {
		if m.Index < 0 || m.Index > 5 {
			return fmt.Errorf("%w: %s: argument index %d out of range 0..5", ErrInvalidRule, r.Syscall, m.Index)
		}
		if len(m.Values) == 0 {
			return fmt.Errorf("%w: %s: %s has no values", ErrInvalidRule, r.Syscall, m)
		}
		switch m.Op {
		case In, NotIn:
			for _, v := range m.Values {
				if m.Mask != 0 && v&^m.Mask != 0 {
					return fmt.Errorf("%w: %s: %s: value %#x has bits outside the mask", ErrInvalidRule, r.Syscall, m, v)
				}
			}
		case AnyBit:
			if m.Mask != 0 {
				return fmt.Errorf("%w: %s: %s: AnyBit takes no mask", ErrInvalidRule, r.Syscall, m)
			}
			if slices.Contains(m.Values, 0) {
				return fmt.Errorf("%w: %s: %s: a zero flag never matches", ErrInvalidRule, r.Syscall, m)
			}
		default:
			return fmt.Errorf("%w: %s: unknown op %d", ErrInvalidRule, r.Syscall, m.Op)
		}
	}
	return nil
}

// blocks groups the rules by syscall number, dropping syscalls the architecture lacks.
func blocks(nums map[string]int, rules []Rule) ([]block, error) {
	byNr := make(map[uint32]*block)
	for _, r := range rules {
		if err := validate(r, nums); err != nil {
			return nil, err
		}
		n := nums[r.Syscall]
		if n == absent {
			continue
		}
		if n < 0 || n >= x32Bit {
			return nil, fmt.Errorf("%w: %s: syscall number %d out of range", ErrInvalidRule, r.Syscall, n)
		}
		b := byNr[uint32(n)]
		if b == nil {
			b = &block{nr: uint32(n)}
			byNr[uint32(n)] = b
		}
		if len(b.rules) > 0 {
			if prev := b.rules[len(b.rules)-1]; prev.Syscall != r.Syscall {
				return nil, fmt.Errorf("%w: %s and %s share number %d", ErrInvalidRule, prev.Syscall, r.Syscall, n)
			} else if len(prev.Args) == 0 {
				return nil, fmt.Errorf("%w: %s: rule after an unconditional one is unreachable", ErrInvalidRule, r.Syscall)
			}
		}
		b.rules = append(b.rules, r)
	}
	out := make([]block, 0, len(byNr))
	for _, b := range byNr {
		out = append(out, *b)
	}
	slices.SortFunc(out, func(x, y block) int { return cmp.Compare(x.nr, y.nr) })
	return out, nil
}

// leafSize is how many syscalls a leaf of the search tree tests one by one.
const leafSize = 4

// compile turns rules into a filter program for one architecture.
func compile(info archInfo, nums map[string]int, rules []Rule) ([]bpf.Instruction, error) {
	bs, err := blocks(nums, rules)
	if err != nil {
		return nil, err
	}
	var a asm
	archOK, kill := a.newLabel(), a.newLabel()
	a.emit(bpf.LoadAbsolute{Off: offArch, Size: 4})
	a.jumpIf(bpf.JumpEqual, info.audit, archOK, kill)
	a.mark(kill)
	a.emit(bpf.RetConstant{Val: retKillProcess})
	a.mark(archOK)
	a.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
	if info.x32 {
		// ENOSYS, not kill: it is what kernels without x32 support (most distributions')
		// answer, so a probing program behaves as it would on a stock host, and the call
		// never runs either way.
		native := a.newLabel()
		a.jumpIf(bpf.JumpBitsSet, x32Bit, a.ret(retErrno|uint32(ENOSYS)), native)
		a.mark(native)
	}
	a.search(bs)
	a.endRets()
	insns, err := a.assemble()
	if err != nil {
		return nil, err
	}
	if len(insns) > maxInsns {
		return nil, fmt.Errorf("program has %d instructions, over the kernel's limit of %d", len(insns), maxInsns)
	}
	return insns, nil
}

// search dispatches on the syscall number in A to the blocks' rules. Every path through what
// it emits ends in a return, so code that follows is reached only by jumps.
func (a *asm) search(bs []block) {
	if len(bs) <= leafSize {
		// A mismatch on the leaf's last number, and a match on a number whose rule is
		// unconditional, jump straight to a return the whole program shares (asm.ret):
		// fewer instructions for the kernel to check, translate and JIT.
		for i, b := range bs {
			last := i == len(bs)-1
			next := a.ret(retAllow)
			if !last {
				next = a.newLabel()
			}
			if r := b.rules[0]; len(r.Args) == 0 {
				a.jumpIf(bpf.JumpEqual, b.nr, a.ret(retErrno|uint32(r.Errno)), next)
			} else {
				match := a.newLabel()
				a.jumpIf(bpf.JumpEqual, b.nr, match, next)
				a.mark(match)
				a.rules(b.rules)
			}
			if !last {
				a.mark(next)
			}
		}
		if len(bs) == 0 {
			a.emit(bpf.RetConstant{Val: retAllow})
		}
		return
	}
	mid := len(bs) / 2
	low, high := a.newLabel(), a.newLabel()
	a.jumpIf(bpf.JumpGreaterOrEqual, bs[mid].nr, high, low)
	a.mark(low)
	a.search(bs[:mid])
	a.mark(high)
	a.search(bs[mid:])
}

// rules emits one syscall's rules in order; the first that matches returns its errno, and if
// none does the call is allowed. It overwrites A, and always returns.
func (a *asm) rules(rs []Rule) {
	for _, r := range rs {
		if len(r.Args) == 0 {
			a.emit(bpf.RetConstant{Val: retErrno | uint32(r.Errno)})
			return // validate made this the syscall's last rule
		}
		nextRule := a.newLabel()
		for _, m := range r.Args {
			a.emit(bpf.LoadAbsolute{Off: uint32(offArgs + 8*m.Index), Size: 4}) // low word only
			if m.Mask != 0 {
				a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: m.Mask})
			}
			holds := a.newLabel()
			switch m.Op {
			case In:
				for i, v := range m.Values {
					next := nextRule
					if i < len(m.Values)-1 {
						next = a.newLabel()
					}
					a.jumpIf(bpf.JumpEqual, v, holds, next)
					if next != nextRule {
						a.mark(next)
					}
				}
			case NotIn:
				for _, v := range m.Values {
					next := a.newLabel()
					a.jumpIf(bpf.JumpEqual, v, nextRule, next)
					a.mark(next)
				}
			case AnyBit:
				var flags uint32
				for _, v := range m.Values {
					flags |= v
				}
				a.jumpIf(bpf.JumpBitsSet, flags, holds, nextRule)
			}
			a.mark(holds)
		}
		a.emit(bpf.RetConstant{Val: retErrno | uint32(r.Errno)})
		a.mark(nextRule)
	}
	a.emit(bpf.RetConstant{Val: retAllow})
}
