package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// label names a position in a program under construction; jumps target labels, not offsets.
type label int

// asm builds a classic BPF program with forward jumps to labels. Conditional jumps in cBPF
// skip at most 255 instructions; asm resolves each one to the shortest form that reaches its
// targets, adding unconditional jumps (32-bit offsets) where a target is farther away, so
// programs stay correct however large the table grows.
type asm struct {
	items  []item
	labels int
	rets   []retLabel // shared returns, emitted by endRets
}

// retLabel is a label on a shared "return val" instruction.
type retLabel struct {
	val uint32
	l   label
}

type itemKind uint8

const (
	kPlain itemKind = iota // a non-jump instruction
	kCond                  // conditional jump to t if the test holds, else to f
	kMark                  // defines a label here; emits nothing
)

type item struct {
	kind itemKind
	ins  bpf.Instruction // kPlain
	cond bpf.JumpTest    // kCond: JumpEqual, JumpGreaterOrEqual, JumpGreaterThan or JumpBitsSet
	val  uint32          // kCond
	t, f label           // kCond: targets; kMark: t is the label defined
	size int             // kCond: 1, 2 or 3 instructions once resolved
	far  bool            // kCond with size 2: true if t is reached by the trailing ja, false if f is
}

const maxSkip = 255 // a conditional jump's reach, in instructions

func (a *asm) newLabel() label { a.labels++; return label(a.labels) }

// ret returns a label on an instruction that returns val, shared by every jump to
// it; endRets places those instructions.
func (a *asm) ret(val uint32) label {
	for _, r := range a.rets {
		if r.val == val {
			return r.l
		}
	}
	l := a.newLabel()
	a.rets = append(a.rets, retLabel{val, l})
	return l
}

// endRets emits the shared returns asked for with ret.
func (a *asm) endRets() {
	for _, r := range a.rets {
		a.mark(r.l)
		a.emit(bpf.RetConstant{Val: r.val})
	}
}

func (a *asm) emit(ins bpf.Instruction) { a.items = append(a.items, item{kind: kPlain, ins: ins}) }

func (a *asm) mark(l label) { a.items = append(a.items, item{kind: kMark, t: l}) }

// jumpIf jumps to t if A <cond> val holds, else to f. Both labels must be marked later.
func (a *asm) jumpIf(cond bpf.JumpTest, val uint32, t, f label) {
	a.items = append(a.items, item{kind: kCond, cond: cond, val: val, t: t, f: f, size: 1})
}

// layout returns the program position of each item and of each label (labels are
// 1 to a.labels, so a slice indexes them).
func (a *asm) layout() (pos []int, at []int) {
	pos = make([]int, len(a.items))
	at = make([]int, a.labels+1)
	p := 0
	for i, it := range a.items {
		pos[i] = p
		switch it.kind {
		case kPlain:
			p++
		case kCond:
			p += it.size
		case kMark:
			at[it.t] = p
		}
	}
	return pos, at
}

func near(d int) bool { return d >= 0 && d <= maxSkip }

// fits reports whether a conditional jump at p of the given size (and, for size 2, form)
// reaches targets t and f. Offsets count from the instruction after the jump.
func fits(size int, far bool, p, t, f int) bool {
	switch size {
	case 1: // jxx t, f
		return near(t-p-1) && near(f-p-1)
	case 2:
		if far { // jxx 0, f; ja t
			return near(f-p-1) && t >= p+2
		}
		// jxx t, 0; ja f
		return near(t-p-1) && f >= p+2
	case 3: // jxx 0, 1; ja t; ja f
		return t >= p+3 && f >= p+3
	}
	return false
}

// assemble resolves labels and returns the program.
func (a *asm) assemble() ([]bpf.Instruction, error) {
	marked := make([]bool, a.labels+1)
	for _, it := range a.items {
		if it.kind == kMark {
			if marked[it.t] {
				return nil, fmt.Errorf("assemble: label %d marked twice (bug)", it.t)
			}
			marked[it.t] = true
		}
	}
	for _, it := range a.items {
		if it.kind == kCond && (!marked[it.t] || !marked[it.f]) {
			return nil, fmt.Errorf("assemble: jump to an unmarked label (bug)")
		}
	}
	// Grow jumps until every one reaches its targets. Sizes only grow, so this ends.
	for changed := true; changed; {
		changed = false
		pos, at := a.layout()
		for i := range a.items {
			it := &a.items[i]
			if it.kind != kCond {
				continue
			}
			p, t, f := pos[i], at[it.t], at[it.f]
			if t <= p || f <= p {
				return nil, fmt.Errorf("assemble: backward jump at instruction %d (bug)", p)
			}
			if fits(it.size, it.far, p, t, f) {
				continue
			}
			switch {
			case it.size < 2 && fits(2, false, p, t, f):
				it.size, it.far = 2, false
			case it.size < 2 && fits(2, true, p, t, f):
				it.size, it.far = 2, true
			case it.size == 2 && fits(2, !it.far, p, t, f):
				it.far = !it.far // both forms have size 2; offsets were fine before the shift
			default:
				it.size = 3
			}
			changed = true
		}
	}
	pos, at := a.layout()
	out := make([]bpf.Instruction, 0, len(a.items))
	for i, it := range a.items {
		switch it.kind {
		case kPlain:
			out = append(out, it.ins)
		case kCond:
			p, t, f := pos[i], at[it.t], at[it.f]
			switch {
			case it.size == 1:
				out = append(out, bpf.JumpIf{Cond: it.cond, Val: it.val, SkipTrue: uint8(t - p - 1), SkipFalse: uint8(f - p - 1)})
			case it.size == 2 && it.far:
				out = append(out,
					bpf.JumpIf{Cond: it.cond, Val: it.val, SkipTrue: 0, SkipFalse: uint8(f - p - 1)},
					bpf.Jump{Skip: uint32(t - p - 2)})
			case it.size == 2:
				out = append(out,
					bpf.JumpIf{Cond: it.cond, Val: it.val, SkipTrue: uint8(t - p - 1), SkipFalse: 0},
					bpf.Jump{Skip: uint32(f - p - 2)})
			default:
				out = append(out,
					bpf.JumpIf{Cond: it.cond, Val: it.val, SkipTrue: 0, SkipFalse: 1},
					bpf.Jump{Skip: uint32(t - p - 2)},
					bpf.Jump{Skip: uint32(f - p - 3)})
			}
		}
	}
	for i, it := range a.items {
		if it.kind == kCond && !fits(it.size, it.far, pos[i], at[it.t], at[it.f]) {
			return nil, fmt.Errorf("assemble: jump at instruction %d out of reach (bug)", pos[i])
		}
	}
	return out, nil
}
