package router

import (
	"context"
	"encoding/json"
	"net/http"

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
// (router/session).

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
	v, ok := r.table.Load().vhosts[sess.VHost]
	if !ok {
		return nil, false
	}
	for _, key := range v.keys {
		subs := subscriptionsOf(v, key, sess.Subscriptions)
		if capabilitiesOf(sess.Backends[key]).sendsUnsolicited(len(subs) > 0, sess.LogLevel != "") {
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
	v, ok := r.table.Load().vhosts[sess.VHost]
	if !ok || v.backends[t.Key] == nil {
		return ErrNoStream // reloaded away: the runtime rebuilds its listeners
	}
	key := t.Key
	conn, _, err := r.open(ctx, v, key, sess, hdr)
	if err != nil {
		return err
	}
	defer conn.Close(false)
	r.applyLogLevel(ctx, conn, sess, key)
	for _, uri := range t.Subscriptions {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		if _, err := conn.Call(ctx, "resources/subscribe", params, nil); err != nil {
			return err
		}
	}
	return conn.Listen(ctx, func(n *jsonrpc.Request) {
		switch n.Method {
		case "notifications/resources/updated":
			if n = reprefixNotification(v, key, n); n == nil {
				return
			}
		case "notifications/progress", "notifications/cancelled":
			return // belong to calls, never to the GET stream
		case "notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed":
			if v.backends[key].ListCacheTTL > 0 {
				r.listChanged(ctx, v.name, key)
			}
		}
		emit(n)
	}, up)
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
