package router

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
)

// Who a backend session belongs to (issue 36). A backend that hands out
// session ids keeps state in them (a FastMCP context's state, credentials
// it took at initialize), so whoever shares a backend session shares that
// state. The rule: a backend session belongs to exactly one gateway
// session, or to one principal when its backend is configured
// `session: per-principal`, or to nothing the gateway keeps (it is opened
// for one request and closed after). Its id is kept only where its owner
// is: the gateway session's snapshot in the store, or the principal's
// record in the store; never in a cache shared by principals (the
// instance's discovery cache strips it).
//
// Every backend session the gateway keeps is also indexed in the store
// (store.BackendSessions). A session replaced by another is closed
// (DELETE) at once; one whose owner went away without the gateway seeing
// it (the gateway session expired, a concurrent request's session lost a
// race, a principal's record expired) is closed by the sweep: whichever
// instance finds it released first.

// keeper is where one exchange keeps the backend session it uses.
type keeper struct {
	kind  keepKind
	owner string // keepPrincipal: the principal's record (principalOwner)
}

type keepKind uint8

const (
	keepNone      keepKind = iota // per-request: opened, used, closed
	keepSession                   // in the gateway session's snapshot
	keepPrincipal                 // in the principal's record
)

// keeperFor is where a request of peer p keeps its session of backend key.
// A per-principal backend needs the caller (the handler puts it in every
// request's context): without one, nothing is kept rather than shared.
func (lk *backendLink) keeperFor(ctx context.Context, v *vhost, key string, p *peer) keeper {
	if p.ownSessions {
		return keeper{}
	}
	switch v.backends[key].Session {
	case SessionPerRequest:
	case SessionPerPrincipal:
		if caller, ok := credentials.CallerFrom(ctx); ok && caller.Principal != "" {
			return keeper{kind: keepPrincipal, owner: principalOwner(v.name, key, caller.Principal)}
		}
	default: // auto, reuse: the gateway session's, if there is one
		if p.sessionID != "" {
			return keeper{kind: keepSession}
		}
	}
	return keeper{}
}

// principalOwner is the store's name for a principal's backend session on
// one vhost and backend: a digest, so no identity appears in a key.
func principalOwner(vhost, key, principal string) string {
	sum := sha256.Sum256([]byte(vhost + "\x00" + key + "\x00" + principal))
	return "p" + hex.EncodeToString(sum[:16])
}

// principalSnapshot is snap with the principal's backend session in it (a
// copy), for the fast path; snap itself when none is kept or the store
// cannot say (the request then opens a session of its own).
func (lk *backendLink) principalSnapshot(ctx context.Context, k keeper, snap *store.BackendSnapshot) *store.BackendSnapshot {
	if k.kind != keepPrincipal || !snap.OK() || snap.Stateless || modernSnapshot(snap) {
		return snap
	}
	id, err := lk.opts.Store.PrincipalBackendSession(ctx, k.owner, lk.opts.SessionTTL)
	if err != nil {
		lk.log.Warn("reading a principal's backend session failed", "backend", snap.Key, "error", err)
	}
	cp := *snap
	cp.SessionID = id
	return &cp
}

// adopt decides whether the backend session conn opened with a full
// handshake is kept, and records it where k says; old is the stored form
// of the one it replaces ("": none), closed at the backend once replaced.
// It returns the new session's stored form (sealed: backend_session_ids.go),
// the one string that names it in the principal's record, the index and,
// written by the caller, the gateway session's snapshot: the store checks
// an indexed session is still kept by comparing them. A session that is
// not kept is the request's own: the caller closes it after use.
func (lk *backendLink) adopt(ctx context.Context, v *vhost, key string, p *peer, k keeper, old store.BackendSessionID, conn *upstream.Conn) (store.BackendSessionID, bool) {
	id := store.BackendSessionID(conn.SessionID())
	if k.kind == keepNone || id == "" || conn.Modern() || v.backends[key].Transport == upstream.TransportSSE {
		return "", false // legacy HTTP+SSE: the stream is the session, nothing to keep
	}
	stored, ok := lk.sealID(ctx, v.name, key, id)
	if !ok {
		return "", false
	}
	kept := store.KeptBackendSession{VHost: v.name, Backend: key, ID: stored}
	switch k.kind {
	case keepSession:
		kept.Session = p.sessionID // the caller writes the snapshot naming it
	case keepPrincipal:
		// old is the record as read (sealed, or clear from a previous
		// version): the swap compares it as stored.
		now, err := lk.opts.Store.SwapPrincipalBackendSession(ctx, k.owner, old, stored, lk.opts.SessionTTL)
		if err != nil {
			lk.log.Warn("keeping a principal's backend session failed", "backend", key, "error", err)
			return "", false
		}
		if now != stored {
			return "", false // a concurrent request's session is the principal's
		}
		kept.Owner = k.owner
	}
	if err := lk.opts.Store.TrackBackendSessions(ctx, []store.KeptBackendSession{kept}, lk.keptCheckAfter()); err != nil {
		lk.log.Warn("indexing a kept backend session failed", "backend", key, "error", err)
	}
	if prev := lk.openID(ctx, v.name, key, old); prev != "" && prev != id {
		lk.closeBackendSession(ctx, v, key, prev)
	}
	return stored, true
}

// closeBackendSession ends a backend session the gateway no longer keeps
// (DELETE), in the background, with the request's credentials; id is the
// backend's own (opened).
func (lk *backendLink) closeBackendSession(ctx context.Context, v *vhost, key string, id store.BackendSessionID) {
	if !lk.holdOpen() {
		return
	}
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer lk.cleanup.Done()
		lk.endBackendSession(ctx, v, key, id)
	}()
}

// endBackendSession sends DELETE for one backend session, best effort,
// bounded by the backend's timeout.
func (lk *backendLink) endBackendSession(ctx context.Context, v *vhost, key string, id store.BackendSessionID) {
	ctx, cancel := upstream.WithTimeout(ctx, lk.backendTimeout(v, key))
	defer cancel()
	h := upstream.Handshake{ProtocolVersion: wire.LatestProtocolVersion, ClientInfo: lk.clientInfo(),
		ClientCapabilities: json.RawMessage(`{}`), SessionID: string(id)}
	conn, err := v.clients[key].Open(ctx, h, nil)
	if err != nil {
		lk.log.Debug("closing a backend session failed", "vhost", v.name, "backend", key, "error", err)
		return
	}
	_ = conn.Close(false) // sends DELETE
}

// keptCheckAfter is how long after it is indexed (and after each check
// that finds it kept) a backend session is checked again: the session TTL
// (an owner cannot lapse sooner than that after its last use), within 1s
// and 5 minutes, so one whose gateway session expired is closed within
// about that long of the expiry.
func (lk *backendLink) keptCheckAfter() time.Duration {
	return min(max(lk.opts.SessionTTL, time.Second), 5*time.Minute)
}

// sweepBatch and sweepRounds bound one sweep: 10 rounds of 100 checks.
const (
	sweepBatch  = 100
	sweepRounds = 10
)

// maybeSweep starts a sweep of the kept-session index when none ran on
// this instance for half keptCheckAfter (at most every 30 s). Requests
// start it, not a timer, so it runs the same on Lambda, where a process
// only runs during invocations: there "in the background" means during
// the invocation that started it and, if it is frozen, the next one.
func (lk *backendLink) maybeSweep() {
	now := time.Now().UnixNano()
	last := lk.lastSweep.Load()
	every := min(lk.keptCheckAfter()/2, 30*time.Second)
	if now-last < int64(every) || !lk.lastSweep.CompareAndSwap(last, now) || !lk.holdOpen() {
		return
	}
	go func() {
		defer lk.cleanup.Done()
		lk.sweepKept()
	}()
}

// sweepKept closes the indexed backend sessions no owner keeps any more.
// Each is handed to one instance only (the store removes it as it returns
// it), so each is closed once. One whose sealed id does not open cannot be
// closed: the backend's own expiry ends it.
func (lk *backendLink) sweepKept() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range sweepRounds {
		released, err := lk.opts.Store.ReleasedBackendSessions(ctx, sweepBatch, lk.keptCheckAfter())
		if err != nil {
			lk.log.Warn("sweeping kept backend sessions failed", "error", err)
			return
		}
		if len(released) == 0 {
			return
		}
		table := lk.table.Load()
		for _, k := range released {
			v, ok := table.vhosts[k.VHost]
			if !ok || v.clients[k.Backend] == nil {
				continue
			}
			if id := lk.openID(ctx, k.VHost, k.Backend, k.ID); id != "" {
				lk.endBackendSession(ctx, v, k.Backend, id)
			}
		}
	}
}
