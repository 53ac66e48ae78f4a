package router

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/capability"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
)

// The gateway opens a backend connection for each routed request and closes
// it after (open, call, close, for every method: no instance holds a
// backend connection another request may need). What it knows about a
// backend between requests is the snapshot in the store.

// peer is the client side of a backend exchange, whatever the request's
// generation: what the client said of itself (capabilities, log level),
// the snapshots of the vhost's backends as it sees them, and where what
// a backend exchange learns is recorded. A 2025-era request's peer is its
// session (sessionPeer: snapshots from the store, written back there); a
// 2026-07-28 request's is built from its _meta and the discovery cache
// (ModernClient.peer) and has no session id: what it learns goes to the
// instance's discovery cache, never to the store. No session is made up
// for a sessionless request.
type peer struct {
	sessionID    store.SessionID // "": a 2026-07-28 request
	vhost        string
	capabilities json.RawMessage
	logLevel     string
	backends     map[string]*store.BackendSnapshot
	tasks        bool // the client declared the Tasks extension
	// ownSessions: this peer's capabilities are not those its kept
	// backend sessions were opened with (a gateway-run task's run, which
	// answers elicitation for the client), so each of its exchanges opens
	// a backend session of its own and leaves the kept ones alone.
	ownSessions bool
}

// sessionPeer is a 2025-era session's peer. It shares the session's
// snapshot map: nothing writes it during a request.
func sessionPeer(s *store.Session) *peer {
	return newPeer(s.ID, s.VHost, s.ClientCapabilities, s.LogLevel, s.Backends)
}

// newPeer is a peer; whether the client declared Tasks is read once here,
// not on each backend exchange.
func newPeer(id store.SessionID, vhost string, caps json.RawMessage, logLevel string, backends map[string]*store.BackendSnapshot) *peer {
	return &peer{sessionID: id, vhost: vhost, capabilities: caps, logLevel: logLevel, backends: backends,
		tasks: declaresExtension(caps, wire.ExtensionTasks)}
}

// withSnapshot is p with backend key's snapshot replaced: a copy, since a
// peer is shared by the concurrent parts of a request (a listen's
// backends).
func (p *peer) withSnapshot(key string, snap *store.BackendSnapshot) *peer {
	cp := *p
	cp.backends = make(map[string]*store.BackendSnapshot, len(p.backends))
	for k, s := range p.backends {
		cp.backends[k] = s
	}
	cp.backends[key] = snap
	return &cp
}

// extensions are the extensions the gateway routes between p and the
// backend of snap: Tasks too when the client declared it (a 2026-07-28
// request in its _meta, a 2025 session in its initialize).
func (p *peer) extensions(*store.BackendSnapshot) map[string]bool {
	if p.tasks {
		return capability.ModernExtensions
	}
	return capability.SessionExtensions
}

// handshake builds the upstream handshake for a session's backend: the
// snapshot's version, or the newest session version for a backend known
// by none (or a modern one being asked to shake hands after all).
func (lk *backendLink) handshake(p *peer, snap *store.BackendSnapshot) upstream.Handshake {
	pv := wire.LatestProtocolVersion
	if snap.OK() && snap.ProtocolVersion != "" && !modernSnapshot(snap) {
		pv = snap.ProtocolVersion
	}
	return upstream.Handshake{
		ProtocolVersion:    pv,
		ClientInfo:         lk.clientInfo(),
		ClientCapabilities: capability.ForwardedClient(p.capabilities, p.extensions(snap)),
		LogLevel:           p.logLevel,
	}
}

// clientInfo is the gateway's identity in backend handshakes, encoded once.
func (b *base) clientInfo() json.RawMessage {
	b.infoOnce.Do(func() { b.infoJSON, _ = json.Marshal(b.opts.Info) })
	return b.infoJSON
}

// open connects to one backend with a full handshake (the listeners of a
// GET stream use it: they need a backend session of their own). When the session's
// snapshot of that backend records a failure (or is missing because the
// backend was added to config later), the handshake doubles as the re-probe:
// the returned snapshot is non-nil and should be persisted.
func (lk *backendLink) open(ctx context.Context, v *vhost, key string, p *peer, hdr http.Header) (*upstream.Conn, *store.BackendSnapshot, error) {
	snap := p.backends[key]
	conn, err := v.clients[key].Open(ctx, lk.handshake(p, snap), hdr)
	if err != nil {
		if snap.OK() {
			return nil, nil, err // a healthy snapshot is not demoted by one failed request
		}
		return nil, failedSnapshot(key, err), err
	}
	if !snap.OK() {
		if init := conn.Init(); init != nil {
			return conn, snapshotFrom(key, init), nil
		}
	}
	return conn, nil, nil
}

// A backend whose snapshot records a failed handshake is tried again at
// most once per Options.ReprobeInterval (reprobeDue), for every method:
// until then a request that needs it gets the recorded failure at once.
// Without this, a backend that hangs at initialize cost one request its
// timeout twice (a 2026-07-28 call waited for its discovery's initialize,
// then for the call's own), and a 2025 session's first call waited again
// right after its initialize had failed. Lists skipped such a backend
// already; routed methods and listens now do the same.

// recentFailure is the recorded failure of a backend not yet due for
// another attempt.
type recentFailure struct {
	key string
	msg string // the snapshot's Error
	age time.Duration
}

func (e *recentFailure) Error() string {
	msg := e.msg
	if !strings.HasPrefix(msg, "backend "+strconv.Quote(e.key)) {
		msg = fmt.Sprintf("backend %q: %s", e.key, msg)
	}
	return fmt.Sprintf("%s (last attempt %.1fs ago)", msg, e.age.Seconds())
}

// notDue returns the failure recorded in snap when the backend may not be
// tried again yet, nil when it may (or snap records no failure).
func (lk *backendLink) notDue(key string, snap *store.BackendSnapshot) error {
	if snap.OK() || lk.reprobeDue(snap) {
		return nil
	}
	return &recentFailure{key: key, msg: snap.Error, age: time.Since(snap.ProbedAt)}
}

// reprobeDue reports whether a failed backend may be tried again now.
func (lk *backendLink) reprobeDue(snap *store.BackendSnapshot) bool {
	return snap == nil || time.Since(snap.ProbedAt) >= lk.opts.ReprobeInterval
}

// probe learns what one backend speaks for a 2025-era session and records
// it, or why it failed.
//
// Modern first, as for 2026-07-28 requests (DESIGN: "backends are
// discovered, modern first"): a backend that speaks 2026-07-28 serves the
// session's requests as modern requests carrying what the client's
// initialize said (backend_fast_path.go), which is what lets a stateless
// backend ask the client things (its input_required becomes real requests
// on the call's stream) and spares it the initialize round trips. The
// vhost's discovery cache says which generation each backend speaks, so a
// legacy backend costs one refused server/discover per instance and TTL.
// A backend in `session: reuse` mode keeps the legacy handshake: its
// operator asked for a backend session that lives with the client's.
//
// The backend session opened by the handshake is kept when the backend's
// mode keeps one for this session (keeperFor: `auto`, the default, and
// `reuse` in the session's snapshot, so later requests, on any instance,
// send on it; `per-principal` in the principal's record, unless the
// principal has one already); otherwise it is closed.
func (lk *backendLink) probe(ctx context.Context, v *vhost, key string, p *peer, hdr http.Header) *store.BackendSnapshot {
	reuse := v.backends[key].Session == SessionReuse
	legacyKnown := false
	if !reuse {
		var snap *store.BackendSnapshot
		if snap, legacyKnown = lk.cachedGeneration(ctx, v, key, hdr); snap != nil {
			return snap
		}
		if !legacyKnown {
			if snap, res := lk.discoverModern(ctx, v, key, hdr); snap != nil {
				lk.rememberModern(v, snap, res)
				return snap
			}
		}
	}
	conn, err := v.clients[key].Open(ctx, lk.handshake(p, nil), hdr)
	if err != nil {
		if refusedHandshake(err) && legacyKnown {
			// A backend that turned modern-only since it was last seen.
			if snap, res := lk.discoverModern(ctx, v, key, hdr); snap != nil {
				lk.rememberModern(v, snap, res)
				return snap
			}
		}
		lk.log.Warn("backend initialize failed", "vhost", v.name, "backend", key, "error", err)
		snap := failedSnapshot(key, err)
		lk.noteSnapshot(v, snap, "initialize")
		return snap
	}
	snap := snapshotFrom(key, conn.Init())
	lk.noteSnapshot(v, snap, "initialize")
	if !reuse {
		lk.rememberLegacy(v, snap)
	}
	k := lk.keeperFor(ctx, v, key, p)
	stored, keep := lk.adopt(ctx, v, key, p, k, "", conn)
	if keep && k.kind == keepSession {
		snap.SessionID = stored // sealed
	}
	lk.release(conn, keep)
	return snap
}

func failedSnapshot(key string, err error) *store.BackendSnapshot {
	return &store.BackendSnapshot{Key: key, Error: err.Error(), ProbedAt: time.Now().UTC()}
}

// snapshotFrom keeps the parts of a backend's InitializeResult the gateway
// needs later. The fields are kept raw so capabilities the gateway does not
// know yet survive a round trip through the store.
func snapshotFrom(key string, init *upstream.InitResult) *store.BackendSnapshot {
	snap := &store.BackendSnapshot{Key: key, ProbedAt: time.Now().UTC(), ProtocolVersion: init.ProtocolVersion, Stateless: init.SessionID == ""}
	// One pass over the result the upstream decoder checked (a per-request
	// backend session makes one on every call); the members are copied,
	// the snapshot outlives the answer's bytes.
	wire.MembersBytes(init.Raw, func(key, value []byte) bool {
		switch string(key) {
		case "protocolVersion":
			if snap.ProtocolVersion == "" {
				snap.ProtocolVersion, _ = wire.String(value)
			}
		case "capabilities":
			snap.Capabilities = bytes.Clone(value)
		case "serverInfo":
			snap.ServerInfo = bytes.Clone(value)
		case "instructions":
			snap.Instructions, _ = wire.String(value)
		}
		return true
	})
	return snap
}

// persistSnapshots writes changed snapshots back to the session, so the
// next request, on any instance, sees the backend's new state.
func (lk *backendLink) persistSnapshots(ctx context.Context, p *peer, snaps []*store.BackendSnapshot) {
	if len(snaps) == 0 {
		return
	}
	// sess itself is not updated: list fan-out calls this concurrently, and
	// the rest of the request does not need the new snapshot.
	v, ok := lk.table.Load().vhosts[p.vhost]
	if ok {
		for _, snap := range snaps {
			lk.noteSnapshot(v, snap, "")
		}
	}
	if p.sessionID == "" {
		// A 2026-07-28 request's view: what it learned goes to the
		// instance's discovery cache, never to the store (and never a
		// backend session id: rememberDiscovery drops it).
		if ok {
			for _, snap := range snaps {
				lk.rememberDiscovery(v, snap)
			}
		}
		return
	}
	if err := lk.opts.Store.PutBackends(ctx, p.sessionID, snaps, lk.opts.SessionTTL); err != nil {
		lk.log.Warn("storing backend snapshots failed", "session_backends", len(snaps), "error", err)
	}
}

// applyLogLevel replays the session's logging/setLevel on a fresh backend
// connection, so log messages the backend sends during the call respect
// the level the client chose (on whichever instance it chose it).
func (lk *backendLink) applyLogLevel(ctx context.Context, conn *upstream.Conn, p *peer, key string) {
	if p.logLevel == "" || conn.Modern() || !capability.Has(p.backends[key], "logging") {
		return // a 2026-07-28 backend gets the level in each request's _meta
	}
	params, _ := json.Marshal(map[string]string{"level": p.logLevel})
	if _, err := conn.Call(ctx, "logging/setLevel", params, nil); err != nil {
		lk.log.Debug("backend logging/setLevel failed", "backend", key, "error", err)
	}
}
