//go:build linux

package fusemask

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// Bounds on the distinct denials one connection reports: a command that looks up
// names in a hidden directory in a loop makes a new one each time. Repeats of a
// reported denial are dropped; accesses beyond a bound are counted per hidden path
// (repeats too: telling them apart would take memory without bound), so that a
// flood of made-up names can't make a later read go unnoticed: its hidden path's
// count says something more was tried there.
const (
	MaxDenials   = 1024 // in all
	MaxPerHidden = 64   // below one hidden path
)

// Unreported counts the accesses below one hidden path left unreported.
type Unreported struct {
	Hidden, Rule string
	Count        int
}

// readBuffer holds one request; the kernel refuses reads into less than 8 KiB plus
// max_write.
const readBuffer = 128<<10 + 4096

// Conn is one FUSE connection being served.
type Conn struct {
	dev       *os.File
	srv       *Server
	events    chan Denial
	seen      map[string]struct{}
	perHidden map[string]int
	// unreported, in order of first appearance; touched by the serving goroutine
	// only, read after it ends.
	unreported   []Unreported
	unreportedAt map[string]int
	served       chan struct{}
	delivered    chan struct{}
	err          error
	once         sync.Once
}

// Serve starts serving t on dev, the FUSE device of a mounted connection, opened
// non-blocking so that Close can stop the reads. The nodes belong to uid and gid.
// Each distinct denial is passed to report, in order, from one goroutine; report
// may block without slowing the server.
//
// When serving ends for any reason (Close, the sandbox's mounts gone, an error), dev
// is closed, which aborts the connection: every later access to a mask fails with
// ENOTCONN. The masks still cover the hidden paths; nothing of them is ever served.
func Serve(dev *os.File, t *Tree, uid, gid uint32, report func(Denial)) *Conn {
	c := &Conn{
		dev:          dev,
		events:       make(chan Denial, MaxDenials), // never full: record sends at most that many
		seen:         map[string]struct{}{},
		perHidden:    map[string]int{},
		unreportedAt: map[string]int{},
		served:       make(chan struct{}),
		delivered:    make(chan struct{}),
	}
	c.srv = NewServer(t, uid, gid, c.record)
	go func() {
		defer close(c.delivered)
		for d := range c.events {
			report(d)
		}
	}()
	go c.serve()
	return c
}

// record queues a denial not seen before, within the bounds, and counts those
// beyond.
func (c *Conn) record(d Denial) {
	key := d.Op + "\x00" + d.Path
	if _, ok := c.seen[key]; ok {
		return
	}
	if len(c.seen) >= MaxDenials || c.perHidden[d.Hidden] >= MaxPerHidden {
		i, ok := c.unreportedAt[d.Hidden]
		if !ok {
			// At most one entry per mask step, as d.Hidden is a step's path.
			i = len(c.unreported)
			c.unreportedAt[d.Hidden] = i
			c.unreported = append(c.unreported, Unreported{Hidden: d.Hidden, Rule: d.Rule})
		}
		c.unreported[i].Count++
		return
	}
	c.seen[key] = struct{}{}
	c.perHidden[d.Hidden]++
	c.events <- d
}

func (c *Conn) serve() {
	defer close(c.served)
	defer func() {
		if r := recover(); r != nil {
			c.err = fmt.Errorf("bug: FUSE mask server: %v", r)
		}
		c.dev.Close()
		close(c.events)
	}()
	buf := make([]byte, readBuffer)
	for {
		n, err := c.dev.Read(buf)
		switch {
		case err == nil:
		case errors.Is(err, syscall.EINTR), errors.Is(err, syscall.EAGAIN):
			continue
		case errors.Is(err, os.ErrClosed), errors.Is(err, syscall.ENODEV), errors.Is(err, io.EOF):
			return // Close, or the connection was unmounted or aborted
		default:
			c.err = fmt.Errorf("read FUSE request: %w", err)
			return
		}
		out := c.srv.Handle(buf[:n])
		if out == nil {
			continue
		}
		// ENOENT: the request was interrupted and is gone.
		if _, err := c.dev.Write(out); err != nil && !errors.Is(err, syscall.ENOENT) {
			if !errors.Is(err, os.ErrClosed) && !errors.Is(err, syscall.ENODEV) {
				c.err = fmt.Errorf("write FUSE reply: %w", err)
			}
			return
		}
	}
}

// Close stops serving, waits until every denial has been passed to report, and
// returns the counts of those left unreported, and what ended serving early, if
// anything did. It may be called more than once.
func (c *Conn) Close() ([]Unreported, error) {
	c.once.Do(func() {
		c.dev.Close()
		<-c.served
		<-c.delivered
	})
	return c.unreported, c.err
}
