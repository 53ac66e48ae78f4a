package router

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/sync/singleflight"
)

// A request of protocol 2026-07-28 has no session, so no snapshot of the
// backends stored at initialize: the gateway discovers each backend
// instead, modern first (server/discover), initialize as the fallback,
// and keeps what it learned per instance and vhost for the backend's
// ttlMs, at least DiscoveryMinTTL (a go-sdk backend says 0, which would
// cost a discover per request) and at most DiscoveryMaxTTL. It is a cache,
// never session state: losing it costs one discovery per backend.
//
// What a discovery yields is a snapshot like initialize's, so the rest of
// the router (capabilities, fast paths, re-probes) treats both
// generations alike: a modern backend's snapshot says protocol 2026-07-28
// and stateless, so every request to it is one exchange.

// Stale-while-revalidate (issue 36): an entry past its TTL still serves
// while one background refresh per backend and instance runs, so a
// request never waits on the discovery of a backend it does not use, nor
// on the refresh of one it does. A request waits only for backends it
// needs and of which nothing is known yet (ModernClient.peer says which). A
// refresh that fails keeps the entry it was refreshing (a healthy
// snapshot is not demoted by one failed probe, as for a session's
// requests), remembers the failure in the backend's status, and is tried
// again after ReprobeInterval: no request waits for it. A backend known
// only by a failure is re-probed by the requests that need it
// (withBackend), as before. On Lambda the refresh runs in the invocation
// that found the entry stale and, if the runtime freezes it there, in the
// next one; a refresh that fails that way changes nothing.

// discovery is one backend's cached discovery.
type discovery struct {
	snap    *store.BackendSnapshot
	ttlMs   int64 // the backend's own ttlMs (0 for a legacy backend)
	expires time.Time
	// refreshing: a background refresh of this entry is running.
	refreshing bool
}

// discoveryCache holds a vhost's discoveries; it dies with the routing table.
type discoveryCache struct {
	mu      sync.Mutex // never held across I/O
	entries map[string]discovery
	flight  singleflight.Group
}

func newDiscoveryCache() *discoveryCache {
	return &discoveryCache{entries: map[string]discovery{}}
}

// backendDiscovery returns backend key's discovery: what is known, fresh
// or stale (a stale one refreshed in the background), or, when nothing
// is, a probe's (once for every request waiting).
func (lk *backendLink) backendDiscovery(ctx context.Context, v *vhost, key string, hdr http.Header) discovery {
	found, missing := lk.knownDiscoveries(ctx, v, []string{key}, hdr)
	if len(missing) == 0 {
		return found[key]
	}
	return lk.probeDiscovery(ctx, v, key, hdr)
}

// knownDiscoveries returns the cached discovery of each of keys, fresh or
// stale, under one lock and with no goroutine unless one is stale, and
// the keys of which nothing is known. Each stale entry gets one
// background refresh (refreshDiscovery), started here.
func (lk *backendLink) knownDiscoveries(ctx context.Context, v *vhost, keys []string, hdr http.Header) (map[string]discovery, []string) {
	c := v.discovered
	now := time.Now()
	found := make(map[string]discovery, len(keys))
	var missing, stale []string
	c.mu.Lock()
	for _, key := range keys {
		d, ok := c.entries[key]
		switch {
		case !ok:
			missing = append(missing, key)
			continue
		case !now.Before(d.expires) && !d.refreshing:
			d.refreshing = true
			c.entries[key] = d
			stale = append(stale, key)
		}
		found[key] = d
	}
	c.mu.Unlock()
	for _, key := range stale {
		lk.refreshDiscovery(ctx, v, key, hdr)
	}
	return found, missing
}

// allDiscoveries returns every backend's discovery of the vhost, waiting
// for the probes of those of which nothing is known.
func (lk *backendLink) allDiscoveries(ctx context.Context, v *vhost, hdr http.Header) map[string]discovery {
	return lk.discoveries(ctx, v, hdr, nil)
}

// discoveries returns what is known of the vhost's backends. Of a backend
// of which nothing is known it waits for a probe when need is nil or
// need(key) holds; any other is probed in the background and left out, so
// a request never waits on a backend it does not use.
func (lk *backendLink) discoveries(ctx context.Context, v *vhost, hdr http.Header, need func(string) bool) map[string]discovery {
	found, missing := lk.knownDiscoveries(ctx, v, v.keys, hdr)
	if len(missing) == 0 {
		return found
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, key := range missing {
		if need != nil && !need(key) {
			lk.refreshDiscovery(ctx, v, key, hdr)
			continue
		}
		wg.Go(func() {
			d := lk.probeDiscovery(ctx, v, key, hdr)
			mu.Lock()
			found[key] = d
			mu.Unlock()
		})
	}
	wg.Wait()
	return found
}

// refreshDiscovery probes backend key in the background (probeDiscovery,
// detached from the request, which does not wait). Router.Close waits for
// it.
func (lk *backendLink) refreshDiscovery(ctx context.Context, v *vhost, key string, hdr http.Header) {
	if !lk.holdOpen() {
		return
	}
	ctx, hdr = context.WithoutCancel(ctx), hdr.Clone()
	go func() {
		defer lk.cleanup.Done()
		lk.probeDiscovery(ctx, v, key, hdr)
	}()
}

// probeDiscovery discovers backend key, once for every request waiting,
// and caches what it learned.
func (lk *backendLink) probeDiscovery(ctx context.Context, v *vhost, key string, hdr http.Header) discovery {
	c := v.discovered
	// Detached from the first caller: the result serves every waiter. A
	// backend whose requests carry per-caller credentials is discovered
	// with the credentials of the caller who found the cache empty (what
	// a backend speaks is the same for everyone), but waiters share a
	// flight only with their own principal, and a caller whose
	// credentials fail (a claim missing, an exchange refused) fails alone:
	// that is never remembered for the others.
	fkey := key
	if v.clients[key].PerCaller() {
		caller, _ := credentials.CallerFrom(ctx)
		fkey = key + "\x00" + caller.Principal
	}
	ch := c.flight.DoChan(fkey, func() (any, error) {
		// Two exchanges at most, each bounded by the backend's timeout:
		// server/discover, then initialize when the backend does not
		// speak 2026-07-28 (one that never answers the probe included).
		pctx, cancel := upstream.WithTimeout(context.WithoutCancel(ctx), 2*lk.backendTimeout(v, key))
		defer cancel()
		if err := v.clients[key].Authorize(pctx); err != nil {
			c.settle(key, discovery{}, false)
			return discovery{snap: failedSnapshot(key, err)}, nil
		}
		pctx, span := lk.startBackend(pctx, v, key, "discover", nil)
		d := lk.probeGeneration(pctx, v, key, hdr)
		endProbe(span, d.snap)
		return c.settle(key, d, true), nil
	})
	select {
	case res := <-ch:
		return res.Val.(discovery)
	case <-ctx.Done():
		return discovery{snap: failedSnapshot(key, ctx.Err())}
	}
}

// settle records a probe's outcome d (when learned) and returns what the
// cache holds for key afterwards. A failure does not replace a healthy
// entry: that one serves on, due for another try when d says (the
// failure is in the backend's status). A probe that learned nothing (the
// caller's credentials failed) only ends the entry's refresh.
func (c *discoveryCache) settle(key string, d discovery, learned bool) discovery {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.entries[key]
	switch {
	case !learned:
		if ok {
			old.refreshing = false
			c.entries[key] = old
		}
		return old
	case ok && old.snap.OK() && !d.snap.OK():
		old.refreshing, old.expires = false, d.expires
		c.entries[key] = old
		return old
	}
	c.entries[key] = d
	return d
}

// rememberDiscovery replaces a backend's cached snapshot with one a
// request learned (a backend that changed generation, or recovered). The
// cache serves every principal, so it never holds a backend session id:
// one is dropped here, whoever passed it.
func (lk *backendLink) rememberDiscovery(v *vhost, snap *store.BackendSnapshot) {
	if snap.SessionID != "" {
		cp := *snap
		cp.SessionID = ""
		snap = &cp
	}
	ttl := lk.opts.DiscoveryMinTTL
	if !snap.OK() {
		ttl = lk.opts.ReprobeInterval
	}
	c := v.discovered
	c.mu.Lock()
	c.entries[snap.Key] = discovery{snap: snap, expires: time.Now().Add(ttl)}
	c.mu.Unlock()
}

// cachedGeneration reads the vhost's discovery cache for a 2025 session's
// probe: a copy of the snapshot of a backend known to speak 2026-07-28, or
// legacy when the backend is known to speak only the session protocol.
// Neither when nothing is known, or only a failure. A stale entry serves
// (and is refreshed in the background) as for a 2026-07-28 request.
func (lk *backendLink) cachedGeneration(ctx context.Context, v *vhost, key string, hdr http.Header) (modern *store.BackendSnapshot, legacy bool) {
	found, _ := lk.knownDiscoveries(ctx, v, []string{key}, hdr)
	d, ok := found[key]
	if !ok || !d.snap.OK() {
		return nil, false
	}
	if modernSnapshot(d.snap) {
		snap := *d.snap
		snap.ProbedAt = time.Now().UTC()
		return &snap, false
	}
	return nil, true
}

// rememberModern records a backend's discovery (it speaks 2026-07-28) for
// the backend's ttlMs, within the cache's bounds.
func (lk *backendLink) rememberModern(v *vhost, snap *store.BackendSnapshot, res *upstream.DiscoverResult) {
	ttl := min(max(time.Duration(res.TTLMs)*time.Millisecond, lk.opts.DiscoveryMinTTL), lk.opts.DiscoveryMaxTTL)
	c := v.discovered
	c.mu.Lock()
	c.entries[snap.Key] = discovery{snap: snap, ttlMs: res.TTLMs, expires: time.Now().Add(ttl)}
	c.mu.Unlock()
}

// rememberLegacy records that a backend answered initialize after refusing
// server/discover, unless the cache already knows it.
func (lk *backendLink) rememberLegacy(v *vhost, snap *store.BackendSnapshot) {
	cp := *snap
	cp.SessionID = ""
	c := v.discovered
	c.mu.Lock()
	if d, ok := c.entries[snap.Key]; !ok || !time.Now().Before(d.expires) {
		c.entries[snap.Key] = discovery{snap: &cp, expires: time.Now().Add(lk.opts.DiscoveryMinTTL)}
	}
	c.mu.Unlock()
}

// probeGeneration asks a backend which generation it speaks: server/discover
// first; any answer but a discover result naming 2026-07-28 means a legacy
// backend, probed with initialize (on a backend session closed at once: a
// discovery is shared by every caller, so it never keeps one).
func (lk *backendLink) probeGeneration(ctx context.Context, v *vhost, key string, hdr http.Header) discovery {
	now := time.Now()
	if snap, res := lk.discoverModern(ctx, v, key, hdr); snap != nil {
		ttl := min(max(time.Duration(res.TTLMs)*time.Millisecond, lk.opts.DiscoveryMinTTL), lk.opts.DiscoveryMaxTTL)
		return discovery{snap: snap, ttlMs: res.TTLMs, expires: now.Add(ttl)}
	}
	snap := lk.probeLegacy(ctx, v, key, hdr)
	ttl := lk.opts.DiscoveryMinTTL
	if !snap.OK() {
		ttl = lk.opts.ReprobeInterval
	}
	return discovery{snap: snap, expires: now.Add(ttl)}
}

// discoverModern asks a backend for server/discover; it returns the
// snapshot of a backend that speaks 2026-07-28, or nil.
func (lk *backendLink) discoverModern(ctx context.Context, v *vhost, key string, hdr http.Header) (*store.BackendSnapshot, *upstream.DiscoverResult) {
	if v.backends[key].Transport == upstream.TransportSSE {
		return nil, nil // HTTP+SSE predates the revision
	}
	res, err := v.clients[key].Discover(ctx, lk.clientInfo(), hdr)
	if err != nil || !slices.Contains(res.SupportedVersions, wire.ModernProtocolVersion) {
		return nil, nil
	}
	snap := &store.BackendSnapshot{Key: key, ProbedAt: time.Now().UTC(), ProtocolVersion: wire.ModernProtocolVersion,
		Capabilities: res.Capabilities, ServerInfo: res.ServerInfo, Instructions: res.Instructions, Stateless: true}
	lk.noteSnapshot(v, snap, "server/discover")
	return snap, res
}

// refusedHandshake reports an initialize the backend answered and refused
// (an HTTP 4xx, or a JSON-RPC error): a backend that may speak only
// 2026-07-28, as opposed to one that is down.
func refusedHandshake(err error) bool {
	var ue *upstream.Error
	if !errors.As(err, &ue) {
		return false
	}
	var rpc *jsonrpc.Error
	return ue.Status >= 400 && ue.Status < 500 || errors.As(ue.Err, &rpc)
}

// probeLegacy runs initialize against a backend on a session of its own
// and closes it.
func (lk *backendLink) probeLegacy(ctx context.Context, v *vhost, key string, hdr http.Header) *store.BackendSnapshot {
	conn, err := v.clients[key].Open(ctx, upstream.Handshake{ProtocolVersion: wire.LatestProtocolVersion,
		ClientInfo: lk.clientInfo(), ClientCapabilities: json.RawMessage(`{}`)}, hdr)
	if err != nil {
		lk.log.Warn("backend discovery failed", "vhost", v.name, "backend", key, "error", err)
		snap := failedSnapshot(key, err)
		lk.noteSnapshot(v, snap, "initialize")
		return snap
	}
	snap := snapshotFrom(key, conn.Init())
	lk.noteSnapshot(v, snap, "initialize")
	lk.release(conn, false)
	return snap
}

// backendTimeout is a backend's configured timeout (a discovery's bound).
func (lk *backendLink) backendTimeout(v *vhost, key string) time.Duration {
	if t := v.backends[key].Timeout; t > 0 {
		return t
	}
	return 30 * time.Second
}

// modernSnapshot reports whether a backend snapshot is a 2026-07-28
// backend's (from discovery): every request to it is one exchange.
func modernSnapshot(snap *store.BackendSnapshot) bool {
	return snap.OK() && snap.ProtocolVersion == wire.ModernProtocolVersion
}
