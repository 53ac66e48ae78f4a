package router

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/capability"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/trace"
)

// Initialize opens a session on a virtual host: it probes every backend
// concurrently (one failure is not fatal: its snapshot records the failure
// and the backend is re-probed later), writes the session and snapshots to
// the store, and only then answers with the merged InitializeResult. The
// returned session is nil when the response is an error.
func (r *Router) Initialize(ctx context.Context, vhostName, principal string, hdr http.Header, req *jsonrpc.Request) (_ *store.Session, resp *jsonrpc.Response) {
	if r.tracer != nil {
		var span trace.Span
		ctx, span = r.startRequest(ctx, vhostName, "", hdr, req)
		defer func() { endRequest(span, resp) }()
	}
	v, ok := r.table.Load().vhosts[vhostName]
	if !ok {
		return nil, errorResponse(req.ID, rpcError(CodeInvalidRequest, "unknown virtual host %s", wire.Quote(vhostName)))
	}
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}
	if err := json.Unmarshal(orEmpty(req.Params), &p); err != nil {
		return nil, errorResponse(req.ID, paramsError("initialize", err))
	}
	if p.ProtocolVersion == "" {
		return nil, errorResponse(req.ID, invalidParams("initialize needs params.protocolVersion"))
	}
	if rerr := clientMetadataRefusal(p.ClientInfo, p.Capabilities); rerr != nil {
		return nil, errorResponse(req.ID, rerr)
	}
	if len(p.Capabilities) == 0 || string(p.Capabilities) == "null" {
		p.Capabilities = json.RawMessage(`{}`)
	} else if p.Capabilities[0] != '{' {
		return nil, errorResponse(req.ID, invalidParams("initialize params.capabilities must be an object"))
	}
	version := p.ProtocolVersion
	if !wire.ServesProtocolVersion(version) {
		version = wire.LatestProtocolVersion
	}
	r.link.maybeSweep() // backend sessions kept for sessions gone since
	id := store.NewSessionID()
	sess := &store.Session{
		ID:                 id,
		Principal:          principal,
		VHost:              vhostName,
		ProtocolVersion:    version,
		ClientInfo:         p.ClientInfo,
		ClientCapabilities: p.Capabilities,
		CreatedAt:          time.Now().UTC(),
		Backends:           map[string]*store.BackendSnapshot{},
	}

	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, key := range v.keys {
		wg.Go(func() {
			pctx, pspan := r.startBackend(ctx, v, key, "initialize", nil)
			snap := r.link.probe(pctx, v, key, sessionPeer(sess), hdr)
			endProbe(pspan, snap)
			mu.Lock()
			sess.Backends[key] = snap
			mu.Unlock()
		})
	}
	wg.Wait()

	if err := r.opts.Store.CreateSession(ctx, sess, r.opts.SessionTTL); err != nil {
		return nil, r.storeUnavailable(req.ID, err)
	}

	// The session keeps every snapshot (each later request is judged by
	// its own token); the answer shows only what this caller may see.
	shown := v.visibleSnapshots(callerAccess(ctx, v), sess.Backends)
	result := map[string]any{
		"protocolVersion": version,
		"capabilities":    r.tasks.advertiseTasks(v, capability.Merged(shown, sessionPeer(sess).extensions(nil)), sessionPeer(sess).extensions(nil)),
		"serverInfo":      r.opts.Info,
	}
	if ins := capability.JoinedInstructions(v.keys, shown); ins != "" {
		result["instructions"] = ins
	}
	raw, _ := json.Marshal(result)
	return sess, resultResponse(req.ID, raw)
}

// modernDiscover answers server/discover for the virtual host: built from
// every backend's discovery, never one backend's answer, like initialize.
func (r *Router) modernDiscover(ctx context.Context, v *vhost, c *Call) *jsonrpc.Response {
	snaps := make(map[string]*store.BackendSnapshot, len(v.keys))
	hints := envelope.Hints{TTLMs: -1}
	for key, d := range r.link.allDiscoveries(ctx, v, c.Header) {
		snaps[key] = d.snap
		if d.snap.OK() && (hints.TTLMs < 0 || d.ttlMs < hints.TTLMs) {
			hints.TTLMs = d.ttlMs
		}
	}
	hints.TTLMs = max(hints.TTLMs, 0)
	shown := v.visibleSnapshots(c.d.access, snaps) // what this caller may see
	result := map[string]any{
		"supportedVersions": wire.AllProtocolVersions(),
		"capabilities":      r.tasks.advertiseTasks(v, capability.Merged(shown, capability.ModernExtensions), capability.ModernExtensions),
	}
	if ins := capability.JoinedInstructions(v.keys, shown); ins != "" {
		result["instructions"] = ins
	}
	raw, _ := json.Marshal(result)
	return r.finishModern(ctx, resultResponse(c.Request.ID, raw), "server/discover", v.accessHints("server/discover", &hints))
}
