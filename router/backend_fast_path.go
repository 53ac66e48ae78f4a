package router

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A per-request backend connection costs a handshake (initialize,
// notifications/initialized) and a DELETE around every call: three extra
// round trips. Two fast paths avoid them, both driven by the snapshot in
// the store, so every instance takes them without coordination:
//
//   - a backend that issued no session id at initialize (a stateless
//     server) gets requests directly, with the snapshot's protocol version;
//   - a backend whose sessions the gateway keeps (`session: auto`, the
//     default, and `reuse`: one backend session per gateway session, its id
//     stored in the snapshot; `per-principal`: one per principal, its id in
//     the principal's record) gets requests on the kept session, so any
//     instance sends on it (backend_session_owner.go).
//
// Either way a refusal (the backend forgot the session, or wants a
// handshake after all) falls back to the full handshake once, and the
// snapshot is rewritten so later requests, on every instance, learn it.

// backendCall runs one exchange on an open connection. It may be called
// twice when the fast path is refused before the backend ran anything.
type backendCall func(conn *upstream.Conn) (*jsonrpc.Response, error)

// withBackend opens a connection to backend key (fast path when the
// snapshot allows), runs fn, and releases the connection. method names the
// exchange for Options.Observer, which sees it once, fallback included: an
// operator cares how long the client waited on the backend, not how many
// tries it took.
//
// The exchange also gets a span under the request's (observe.go), and its
// outcome goes to the backend's status (status.go).
func (lk *backendLink) withBackend(ctx context.Context, v *vhost, key, method string, p *peer, hdr http.Header, fn backendCall) (*jsonrpc.Response, error) {
	if err := lk.notDue(key, p.backends[key]); err != nil {
		// Failed just now: no second wait, and no backend call to observe
		// (notDue, backend_session.go).
		return nil, err
	}
	ctx, span := lk.startBackend(ctx, v, key, method, p.backends[key])
	start := time.Now()
	resp, err := lk.exchange(ctx, v, key, p, hdr, fn)
	oc := outcome(resp, err)
	if obs := lk.opts.Observer; obs != nil {
		obs.BackendCall(v.name, key, method, time.Since(start), oc)
	}
	lk.forgetRefusedToken(ctx, v, key, err)
	v.health[key].exchanged(method, oc, err)
	endBackend(span, resp, err, oc)
	return resp, err
}

// forgetRefusedToken drops the cached token of a backend that answered
// 401 (the token was revoked before it expired, or the backend's keys
// changed), so the caller's next request obtains a new one instead of
// failing until the cached one expires.
func (lk *backendLink) forgetRefusedToken(ctx context.Context, v *vhost, key string, err error) {
	var ue *upstream.Error
	if err != nil && errors.As(err, &ue) && ue.Status == http.StatusUnauthorized {
		v.clients[key].ForgetToken(ctx)
	}
}

// exchange is withBackend without the observation.
func (lk *backendLink) exchange(ctx context.Context, v *vhost, key string, p *peer, hdr http.Header, fn backendCall) (*jsonrpc.Response, error) {
	orig := p.backends[key]
	k := lk.keeperFor(ctx, v, key, p)
	snap := lk.principalSnapshot(ctx, k, orig)
	keep := k.kind != keepNone
	if keep {
		lk.maybeSweep()
	}
	if h, ok := lk.fastHandshake(ctx, v, key, p, snap, keep); ok {
		conn, err := v.clients[key].Open(ctx, h, hdr) // no round trip: nothing to shake hands about
		if err == nil {
			lk.applyLogLevel(ctx, conn, p, key)
			resp, err := fn(conn)
			lk.release(conn, keep)
			if !refusedFastPath(err) {
				return resp, err
			}
			lk.log.Debug("backend refused the fast path; full handshake", "backend", key, "error", err)
		}
	}

	conn, err := v.clients[key].Open(ctx, lk.handshake(p, snap), hdr)
	if err != nil && refusedHandshake(err) {
		// A backend that refuses initialize may speak only 2026-07-28 (now).
		if next, _ := lk.discoverModern(ctx, v, key, hdr); next != nil {
			lk.persistSnapshots(ctx, p, []*store.BackendSnapshot{next})
			h, _ := lk.fastHandshake(ctx, v, key, p, next, false)
			if conn, err = v.clients[key].Open(ctx, h, hdr); err == nil {
				resp, err := fn(conn)
				lk.release(conn, false)
				return resp, err
			}
		}
	}
	if err != nil {
		// A caller's credentials failing says nothing of the backend.
		if !snap.OK() && !errors.Is(err, upstream.ErrCredentials) {
			lk.persistSnapshots(ctx, p, []*store.BackendSnapshot{failedSnapshot(key, err)})
		}
		return nil, err
	}
	kept := false
	if init := conn.Init(); init != nil {
		var stored store.BackendSessionID
		stored, kept = lk.adopt(ctx, v, key, p, k, keptID(snap), conn)
		next := snapshotFrom(key, init)
		switch {
		case kept && k.kind == keepSession:
			next.SessionID = stored // sealed: the form adopt indexed
		case k.kind == keepNone:
			// Not this request's to replace: carried over as stored (a
			// clear id from a previous version stays as the index names it).
			next.SessionID = keptID(orig)
		}
		if snapshotChanged(orig, next) {
			lk.persistSnapshots(ctx, p, []*store.BackendSnapshot{next})
		}
	}
	lk.applyLogLevel(ctx, conn, p, key)
	resp, err := fn(conn)
	lk.release(conn, kept)
	return resp, err
}

// keptID is the backend session a snapshot names, if it is healthy, in
// its stored form (backend_session_ids.go).
func keptID(snap *store.BackendSnapshot) store.BackendSessionID {
	if !snap.OK() {
		return ""
	}
	return snap.SessionID
}

// release closes a connection after its exchange. The backend's DELETE
// (per-request sessions) runs in the background: the answer is already
// known, so the client need not wait a round trip for the cleanup.
// Router.Close waits for these.
func (lk *backendLink) release(conn *upstream.Conn, keep bool) {
	if keep || conn.SessionID() == "" {
		_ = conn.Close(keep) // nothing to send
		return
	}
	lk.cleanup.Go(func() { _ = conn.Close(false) })
}

// fastHandshake returns the handshake that skips initialize, if the
// snapshot allows one. A kept session's id is opened here, with a key the
// instance knows (no store round trip); one that does not open means a
// full handshake, as a session the backend forgot does.
func (lk *backendLink) fastHandshake(ctx context.Context, v *vhost, key string, p *peer, snap *store.BackendSnapshot, keep bool) (upstream.Handshake, bool) {
	if !snap.OK() || v.backends[key].Transport == upstream.TransportSSE {
		return upstream.Handshake{}, false // legacy SSE: the stream is the session
	}
	h := lk.handshake(p, snap)
	switch {
	case modernSnapshot(snap):
		// A 2026-07-28 backend: one exchange per request, never a session
		// (whatever the session mode: it has none to keep).
		h.ProtocolVersion, h.SkipInitialize = wire.ModernProtocolVersion, true
	case keep && snap.SessionID != "":
		id := lk.openID(ctx, v.name, key, snap.SessionID)
		if id == "" {
			return upstream.Handshake{}, false
		}
		h.SessionID = string(id)
	case snap.Stateless:
		h.SkipInitialize = true
	default:
		return upstream.Handshake{}, false
	}
	return h, true
}

// refusedFastPath reports a failure that means "handshake first": the
// backend forgot the reused session (404), or a backend thought stateless
// rejected a request without one (400/404). In both cases it ran nothing.
func refusedFastPath(err error) bool {
	if errors.Is(err, upstream.ErrSessionGone) || errors.Is(err, upstream.ErrHandshakeRequired) {
		return true
	}
	var ue *upstream.Error
	return errors.As(err, &ue) && (ue.Status == http.StatusBadRequest || ue.Status == http.StatusNotFound)
}

// snapshotChanged reports whether a fresh handshake learned something the
// stored snapshot does not say.
func snapshotChanged(old, next *store.BackendSnapshot) bool {
	return !old.OK() || old.Stateless != next.Stateless || old.SessionID != next.SessionID ||
		old.ProtocolVersion != next.ProtocolVersion || string(old.Capabilities) != string(next.Capabilities)
}

// EndBackendSessions ends the backend sessions a gateway session kept
// (`session: auto` or `reuse`), best effort, when the client deletes its
// session. A principal's backend sessions are the principal's: they stay.
func (r *Router) EndBackendSessions(ctx context.Context, sess *store.Session) {
	p := sessionPeer(sess)
	v, ok := r.table.Load().vhosts[p.vhost]
	if !ok {
		return
	}
	for key, snap := range p.backends {
		if !snap.OK() || snap.SessionID == "" || v.clients[key] == nil {
			continue
		}
		id := r.link.openID(ctx, v.name, key, snap.SessionID)
		if id == "" {
			continue
		}
		h := r.link.handshake(p, snap)
		h.SessionID = string(id)
		if conn, err := v.clients[key].Open(ctx, h, nil); err == nil {
			_ = conn.Close(false) // sends DELETE
		}
	}
}
