package router

import (
	"encoding/json"

	"github.com/mcpgw/gateway/router/capability"
	"github.com/mcpgw/gateway/store"
)

// peer is the client side of a backend exchange, whatever the request's
// generation: what the client said of itself (capabilities, log level),
// the snapshots of the vhost's backends as it sees them, and where what
// a backend exchange learns is recorded. A 2025-era request's peer is its
// session (sessionPeer: snapshots from the store, written back there); a
// 2026-07-28 request's is built from its _meta and the discovery cache
// (modernPeer) and has no session id: what it learns goes to the
// instance's discovery cache, never to the store. No session is made up
// for a sessionless request.
type peer struct {
	sessionID    store.SessionID // "": a 2026-07-28 request
	vhost        string
	capabilities json.RawMessage
	logLevel     string
	backends     map[string]*store.BackendSnapshot
}

// sessionPeer is a 2025-era session's peer. It shares the session's
// snapshot map: nothing writes it during a request.
func sessionPeer(s *store.Session) *peer {
	return &peer{sessionID: s.ID, vhost: s.VHost, capabilities: s.ClientCapabilities, logLevel: s.LogLevel, backends: s.Backends}
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
// backend of snap: Tasks too when both speak 2026-07-28.
func (p *peer) extensions(snap *store.BackendSnapshot) map[string]bool {
	if p.sessionID == "" && modernSnapshot(snap) {
		return capability.ModernExtensions
	}
	return capability.SessionExtensions
}
