package seccomp

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
)

// TestAsmJumpForms checks each way asm can encode a conditional jump, by placing the targets
// near or beyond the 255-instruction reach of cBPF's conditional jumps.
func TestAsmJumpForms(t *testing.T) {
	filler := func(a *asm, n int) {
		for range n {
			a.emit(bpf.LoadConstant{Dst: bpf.RegX, Val: 7})
		}
	}
	for _, tc := range []struct {
		name          string
		beforeT       int  // filler between the jump and the first target
		betweenTF     int  // filler between the first and the second target
		falseFirst    bool // the false target comes first
		wantJumpInsns int  // instructions the conditional jump became
	}{
		{name: "both near", beforeT: 10, betweenTF: 10, wantJumpInsns: 1},
		{name: "both at the limit", beforeT: 254, betweenTF: 0, wantJumpInsns: 1},
		{name: "true far", beforeT: 0, betweenTF: 300, falseFirst: true, wantJumpInsns: 2},
		{name: "false far", beforeT: 0, betweenTF: 300, wantJumpInsns: 2},
		{name: "both far", beforeT: 300, betweenTF: 300, wantJumpInsns: 3},
		{name: "false at the limit", beforeT: 0, betweenTF: 254, wantJumpInsns: 1},
		{name: "false just past the limit", beforeT: 0, betweenTF: 255, wantJumpInsns: 2},
		{name: "true just past the limit", beforeT: 0, betweenTF: 255, falseFirst: true, wantJumpInsns: 2},
		{name: "first target far, second farther", beforeT: 300, betweenTF: 0, falseFirst: true, wantJumpInsns: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a asm
			tl, fl := a.newLabel(), a.newLabel()
			a.emit(bpf.LoadAbsolute{Off: 0, Size: 4})
			a.jumpIf(bpf.JumpEqual, 1, tl, fl)
			first, second, firstRet, secondRet := tl, fl, uint32(100), uint32(200)
			if tc.falseFirst {
				first, second, firstRet, secondRet = fl, tl, 200, 100
			}
			filler(&a, tc.beforeT)
			a.mark(first)
			a.emit(bpf.RetConstant{Val: firstRet})
			filler(&a, tc.betweenTF)
			a.mark(second)
			a.emit(bpf.RetConstant{Val: secondRet})
			insns, err := a.assemble()
			if err != nil {
				t.Fatal(err)
			}
			if got := len(insns) - 3 - tc.beforeT - tc.betweenTF; got != tc.wantJumpInsns {
				t.Errorf("jump took %d instructions, want %d", got, tc.wantJumpInsns)
			}
			m := newVM(t, insns)
			for in, want := range map[uint32]int{1: 100, 0: 200, 2: 200} {
				b := make([]byte, 4)
				binary.BigEndian.PutUint32(b, in)
				got, err := m.Run(b)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("A=%d: returned %d, want %d", in, got, want)
				}
			}
		})
	}
}

func TestAsmRejectsBadLabels(t *testing.T) {
	var a asm
	l := a.newLabel()
	a.mark(l)
	a.emit(bpf.LoadAbsolute{Off: 0, Size: 4})
	a.jumpIf(bpf.JumpEqual, 1, l, l)
	if _, err := a.assemble(); err == nil {
		t.Error("backward jump assembled")
	}
	var b asm
	b.jumpIf(bpf.JumpEqual, 1, b.newLabel(), b.newLabel())
	b.emit(bpf.RetConstant{})
	if _, err := b.assemble(); err == nil {
		t.Error("jump to unmarked labels assembled")
	}
}

// TestAsmSharedReturns checks that jumps to the same ret label share one instruction.
func TestAsmSharedReturns(t *testing.T) {
	var a asm
	next := a.newLabel()
	a.emit(bpf.LoadAbsolute{Off: 0, Size: 4})
	a.jumpIf(bpf.JumpEqual, 1, a.ret(10), next)
	a.mark(next)
	a.jumpIf(bpf.JumpEqual, 2, a.ret(10), a.ret(20))
	a.endRets()
	insns, err := a.assemble()
	if err != nil {
		t.Fatal(err)
	}
	if len(insns) != 5 {
		t.Fatalf("%d instructions, want 5 (a load, two jumps, two returns): %v", len(insns), insns)
	}
	m := newVM(t, insns)
	for in, want := range map[uint32]uint32{1: 10, 2: 10, 3: 20} {
		b := make([]byte, 64)
		binary.BigEndian.PutUint32(b, in)
		if got, err := m.Run(b); err != nil || uint32(got) != want {
			t.Errorf("input %d: got %d (%v), want %d", in, got, err, want)
		}
	}
}
