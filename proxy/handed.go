package proxy

import (
	"container/list"
	"net/netip"
	"sync"
)

const (
	maxHandedAddrs    = 4096 // addresses remembered, least recently handed out dropped first
	maxNamesPerAddr   = 8    // names remembered per address (CDN addresses serve many)
	maxAnswersPerName = 8    // addresses the DNS stub answers per name and type
)

// handouts remembers which names the DNS stub answered with which addresses, so a
// client that resolved through the stub and then asks the proxy for the address
// is checked as the name. Bounded: an address forgotten is checked as a literal.
type handouts struct {
	mu     sync.Mutex
	byAddr map[netip.Addr]*list.Element // of *handout
	lru    list.List                    // front: most recently handed out
}

type handout struct {
	addr  netip.Addr
	names []string // most recent first
}

func (h *handouts) add(name string, addrs []netip.Addr) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byAddr == nil {
		h.byAddr = map[netip.Addr]*list.Element{}
	}
	for _, a := range addrs {
		a = a.Unmap()
		e, ok := h.byAddr[a]
		if !ok {
			e = h.lru.PushFront(&handout{addr: a})
			h.byAddr[a] = e
		}
		h.lru.MoveToFront(e)
		ho := e.Value.(*handout)
		names := []string{name}
		for _, n := range ho.names {
			if n != name && len(names) < maxNamesPerAddr {
				names = append(names, n)
			}
		}
		ho.names = names
	}
	for h.lru.Len() > maxHandedAddrs {
		e := h.lru.Back()
		h.lru.Remove(e)
		delete(h.byAddr, e.Value.(*handout).addr)
	}
}

// names returns the names a was handed out for, most recent first.
func (h *handouts) names(a netip.Addr) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.byAddr[a.Unmap()]; ok {
		return append([]string(nil), e.Value.(*handout).names...)
	}
	return nil
}
