//go:build linux

package fusemask

import (
	"fmt"
	"testing"
)

// TestRecordBounds: repeats are dropped, each hidden path reports at most
// MaxPerHidden and all of them at most MaxDenials, and the accesses left out are
// counted by hidden path, so a flood below one can't hide a later read below another.
func TestRecordBounds(t *testing.T) {
	c := &Conn{
		events:       make(chan Denial, MaxDenials),
		seen:         map[string]struct{}{},
		perHidden:    map[string]int{},
		unreportedAt: map[string]int{},
	}
	hidden := func(i int) string { return fmt.Sprintf("/home/u/.secret%d", i) }
	const masks, each = 20, 100
	for i := range masks {
		for j := range each {
			d := Denial{Op: OpRead, Path: fmt.Sprintf("%s/k%d", hidden(i), j), Hidden: hidden(i), Rule: "r"}
			c.record(d)
			c.record(d) // a repeat
		}
	}
	if n := len(c.events); n != MaxDenials {
		t.Fatalf("%d denials reported, want %d", n, MaxDenials)
	}
	per := map[string]int{}
	for range MaxDenials {
		per[(<-c.events).Hidden]++
	}
	total := 0
	for _, u := range c.unreported {
		total += u.Count
	}
	if want := 2 * (masks*each - MaxDenials); total != want { // each access twice
		t.Fatalf("%d counted unreported, want %d: %+v", total, want, c.unreported)
	}
	for i := range masks {
		h := hidden(i)
		var left int
		if k, ok := c.unreportedAt[h]; ok {
			left = c.unreported[k].Count
		}
		if per[h] > MaxPerHidden || 2*per[h]+left != 2*each {
			t.Errorf("%s: %d reported and %d counted, want at most %d and %d in all", h, per[h], left, MaxPerHidden, each)
		}
	}
	// The bound is reached: a read of a new hidden path is still counted.
	c.record(Denial{Op: OpRead, Path: "/home/u/.ssh/id_rsa", Hidden: "/home/u/.ssh", Rule: "credential store"})
	last := c.unreported[len(c.unreported)-1]
	if last != (Unreported{"/home/u/.ssh", "credential store", 1}) {
		t.Errorf("a read past the bound went uncounted: %+v", last)
	}
}
