// Package listcache is a per-instance cache of backends' list pages,
// shared between requests: keyed by backend, method, cursor and the
// client headers the backend is sent, dropped per backend, one fetch for
// concurrent misses. It holds any page type and knows nothing of MCP.
package listcache

import (
	"crypto/sha256"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// A list fan-out opens a connection to every backend of the vhost for
// every page, and with per-request backend sessions each of those is a
// handshake, the list call and a DELETE: on a vhost of eight backends a
// tools/list costs the backends 32 exchanges. Most backends' lists change
// rarely and say so with list_changed, so a backend may opt in to a short
// per-instance cache of its pages (list_cache in the config).
//
// What may be shared decides the key: one backend, one list method, one
// backend cursor, and the exact values of the headers the backend is sent
// from the client's request (passthrough_headers), hashed. A backend that
// tells users apart by a passed-through token therefore gets one entry per
// token; a backend whose lists depend on anything else about the session
// must not enable the cache.
//
// The cache is per gateway instance and holds no session state: losing it
// costs one fetch. Entries end at their TTL, when this instance's listener
// for the backend sees a list_changed (and tells the other instances over
// the bus), and with the routing table on a config reload. Concurrent
// misses for one key share one backend request.

// Max bounds the entries of one vhost's cache; past it expired entries
// are dropped, and if that is not enough, all of them.
const Max = 4096

// Cache is one vhost's cache of pages of type P. It is safe for
// concurrent use.
type Cache[P any] struct {
	mu      sync.Mutex
	entries map[string]entry[P]
	// gen counts each backend's invalidations: a fetch that began before
	// one must not store what it got.
	gen    map[string]uint64
	flight singleflight.Group
	// pages counts each backend's entries for the status view, which
	// reads it without the lock; its keys are fixed at construction.
	pages map[string]*atomic.Int64
	// sizes remembers how many items each backend's latest page of a
	// method held (SizeHint), cached or not.
	sizes sync.Map // backend + "\x00" + method -> *atomic.Int64
}

type entry[P any] struct {
	page    P
	backend string
	expires time.Time
}

// New is an empty cache for the given backends' pages.
func New[P any](backends []string) *Cache[P] {
	c := &Cache[P]{entries: map[string]entry[P]{}, gen: map[string]uint64{}, pages: map[string]*atomic.Int64{}}
	for _, key := range backends {
		c.pages[key] = new(atomic.Int64)
	}
	return c
}

// Held is the number of pages held for backend (0 for one not configured).
func (c *Cache[P]) Held(backend string) int64 {
	if n := c.pages[backend]; n != nil {
		return n.Load()
	}
	return 0
}

// count moves backend's page count by delta; c.mu is held.
func (c *Cache[P]) count(backend string, delta int64) {
	if n := c.pages[backend]; n != nil {
		n.Add(delta)
	}
}

// A walk over a vhost of many large backends needs only as many of
// them per gateway page as fill it; which ones is known only from their
// answers. The cache therefore also remembers, for every backend and
// method, how many items the backend's latest page held: a guess for the
// next page's size that a list uses to ask only the backends it expects
// to need (and asks the rest when the guess was short).

// NoteSize records that backend's latest page of method held n items.
func (c *Cache[P]) NoteSize(backend, method string, n int) {
	k := backend + "\x00" + method
	v, ok := c.sizes.Load(k)
	if !ok {
		v, _ = c.sizes.LoadOrStore(k, new(atomic.Int64))
	}
	v.(*atomic.Int64).Store(int64(n))
}

// SizeHint is the item count NoteSize last recorded for backend's pages
// of method; ok is false before any.
func (c *Cache[P]) SizeHint(backend, method string) (n int, ok bool) {
	v, ok := c.sizes.Load(backend + "\x00" + method)
	if !ok {
		return 0, false
	}
	return int(v.(*atomic.Int64).Load()), true
}

// Key identifies a page that may be shared between requests: backend's,
// of method at cursor, for a client whose passthrough headers (the ones
// the backend is sent) have these values in hdr.
func Key(backend, method, cursor string, passthrough []string, hdr http.Header) string {
	base := backend + "\x00" + method + "\x00" + cursor
	if len(passthrough) == 0 {
		return base // the backend is sent nothing of the client's
	}
	h := sha256.New()
	for _, name := range passthrough {
		for _, v := range hdr.Values(name) {
			h.Write([]byte(name))
			h.Write([]byte{0})
			h.Write([]byte(v))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	return base + "\x00" + string(h.Sum(nil))
}

// Lookup returns the cached page for key if it is fresh.
func (c *Cache[P]) Lookup(key string) (page P, ok bool) {
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && time.Now().Before(e.expires) {
		return e.page, true
	}
	return page, false
}

// Page returns the cached page for key, or fetches it (once for all
// concurrent callers) and caches it for ttl when fetch says it may (a
// page the backend answered).
func (c *Cache[P]) Page(key, backend string, ttl time.Duration, fetch func() (page P, keep bool)) P {
	if p, ok := c.Lookup(key); ok {
		return p
	}
	v, _, _ := c.flight.Do(key, func() (any, error) {
		// A miss that reached the flight just after another flight stored
		// the page (its Lookup came before the store, its Do after the
		// flight ended) finds it here, rather than fetching it again.
		if p, ok := c.Lookup(key); ok {
			return p, nil
		}
		c.mu.Lock()
		gen := c.gen[backend]
		c.mu.Unlock()
		p, keep := fetch()
		if keep {
			c.put(key, gen, entry[P]{page: p, backend: backend, expires: time.Now().Add(ttl)})
		}
		return p, nil
	})
	return v.(P)
}

func (c *Cache[P]) put(key string, gen uint64, e entry[P]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen[e.backend] != gen {
		return // invalidated while it was fetched
	}
	if len(c.entries) >= Max {
		now := time.Now()
		for k, old := range c.entries {
			if !now.Before(old.expires) {
				delete(c.entries, k)
				c.count(old.backend, -1)
			}
		}
		if len(c.entries) >= Max {
			clear(c.entries)
			for _, n := range c.pages {
				n.Store(0)
			}
		}
	}
	if old, ok := c.entries[key]; ok {
		c.count(old.backend, -1)
	}
	c.entries[key] = e
	c.count(e.backend, 1)
}

// Invalidate drops every page of one backend; a fetch under way when it
// is called stores nothing.
func (c *Cache[P]) Invalidate(backend string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen[backend]++
	for k, e := range c.entries {
		if e.backend == backend {
			delete(c.entries, k)
			c.count(backend, -1)
		}
	}
}
