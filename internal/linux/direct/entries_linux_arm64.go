package direct

import "github.com/moat-sandbox/moat/internal/linux/connbroker"

// decodeLegacy: arm64 has only the *at path calls.
func decodeLegacy(n *connbroker.Notif) (call, bool) { return call{}, false }
