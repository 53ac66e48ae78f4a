package router

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/capability"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// What a backend may tell a session unprompted (resource updates for its
// subscriptions, list changes, log messages) arrives on a listening
// connection to that backend. Which backends need one, what each
// connection replays (the session's log level and subscriptions) and how
// what arrives is renamed for the client are federation rules, kept here;
// keeping the connections running is the session runtime's job
// (handler/session).

// ErrNoStream is returned by ListenBackend for a backend that offers no
// stream to listen on: there is nothing to reconnect to.
var ErrNoStream = upstream.ErrNoStream

// ListenTarget is one backend a session listens to.
type ListenTarget struct {
	// Key is the backend key.
	Key string
	// Subscriptions are the backend-side URIs of the session's
	// subscriptions that route to this backend.
	Subscriptions []string
}

// ListenTargets lists the backends of the session's virtual host that can
// send it something unsolicited; ok is false when the virtual host is no
// longer configured.
func (r *Router) ListenTargets(sess *store.Session) (targets []ListenTarget, ok bool) {
	p := sessionPeer(sess)
	v, ok := r.table.Load().vhosts[p.vhost]
	if !ok {
		return nil, false
	}
	for _, key := range v.keys {
		if v.backends[key].Transport == upstream.TransportStdio {
			continue // a shared process speaks for no session (upstream/stdio.go)
		}
		subs := subscriptionsOf(v, key, sess.Subscriptions)
		if capability.Of(p.backends[key]).SendsUnsolicited(len(subs) > 0, p.logLevel != "") {
			targets = append(targets, ListenTarget{Key: key, Subscriptions: subs})
		}
	}
	return targets, true
}

// ListenBackend opens a backend session for t (with a full handshake:
// listening needs a session of its own), replays the gateway session's log
// level and subscriptions on it, and passes emit every notification the
// backend sends on its standalone stream, renamed for the client, until
// ctx ends or the stream breaks. It calls up once it is receiving. Progress
// and cancellations belong to calls and are dropped; list changes of a
// backend with a list cache drop its cached pages on every instance.
func (r *Router) ListenBackend(ctx context.Context, sess *store.Session, hdr http.Header, t ListenTarget, emit func(*jsonrpc.Request), up func()) error {
	return r.listenBackend(ctx, sessionPeer(sess), hdr, t, emit, up)
}

// listenBackend is ListenBackend for any peer: a 2025 session's GET
// stream, or a 2026-07-28 listen's part on a 2025-era backend.
func (r *Router) listenBackend(ctx context.Context, p *peer, hdr http.Header, t ListenTarget, emit func(*jsonrpc.Request), up func()) error {
	v, ok := r.table.Load().vhosts[p.vhost]
	if !ok || v.backends[t.Key] == nil {
		return ErrNoStream // reloaded away: the runtime rebuilds its listeners
	}
	key := t.Key
	access := callerAccess(ctx, v)
	t.Subscriptions = visibleSubscriptions(v, key, access, t.Subscriptions)
	if snap := p.backends[key]; modernSnapshot(snap) {
		return r.listenModern(ctx, v, p, hdr, t, access, emit, up)
	}
	notice := r.unsolicited(ctx, v, key, emit)
	if p.backends[key].OK() && p.backends[key].SessionID != "" {
		// The client's own backend session: what the backend sends it
		// unprompted (updates of the subscriptions its calls made there,
		// log messages, list changes) arrives on that session's stream, so
		// the listener attaches there rather than opening a session of its
		// own. A session the backend forgot falls back to one of its own.
		// The session's listeners on this instance share its one stream
		// (backend_session_stream.go).
		if h, ok := r.link.fastHandshake(ctx, v, key, p, p.backends[key], true); ok && h.SessionID != "" {
			k := keptStreamKey{vhost: v.name, backend: key, session: p.sessionID, id: store.BackendSessionID(h.SessionID)}
			open := func(ctx context.Context) (*upstream.Conn, error) { return v.clients[key].Open(ctx, h, hdr) }
			if err := r.link.streams.listenKept(ctx, k, open, notice, up); !refusedFastPath(err) {
				return err
			}
		}
	}
	conn, _, err := r.link.open(ctx, v, key, p, hdr)
	if err != nil {
		return err
	}
	defer conn.Close(false)
	r.link.applyLogLevel(ctx, conn, p, key)
	for _, uri := range t.Subscriptions {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		if _, err := conn.Call(ctx, "resources/subscribe", params, nil); err != nil {
			return err
		}
	}
	return conn.Listen(ctx, notice, up)
}

// unsolicited is what a listener does with a notification a backend sent
// on its standalone stream: renamed for the client and passed to emit.
func (r *Router) unsolicited(ctx context.Context, v *vhost, key string, emit func(*jsonrpc.Request)) func(*jsonrpc.Request) {
	return func(n *jsonrpc.Request) {
		switch nf := wire.NotificationOf(n.Method); {
		case nf.ResourceUpdate:
			if n = reprefixNotification(v, key, n); n == nil || !r.updateVisibleNow(ctx, v, n) {
				return
			}
		case nf.AboutRequest():
			return // belong to calls, never to the GET stream
		case nf.ListChanged != "":
			if v.keepsLists(key) {
				r.fed.listChanged(ctx, v.name, key)
			}
		}
		emit(n)
	}
}

// visibleSubscriptions keeps the backend-side subscription URIs whose
// published URI the access view shows: a subscription made before a reload
// hid its resource is not replayed to the backend.
func visibleSubscriptions(v *vhost, key string, access policy.View, uris []string) []string {
	if access.All() {
		return uris
	}
	var out []string
	for _, uri := range uris {
		if access.Visible(v.publishedURI(key, uri)) {
			out = append(out, uri)
		}
	}
	return out
}

// subscriptionsOf returns the backend-side URIs of the session's
// subscriptions that route to backend key.
func subscriptionsOf(v *vhost, key string, subs []string) []string {
	var out []string
	for _, uri := range subs {
		if b, name, err := v.route("resource", uri); err == nil && b == key {
			out = append(out, name)
		}
	}
	return out
}

// listenModern is ListenBackend for a backend that speaks 2026-07-28: it
// has no standalone stream and no resources/subscribe, so the session's
// interests become one subscriptions/listen (its acknowledgement is the
// moment the listener is up), and what it sends is renamed and untagged
// for the session's GET stream.
func (r *Router) listenModern(ctx context.Context, v *vhost, p *peer, hdr http.Header, t ListenTarget, access policy.View, emit func(*jsonrpc.Request), up func()) error {
	key := t.Key
	caps := capability.Of(p.backends[key])
	filter := listenFilter{
		ToolsListChanged:      caps.Tools != nil && caps.Tools.ListChanged,
		PromptsListChanged:    caps.Prompts != nil && caps.Prompts.ListChanged,
		ResourcesListChanged:  caps.Resources != nil && caps.Resources.ListChanged,
		ResourceSubscriptions: t.Subscriptions,
	}
	h, ok := r.link.fastHandshake(ctx, v, key, p, p.backends[key], false)
	if !ok {
		return ErrNoStream
	}
	conn, err := v.clients[key].Open(ctx, h, hdr)
	if err != nil {
		return err
	}
	defer conn.Close(false)
	params, _ := json.Marshal(map[string]any{"notifications": filter})
	_, err = conn.Call(ctx, "subscriptions/listen", params, func(msg jsonrpc.Message) {
		n, ok := msg.(*jsonrpc.Request)
		if !ok || n.IsCall() {
			return
		}
		switch nf := wire.NotificationOf(n.Method); {
		case nf.ListenAck:
			up()
			return
		case nf.ResourceUpdate:
			if n = reprefixNotification(v, key, n); n == nil || !r.updateVisibleNow(ctx, v, n) {
				return
			}
		case nf.ListChanged != "":
			if v.keepsLists(key) {
				r.fed.listChanged(ctx, v.name, key)
			}
		default:
			return // progress and log messages belong to requests
		}
		emit(untagSubscription(n))
	})
	return err
}

// untagSubscription drops a listen's subscription id from a notification
// that goes to a 2025-era GET stream, which has no such thing.
func untagSubscription(n *jsonrpc.Request) *jsonrpc.Request {
	var p map[string]json.RawMessage
	if json.Unmarshal(orEmpty(n.Params), &p) != nil || p == nil {
		return n
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(p["_meta"], &meta) != nil || meta == nil {
		return n
	}
	delete(meta, metaSubscriptionID)
	if len(meta) == 0 {
		delete(p, "_meta")
	} else {
		p["_meta"] = wire.RawObject(meta)
	}
	return &jsonrpc.Request{Method: n.Method, Params: wire.RawObject(p)}
}

// updateVisibleNow judges a resource update by the access rules in force
// when it arrives, not those of when the listener started: a reload's
// listeners are rebuilt make-before-break, and until the old ones stop
// they must not deliver what the new rules hide. A vhost no longer
// configured delivers nothing.
func (r *Router) updateVisibleNow(ctx context.Context, v *vhost, n *jsonrpc.Request) bool {
	cur, ok := r.table.Load().vhosts[v.name]
	if !ok {
		return false
	}
	return updateVisible(callerAccess(ctx, cur), n)
}
