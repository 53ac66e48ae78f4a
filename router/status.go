package router

import (
	"errors"
	"sort"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
)

// What this instance last learned about each backend, for an operator's
// status view (GET /status): which protocol it speaks and since when, when
// it last answered, its last failure, and its list cache. Requests write
// it as they go, with atomic stores and no lock; Status reads it without
// blocking any request and without a store round trip. It is this
// instance's view only (another instance may have seen other failures),
// and it starts empty with each routing table: a config reload forgets it,
// as it forgets the discovery and list caches.

// Backend generations, as Status reports them.
const (
	// GenerationModern: the backend speaks 2026-07-28 (server/discover).
	GenerationModern = wire.ModernProtocolVersion
	// GenerationSession: the backend speaks a 2025-era session protocol.
	GenerationSession = "session"
)

// backendHealth is one backend's record; the routing table holds one per
// backend, so the pointer never changes while the table lives.
type backendHealth struct {
	discovery    atomic.Pointer[discoveryStatus]
	failure      atomic.Pointer[BackendFailure]
	lastOK       atomic.Int64 // unix nanoseconds of the last answer; 0: none
	cacheHits    atomic.Uint64
	cacheMisses  atomic.Uint64
	cacheDropped atomic.Int64 // unix nanoseconds of the last invalidation
}

type discoveryStatus struct {
	at              time.Time
	protocolVersion string
	stateless       bool
}

// BackendFailure is a backend's last failure, as a client was told it:
// the JSON-RPC code and message a routed request got (-32603 naming the
// backend; never a URL or a header value, see upstream.Error), with the
// step that failed when known.
type BackendFailure struct {
	At time.Time
	// Op is the JSON-RPC method or transport step ("initialize",
	// "tools/call", "open"), "" when unknown.
	Op string
	// Outcome is OutcomeTransportError or OutcomeTimeout.
	Outcome string
	// HTTPStatus is the backend's HTTP status when it answered with a bad
	// one, else 0.
	HTTPStatus int
	Code       int64
	Message    string
}

// noteSnapshot records what a probe or a request's handshake learned; op
// names the probe ("" when a request's own handshake re-probed).
func (b *base) noteSnapshot(v *vhost, snap *store.BackendSnapshot, op string) {
	h := v.health[snap.Key]
	if h == nil {
		return
	}
	at := snap.ProbedAt
	if at.IsZero() {
		at = time.Now()
	}
	if !snap.OK() {
		h.failure.Store(&BackendFailure{At: at, Op: op, Outcome: OutcomeTransportError, Code: CodeInternalError, Message: snap.Error})
		return
	}
	h.discovery.Store(&discoveryStatus{at: at, protocolVersion: snap.ProtocolVersion, stateless: snap.Stateless})
	h.answered(at)
}

// exchanged records a backend exchange's outcome: an answer (a JSON-RPC
// error is one), or a failure the client saw as -32603.
func (h *backendHealth) exchanged(method, outcome string, err error) {
	if h == nil {
		return
	}
	now := time.Now()
	switch outcome {
	case OutcomeOK, OutcomeRPCError:
		h.answered(now)
	case OutcomeTransportError, OutcomeTimeout:
		f := &BackendFailure{At: now, Op: method, Outcome: outcome, Code: CodeInternalError, Message: err.Error()}
		var ue *upstream.Error
		if errors.As(err, &ue) {
			f.Op, f.HTTPStatus = ue.Op, ue.Status
		}
		h.failure.Store(f)
	}
}

// answered moves the last answer's time forward, writing at most once a
// second: concurrent requests to one backend need not contend on it.
func (h *backendHealth) answered(at time.Time) {
	n := at.UnixNano()
	if last := h.lastOK.Load(); n-last >= int64(time.Second) {
		h.lastOK.CompareAndSwap(last, n)
	}
}

// Status is this instance's view of its virtual hosts and backends.
type Status struct {
	VHosts []VHostStatus
}

// VHostStatus is one virtual host's backends, sorted by key.
type VHostStatus struct {
	Name     string
	Backends []BackendStatus
	// Patterns is the latest check of the vhost's access and rate limit
	// patterns (pattern_watch.go); nil before the first, or when the
	// process does not watch them.
	Patterns *VHostCheck
}

// BackendStatus is what this instance knows of one backend.
type BackendStatus struct {
	Key       string
	Transport string
	// Generation is GenerationModern or GenerationSession, "" until this
	// instance has discovered the backend; ProtocolVersion is the
	// version it speaks.
	Generation      string
	ProtocolVersion string
	Stateless       bool
	// DiscoveredAt is the last successful discovery or handshake that
	// taught the instance the backend's protocol (zero: none yet).
	DiscoveredAt time.Time
	// LastAnswer is the last time the backend answered (to the second).
	LastAnswer time.Time
	// LastFailure is the last failure; nil when none was seen.
	LastFailure *BackendFailure
	// ListCache is nil when the backend's list cache is off.
	ListCache *ListCacheStatus
	// Pool is a stdio backend's processes on this instance (nil for
	// other transports).
	Pool *upstream.PoolStats
}

// ListCacheStatus is a backend's list cache on this instance.
type ListCacheStatus struct {
	TTL time.Duration
	// Pages is the pages held (expired ones until they are replaced).
	Pages        int64
	Hits, Misses uint64
	// LastDropped is when a list_changed last emptied it (zero: never).
	LastDropped time.Time
}

// Failing reports whether the backend's last word was a failure: one
// newer than its last answer.
func (b *BackendStatus) Failing() bool {
	return b.LastFailure != nil && !b.LastFailure.At.Before(b.LastAnswer)
}

// Status returns the instance's view now. It takes no lock a request
// holds and does no I/O.
func (r *Router) Status() Status {
	t := r.table.Load()
	names := make([]string, 0, len(t.vhosts))
	for name := range t.vhosts {
		names = append(names, name)
	}
	sort.Strings(names)
	out := Status{VHosts: make([]VHostStatus, 0, len(names))}
	for _, name := range names {
		v := t.vhosts[name]
		vs := VHostStatus{Name: name, Backends: make([]BackendStatus, 0, len(v.keys)), Patterns: v.patterns.Load()}
		for _, key := range v.keys {
			vs.Backends = append(vs.Backends, v.backendStatus(key))
		}
		out.VHosts = append(out.VHosts, vs)
	}
	return out
}

func (v *vhost) backendStatus(key string) BackendStatus {
	b := v.backends[key]
	h := v.health[key]
	bs := BackendStatus{Key: key, Transport: string(b.Transport), LastFailure: h.failure.Load()}
	if bs.Transport == "" {
		bs.Transport = string(upstream.TransportStreamableHTTP)
	}
	if d := h.discovery.Load(); d != nil {
		bs.DiscoveredAt, bs.ProtocolVersion, bs.Stateless = d.at, d.protocolVersion, d.stateless
		bs.Generation = GenerationSession
		if d.protocolVersion == wire.ModernProtocolVersion {
			bs.Generation = GenerationModern
		}
	}
	if n := h.lastOK.Load(); n != 0 {
		bs.LastAnswer = time.Unix(0, n)
	}
	if b.ListCacheTTL > 0 {
		lc := &ListCacheStatus{TTL: b.ListCacheTTL, Pages: v.lists.Held(key), Hits: h.cacheHits.Load(), Misses: h.cacheMisses.Load()}
		if n := h.cacheDropped.Load(); n != 0 {
			lc.LastDropped = time.Unix(0, n)
		}
		bs.ListCache = lc
	}
	if b.Transport == upstream.TransportStdio {
		ps := v.clients[key].Stats()
		bs.Pool = &ps
	}
	return bs
}
