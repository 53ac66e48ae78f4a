package router

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The instance holding a session's GET stream keeps one listening
// connection per backend that can tell it something: resource updates for
// the session's subscriptions, list changes, log messages. Each listener
// opens a backend session, replays the gateway session's state onto it
// (logging/setLevel, resources/subscribe), and forwards what the backend
// sends on its standalone stream.

// listenerSet is one generation of a session's listeners; it is replaced
// whole when subscriptions, log level or config change.
type listenerSet struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (l *listenerSet) stop() {
	l.cancel()
	l.wg.Wait()
}

// restartListeners replaces the session's listeners with a set built from
// the session's current state in the store. The channel it returns is
// closed once every new listener is receiving (or has failed its first
// try): from then on nothing the backends send is missed.
func (ss *sessionStream) restartListeners() <-chan struct{} {
	// One restart at a time: two racing restarts would each replace the
	// listeners they saw, and one generation would run on, unstopped,
	// logging every notification twice.
	ss.restartMu.Lock()
	defer ss.restartMu.Unlock()
	r := ss.hub.r
	ready := make(chan struct{})
	ss.mu.Lock()
	old := ss.listeners
	ss.listeners = nil
	ss.ready = ready
	finished := ss.finished
	ss.mu.Unlock()
	if old != nil {
		old.stop()
	}
	if finished {
		close(ready)
		return ready
	}
	sess, err := r.opts.Store.LoadSession(ss.ctx, ss.sid, r.opts.SessionTTL)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			go ss.finish(true)
		}
		close(ready)
		return ready
	}
	v, ok := r.table.Load().vhosts[sess.VHost]
	if !ok {
		close(ready)
		return ready
	}
	lctx, cancel := context.WithCancel(ss.ctx)
	set := &listenerSet{cancel: cancel}
	var up sync.WaitGroup
	for _, key := range v.keys {
		subs := subscriptionsOf(v, key, sess.Subscriptions)
		if !wantsListener(sess.Backends[key], len(subs) > 0, sess.LogLevel != "") {
			continue
		}
		up.Add(1)
		set.wg.Add(1)
		go func() {
			defer set.wg.Done()
			ss.listen(lctx, v, key, sess, subs, sync.OnceFunc(up.Done))
		}()
	}
	go func() {
		up.Wait()
		close(ready)
	}()
	ss.mu.Lock()
	if ss.finished {
		ss.mu.Unlock()
		set.stop()
		return ready
	}
	ss.listeners = set
	ss.wg.Add(1) // under ss.mu, before finish can Wait
	ss.mu.Unlock()
	go func() { // stop this generation when the hold ends
		defer ss.wg.Done()
		<-lctx.Done()
		set.stop()
	}()
	return ready
}

// listen keeps one backend listener running, reconnecting with backoff,
// until ctx ends or the backend says it offers no stream. It calls up once
// the first connection is receiving, or when the first try fails.
func (ss *sessionStream) listen(ctx context.Context, v *vhost, key string, sess *store.Session, subs []string, up func()) {
	defer up()
	r := ss.hub.r
	backoff := 500 * time.Millisecond
	for ctx.Err() == nil {
		err := ss.listenOnce(ctx, v, key, sess, subs, up)
		up()
		if errors.Is(err, upstream.ErrNoStream) || ctx.Err() != nil {
			return
		}
		r.log.Debug("backend listener ended; reconnecting", "backend", key, "error", err, "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

func (ss *sessionStream) listenOnce(ctx context.Context, v *vhost, key string, sess *store.Session, subs []string, up func()) error {
	r := ss.hub.r
	conn, _, err := r.open(ctx, v, key, sess, ss.hdr)
	if err != nil {
		return err
	}
	defer conn.Close(false)
	r.applyLogLevel(ctx, conn, sess, key)
	for _, uri := range subs {
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
		ss.emit(n)
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

// wantsListener reports whether a backend can send the session anything
// unsolicited: updates for its subscriptions, list changes, or log
// messages at the level the client set.
func wantsListener(snap *store.BackendSnapshot, hasSubs, hasLogLevel bool) bool {
	if !snap.OK() {
		return false
	}
	var caps struct {
		Tools     *struct{ ListChanged bool } `json:"tools"`
		Prompts   *struct{ ListChanged bool } `json:"prompts"`
		Resources *struct {
			ListChanged bool `json:"listChanged"`
			Subscribe   bool `json:"subscribe"`
		} `json:"resources"`
		Logging *json.RawMessage `json:"logging"`
	}
	_ = json.Unmarshal(snap.Capabilities, &caps)
	switch {
	case hasSubs && caps.Resources != nil && caps.Resources.Subscribe:
		return true
	case caps.Tools != nil && caps.Tools.ListChanged,
		caps.Prompts != nil && caps.Prompts.ListChanged,
		caps.Resources != nil && caps.Resources.ListChanged:
		return true
	case hasLogLevel && caps.Logging != nil:
		return true
	}
	return false
}
