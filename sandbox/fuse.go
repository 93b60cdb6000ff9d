package sandbox

import (
	"time"

	"github.com/moat-sandbox/moat/internal/linux/fusemask"
	"github.com/moat-sandbox/moat/internal/spec"
)

// FileEvent is one line of a run's event log: an access to a path the policy hides.
// The access got what it gets without the event: a hidden directory looks empty,
// a hidden file reads as empty.
type FileEvent struct {
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"`   // always "fs"
	Action string    `json:"action"` // always "deny"
	// Op is "read" (a hidden file opened, or a name looked up in a hidden
	// directory: ~/.ssh/id_rsa in a hidden ~/.ssh) or "list" (a hidden directory
	// listed).
	Op   string `json:"op"`
	Path string `json:"path,omitempty"`
	// Hidden is the hidden path that covers Path: Path itself, or a directory
	// above it.
	Hidden string `json:"hidden,omitempty"`
	Rule   string `json:"rule,omitempty"` // why Hidden is hidden
	Hint   string `json:"hint,omitempty"` // how to let the command read Path, when a setting can
	// Count, on the last events of a run with more accesses to a hidden path than
	// are reported (64 distinct ones per hidden path, 1024 in all), is how many
	// more there were to Hidden and below; Path is empty then, and Detail says so.
	Count  int    `json:"count,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// fuseSpec is spec.Spec.FUSE: the FUSE device, when someone listens for file events
// and the plan hides something.
func (c *Cmd) fuseSpec(mounts []spec.Mount) string {
	if c.FileEvents == nil {
		return ""
	}
	for _, m := range mounts {
		if fusemask.IsMask(m) {
			if c.fuseDevice != "" {
				return c.fuseDevice
			}
			return fusemask.Device
		}
	}
	return ""
}

// fileEvent turns a denial the FUSE masks saw into a FileEvent.
func (c *Cmd) fileEvent(d fusemask.Denial) FileEvent {
	ev := FileEvent{Time: time.Now(), Kind: "fs", Action: "deny", Op: d.Op, Path: d.Path, Hidden: d.Hidden, Rule: d.Rule}
	pol := c.explain
	if pol == nil {
		pol = c.Policy
	}
	if v := pol.ExplainPath(d.Path); !v.Read {
		ev.Hint = v.ReadHint
	}
	return ev
}
