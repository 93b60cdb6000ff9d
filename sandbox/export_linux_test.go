//go:build linux

package sandbox

// UsePlainMasks makes c's sandbox cover hidden paths with plain masks, as where the
// FUSE device can't be opened: init is given a device path that doesn't exist.
func UsePlainMasks(c *Cmd) { c.fuseDevice = "/nonexistent/moat-test-fuse" }

// StopFUSE stops serving c's FUSE masks, as if the server had died, and reports
// whether there was one.
func StopFUSE(c *Cmd) bool {
	p, ok := c.proc.(*netProcess)
	if !ok || p.fuse == nil {
		return false
	}
	p.fuse.conn.Close()
	return true
}
