package router

import (
	"context"
	"crypto/sha256"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/store"
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

// listCacheMax bounds the entries of one vhost's cache; past it expired
// entries are dropped, and if that is not enough, all of them.
const listCacheMax = 4096

type listCache struct {
	mu      sync.Mutex
	entries map[string]listCacheEntry
	// gen counts each backend's invalidations: a fetch that began before
	// one must not store what it got.
	gen    map[string]uint64
	flight singleflight.Group
	// pages counts each backend's entries for the status view, which
	// reads it without the lock; its keys are fixed at construction.
	pages map[string]*atomic.Int64
}

type listCacheEntry struct {
	page    *pageResult
	backend string
	expires time.Time
}

func newListCache(backends map[string]*Backend) *listCache {
	c := &listCache{entries: map[string]listCacheEntry{}, gen: map[string]uint64{}, pages: map[string]*atomic.Int64{}}
	for key := range backends {
		c.pages[key] = new(atomic.Int64)
	}
	return c
}

// held is the number of pages held for backend (0 for one not configured).
func (c *listCache) held(backend string) int64 {
	if n := c.pages[backend]; n != nil {
		return n.Load()
	}
	return 0
}

// count moves backend's page count by delta; c.mu is held.
func (c *listCache) count(backend string, delta int64) {
	if n := c.pages[backend]; n != nil {
		n.Add(delta)
	}
}

// listCacheKey identifies a page that may be shared between requests.
func listCacheKey(b *Backend, method, cursor string, hdr http.Header) string {
	base := b.Key + "\x00" + method + "\x00" + cursor
	if len(b.PassthroughHeaders) == 0 {
		return base // the backend is sent nothing of the client's
	}
	h := sha256.New()
	for _, name := range b.PassthroughHeaders {
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

// lookup returns the cached page for key if it is fresh.
func (c *listCache) lookup(key string) *pageResult {
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && time.Now().Before(e.expires) {
		return e.page
	}
	return nil
}

// page returns the cached page for key, or fetches it (once for all
// concurrent callers) and caches it if it succeeded.
func (c *listCache) page(key, backend string, ttl time.Duration, fetch func() *pageResult) *pageResult {
	if p := c.lookup(key); p != nil {
		return p
	}
	v, _, _ := c.flight.Do(key, func() (any, error) {
		c.mu.Lock()
		gen := c.gen[backend]
		c.mu.Unlock()
		p := fetch()
		if p.queried && !p.failed {
			c.put(key, gen, listCacheEntry{page: p, backend: backend, expires: time.Now().Add(ttl)})
		}
		return p, nil
	})
	return v.(*pageResult)
}

func (c *listCache) put(key string, gen uint64, e listCacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen[e.backend] != gen {
		return // invalidated while it was fetched
	}
	if len(c.entries) >= listCacheMax {
		now := time.Now()
		for k, old := range c.entries {
			if !now.Before(old.expires) {
				delete(c.entries, k)
				c.count(old.backend, -1)
			}
		}
		if len(c.entries) >= listCacheMax {
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

// invalidate drops every page of one backend.
func (c *listCache) invalidate(backend string) {
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

// cachedPage looks the backend's page up in its list cache: a hit costs
// no goroutine. ck is the page's cache key, "" when the backend's pages
// are not cached; listCached takes it on a miss.
func (r *Router) cachedPage(v *vhost, c *Call, op listOp, key, cursor string) (p *pageResult, ck string) {
	b := v.backends[key]
	if b.ListCacheTTL <= 0 || !c.peer.backends[key].OK() {
		return nil, ""
	}
	ck = listCacheKey(b, op.method, cursor, c.Header)
	p = v.lists.lookup(ck)
	if h := v.health[key]; p != nil {
		h.cacheHits.Add(1)
	} else {
		h.cacheMisses.Add(1)
	}
	if o, ok := r.opts.Observer.(ListCacheObserver); ok {
		o.ListCacheLookup(v.name, key, p != nil)
	}
	return p, ck
}

// listCached is listOne through the backend's list cache under key ck
// (from cachedPage; "" for a backend without one).
func (r *Router) listCached(ctx context.Context, v *vhost, c *Call, op listOp, key, cursor, ck string) *pageResult {
	if ck == "" {
		return r.listOne(ctx, v, c, op, key, cursor)
	}
	return v.lists.page(ck, key, v.backends[key].ListCacheTTL, func() *pageResult {
		// Shared by every caller waiting on this key: not cancelled by
		// the first one leaving (the backend timeout still bounds it).
		p := r.listOne(context.WithoutCancel(ctx), v, c, op, key, cursor)
		if p.queried && !p.failed {
			// Rename once for every request the entry serves; a page
			// that cannot be renamed is left to fail in the merge.
			p.named, _ = r.renameAll(v, op, key, p.items)
		}
		return p
	})
}

// listChanged drops a backend's cached pages on every instance: a
// listener of this instance saw it announce a list change.
func (r *Router) listChanged(ctx context.Context, vhostName, key string) {
	r.dropListCache(vhostName, key)
	if err := r.opts.Store.Publish(ctx, storeListChanged(vhostName, key)); err != nil {
		r.log.Warn("publishing a list change failed", "error", err)
	}
}

func storeListChanged(vhostName, key string) store.BusMessage {
	return store.BusMessage{Kind: store.BusListChanged, ID: vhostName + "/" + key}
}

func (r *Router) dropListCache(vhostName, key string) {
	if v, ok := r.table.Load().vhosts[vhostName]; ok {
		v.lists.invalidate(key)
		if h := v.health[key]; h != nil {
			h.cacheDropped.Store(time.Now().UnixNano())
		}
		v.schemas.invalidate(key)
	}
}
