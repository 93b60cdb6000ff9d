//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"time"

	"github.com/moat-sandbox/moat/internal/linux/fusemask"
	"github.com/moat-sandbox/moat/internal/linux/launch"
	"github.com/moat-sandbox/moat/internal/spec"
)

// fuseServer serves a sandbox's FUSE masks and passes what they see to FileEvents.
type fuseServer struct {
	c    *Cmd
	conn *fusemask.Conn
	mnt  *os.File // keeps the filesystem after init exits (launch.Process.FUSE)
}

// serveFUSE takes init's first message when the spec asks for FUSE masks and serves
// them. It returns nil when there is nothing to serve: not asked for, or init
// couldn't mount them and covers the hidden paths with plain masks, which hide them
// the same; Debug says why. An error means init failed first.
func (c *Cmd) serveFUSE(p *launch.Process, s *spec.Spec) (*fuseServer, error) {
	if s.FUSE == "" {
		return nil, nil
	}
	dev, mnt, why, err := p.FUSE(s.Net == nil)
	if err != nil {
		return nil, err
	}
	if dev == nil {
		c.debugf("filesystem denial events unavailable: %s; the hidden paths are hidden all the same, but reads of them are not reported", why)
		return nil, nil
	}
	t := fusemask.NewTree(s.Mounts)
	report := c.FileEvents
	conn := fusemask.Serve(dev, t, uint32(os.Getuid()), uint32(os.Getgid()), func(d fusemask.Denial) {
		if d.Op == fusemask.OpConnect && c.Events != nil {
			c.Events(socketEvent(d))
			return
		}
		report(c.fileEvent(d))
	})
	c.debugf("filesystem denial events: moat's FUSE masks cover the %d hidden paths and report each read of them", t.Masks())
	return &fuseServer{c: c, conn: conn, mnt: mnt}, nil
}

// close stops serving, after the sandbox has ended, once every event is reported;
// then it reports the accesses left unreported, a count per hidden path.
func (f *fuseServer) close() {
	if f == nil {
		return
	}
	left, err := f.conn.Close()
	// The filesystem's teardown takes a few hundred microseconds, which the
	// caller needn't wait for.
	go f.mnt.Close()
	for _, u := range left {
		f.c.FileEvents(FileEvent{Time: time.Now(), Kind: "fs", Action: "deny", Op: fusemask.OpRead,
			Hidden: u.Hidden, Rule: u.Rule, Count: u.Count,
			Detail: fmt.Sprintf("%d more accesses to %s and below were not reported: a run reports %d distinct ones per hidden path, %d in all",
				u.Count, u.Hidden, fusemask.MaxPerHidden, fusemask.MaxDenials)})
	}
	if err != nil {
		f.c.debugf("filesystem denial events: %v", err)
	}
}

// socketEvent turns an attempt to reach a hidden host socket, which the FUSE masks
// saw, into a network event like the direct mode's (brokerEvent).
func socketEvent(d fusemask.Denial) Event {
	return Event{Time: time.Now(), Kind: "net", Action: "deny", Proto: protoSocket, Host: d.Path, Addr: d.Path,
		Reason: reasonRefused, Rule: d.Rule, Hint: socketHint(d.Path),
		Detail: "the sandbox checked its permission to connect to (or stat) a host socket, which moat hides"}
}

func (c *Cmd) debugf(format string, a ...any) {
	if c.Debug != nil {
		fmt.Fprintf(c.Debug, "moat: debug: "+format+"\n", a...)
	}
}
