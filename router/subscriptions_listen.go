package router

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/capability"
	"github.com/mcpgw/gateway/router/naming"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// subscriptions/listen (protocol 2026-07-28) is the client's one stream of
// what nobody asked for: list changes and updates of the resources it
// names. The gateway fans it in: one upstream listen per backend that can
// honour part of the client's filter, each asked for its part (resource
// URIs routed and stripped like resources/read's). The client is sent the
// acknowledgement first, with the union of what the backends agreed to
// (URIs renamed back), then every notification they send, renamed and
// tagged with the client's subscription id (its listen request's id),
// until it goes away or the gateway shuts down, which ends the stream
// with the listen's result.

// listenFilter is subscriptions/listen's params.notifications.
type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	// TaskIDs are tasks whose status changes the client wants
	// (notifications/tasks; the Tasks extension, tasks.go).
	TaskIDs []string `json:"taskIds,omitempty"`
}

const (
	metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
	methodListenAck    = "notifications/subscriptions/acknowledged"
)

// wantsListChange reports whether the filter asks for changes of list
// ("tools", "prompts", "resources": a notification's ListChanged).
func (f *listenFilter) wantsListChange(list string) bool {
	switch list {
	case "tools":
		return f.ToolsListChanged
	case "prompts":
		return f.PromptsListChanged
	case "resources":
		return f.ResourcesListChanged
	}
	return false
}

// EndListens ends every subscriptions/listen this instance serves, each
// with its result: servers call it when shutting down, so the clients
// reconnect elsewhere rather than see a cut stream.
func (r *Router) EndListens() { r.endListens() }

// listen serves one subscriptions/listen; it returns when the client has
// gone (ctx) or the gateway shuts down.
func (r *Router) listen(ctx context.Context, v *vhost, c *Call) *jsonrpc.Response {
	var p struct {
		Notifications *listenFilter `json:"notifications"`
	}
	if err := json.Unmarshal(orEmpty(c.Request.Params), &p); err != nil || p.Notifications == nil {
		return errorResponse(c.Request.ID, invalidParams("subscriptions/listen needs params.notifications, an object"))
	}
	if c.Stream == nil {
		return errorResponse(c.Request.ID, invalidParams("subscriptions/listen answers on an event stream: accept text/event-stream"))
	}
	if resp := r.checkListenFilter(c.Request.ID, p.Notifications); resp != nil {
		return resp
	}
	if len(p.Notifications.TaskIDs) > 0 && !declaresExtension(c.Caller.facts().capabilities, wire.ExtensionTasks) {
		return errorResponse(c.Request.ID, needsTasksExtension("subscriptions/listen with notifications.taskIds"))
	}
	tasks, err := r.tasks.openListenTasks(ctx, v, c, p.Notifications.TaskIDs)
	if err != nil {
		return r.storeUnavailable(c.Request.ID, err)
	}
	if !r.listens.take(c.Principal) {
		return r.tooManyListens(c.Request.ID)
	}
	defer r.listens.give(c.Principal)
	// Admitted: the answer is an event stream from now on (a refusal
	// above still had an HTTP status of its own).
	if b, ok := c.Stream.(interface{ Begin() }); ok {
		b.Begin()
	}
	subID, _ := json.Marshal(c.Request.ID.Raw())
	pr := c.Caller.peer(ctx, r.link, v, c)
	ls := &listenSession{r: r, v: v, c: c, subID: subID, tasks: tasks}

	lctx, stop := context.WithCancel(ctx)
	defer stop()
	access := c.d.access
	var wg sync.WaitGroup
	for _, key := range v.keys {
		if !pr.backends[key].OK() {
			// Unreachable now: its part joins when it is back, without
			// holding up the acknowledgement.
			wg.Go(func() { ls.rejoin(lctx, pr, key, access, p.Notifications) })
			continue
		}
		want := ls.filterFor(key, access, p.Notifications, pr.backends[key])
		if want == nil {
			continue
		}
		ls.pending.Add(1)
		wg.Go(func() { ls.keep(lctx, pr, key, want, ls.pending.Done) })
	}
	ls.pending.Wait() // every backend acknowledged, or failed
	ls.acknowledgedGatewayTasks()
	ls.acknowledge()
	wg.Go(func() { r.tasks.watchGatewayTasks(lctx, tasks, ls.deliver) })

	if ls.agreedAny() {
		select {
		case <-ctx.Done():
		case <-r.listensDone:
		}
	}
	stop()
	wg.Wait()
	result, _ := json.Marshal(map[string]any{"_meta": map[string]json.RawMessage{metaSubscriptionID: subID}})
	return r.finishModern(ctx, resultResponse(c.Request.ID, result), "subscriptions/listen", nil)
}

// backendFilter is the part of the client's filter backend key can honour,
// by its snapshot's capabilities, in its own URIs; nil when none is. A URI
// the caller's access rules hide is left out like one no backend owns:
// never subscribed, never acknowledged.
func backendFilter(v *vhost, key string, access policy.View, f *listenFilter, snap *store.BackendSnapshot) *listenFilter {
	if !snap.OK() {
		return nil
	}
	caps := capability.Of(snap)
	out := &listenFilter{
		ToolsListChanged:     f.ToolsListChanged && caps.Tools != nil && caps.Tools.ListChanged,
		PromptsListChanged:   f.PromptsListChanged && caps.Prompts != nil && caps.Prompts.ListChanged,
		ResourcesListChanged: f.ResourcesListChanged && caps.Resources != nil && caps.Resources.ListChanged,
	}
	if caps.Resources != nil && caps.Resources.Subscribe {
		for _, uri := range f.ResourceSubscriptions {
			if b, name, err := v.route("resource", uri); err == nil && b == key && access.Visible(uri) {
				out.ResourceSubscriptions = append(out.ResourceSubscriptions, name)
			}
		}
	}
	if !out.ToolsListChanged && !out.PromptsListChanged && !out.ResourcesListChanged && len(out.ResourceSubscriptions) == 0 {
		return nil
	}
	return out
}

// filterFor is backend key's part of the listen: backendFilter, and the
// ids of the backend's own tasks the client asked for.
func (ls *listenSession) filterFor(key string, access policy.View, f *listenFilter, snap *store.BackendSnapshot) *listenFilter {
	want := backendFilter(ls.v, key, access, f, snap)
	if ids := ls.tasks.backendIDs(key); len(ids) > 0 && modernSnapshot(snap) {
		if want == nil {
			want = &listenFilter{}
		}
		want.TaskIDs = ids
	}
	return want
}

// listenSession is one client listen being served.
type listenSession struct {
	r     *Router
	v     *vhost
	c     *Call
	subID json.RawMessage
	tasks *listenTasks

	pending sync.WaitGroup // backends not yet acknowledged (or failed)

	mu         sync.Mutex
	acked      bool                // the client has its acknowledgement
	agreed     listenFilter        // union of the backends' acknowledgements, client-side names
	agreedURIs map[string]struct{} // agreed.ResourceSubscriptions, as a set: acknowledging is linear
	any        bool                // some backend agreed to something
	early      []*jsonrpc.Request  // notifications that came before the client's ack
	// steps counts the URIs the acknowledgement has looked at, for the
	// test that it stays linear in the listen's size.
	steps int
}

// keep keeps one backend's part of the listen until ctx ends,
// reconnecting with backoff. It calls acked once its part is acknowledged,
// or its first try failed, so the client's acknowledgement never waits on
// a dead backend.
func (ls *listenSession) keep(ctx context.Context, p *peer, key string, want *listenFilter, acked func()) {
	ackOnce := sync.OnceFunc(acked)
	defer ackOnce()
	backoff := 500 * time.Millisecond
	for ctx.Err() == nil {
		var err error
		if modernSnapshot(p.backends[key]) {
			err = ls.run(ctx, p, key, want, ackOnce)
		} else {
			err = ls.runLegacy(ctx, p, key, want, ackOnce)
		}
		ackOnce() // a first try that failed acknowledges nothing of this backend
		if errors.Is(err, ErrNoStream) || ctx.Err() != nil {
			return
		}
		ls.r.log.Debug("backend listen ended; reconnecting", "vhost", ls.v.name, "backend", key, "error", err, "in", backoff)
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

// rejoin waits for a backend that could not be reached when the listen
// began (its discovery failed), rediscovering it with backoff, then keeps
// its part like the others'. The client's acknowledgement has gone out
// without it; its notifications follow as they come.
func (ls *listenSession) rejoin(ctx context.Context, p *peer, key string, access policy.View, f *listenFilter) {
	backoff := 500 * time.Millisecond
	for {
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if d := ls.r.link.backendDiscovery(ctx, ls.v, key, ls.c.Header); d.snap.OK() {
			want := ls.filterFor(key, access, f, d.snap)
			if want == nil {
				return // back, but it can honour none of the filter
			}
			// p is shared by every backend's part: a copy with this one's snapshot
			ls.keep(ctx, p.withSnapshot(key, d.snap), key, want, func() {})
			return
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// run holds one 2026-07-28 backend's listen: its acknowledgement is this
// backend's part of the client's.
func (ls *listenSession) run(ctx context.Context, p *peer, key string, want *listenFilter, acked func()) error {
	params, _ := json.Marshal(map[string]any{"notifications": want})
	_, err := ls.r.link.withBackend(ctx, ls.v, key, "subscriptions/listen", p, ls.c.Header, func(conn *upstream.Conn) (*jsonrpc.Response, error) {
		return conn.Call(ctx, "subscriptions/listen", params, func(msg jsonrpc.Message) {
			n, ok := msg.(*jsonrpc.Request)
			if !ok || n.IsCall() {
				return
			}
			if wire.NotificationOf(n.Method).ListenAck {
				var p struct {
					Notifications listenFilter `json:"notifications"`
				}
				_ = json.Unmarshal(n.Params, &p)
				ls.acknowledged(key, p.Notifications)
				acked()
				return
			}
			if listChange(n.Method) && ls.v.keepsLists(key) {
				ls.r.fed.listChanged(ctx, ls.v.name, key)
			}
			ls.forward(key, n, false)
		})
	})
	return err
}

// runLegacy holds a 2025-era backend's part: a backend session of its own
// with resources/subscribe for the client's URIs and the backend's GET
// stream (router.ListenBackend), filtered to what the client asked for.
// Its part is acknowledged once the stream is up, as much of the filter as
// its capabilities can honour.
func (ls *listenSession) runLegacy(ctx context.Context, p *peer, key string, want *listenFilter, acked func()) error {
	quiet := *p
	quiet.logLevel = "" // log messages belong to requests, never to a listen
	subs := map[string]bool{}
	for _, uri := range want.ResourceSubscriptions {
		subs[uri] = true
	}
	up := sync.OnceFunc(func() {
		ls.acknowledged(key, *want)
		acked()
	})
	return ls.r.listenBackend(ctx, &quiet, ls.c.Header, ListenTarget{Key: key, Subscriptions: want.ResourceSubscriptions}, func(n *jsonrpc.Request) {
		switch nf := wire.NotificationOf(n.Method); {
		case nf.ListChanged != "":
			if !want.wantsListChange(nf.ListChanged) {
				return
			}
		case nf.ResourceUpdate:
			// ListenBackend renamed it already; the backend may also update
			// URIs nobody asked this listen for (another subscription of
			// its session): only the asked ones pass.
			var p struct {
				URI string `json:"uri"`
			}
			_ = json.Unmarshal(n.Params, &p)
			uri := p.URI
			if !ls.v.single() {
				if _, name, err := ls.v.route("resource", uri); err == nil {
					uri = name
				}
			}
			if !subs[uri] {
				return
			}
		default:
			return
		}
		ls.forward(key, n, true)
	}, up)
}

// acknowledged adds a backend's acknowledged filter (its own URIs) to the
// union.
func (ls *listenSession) acknowledged(key string, f listenFilter) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	a := &ls.agreed
	a.ToolsListChanged = a.ToolsListChanged || f.ToolsListChanged
	a.PromptsListChanged = a.PromptsListChanged || f.PromptsListChanged
	a.ResourcesListChanged = a.ResourcesListChanged || f.ResourcesListChanged
	if ls.agreedURIs == nil {
		ls.agreedURIs = make(map[string]struct{}, len(f.ResourceSubscriptions))
	}
	for _, uri := range f.ResourceSubscriptions {
		ls.steps++
		if !ls.v.single() {
			uri = naming.PublishURI(key, uri)
		}
		if _, dup := ls.agreedURIs[uri]; !dup {
			ls.agreedURIs[uri] = struct{}{}
			a.ResourceSubscriptions = append(a.ResourceSubscriptions, uri)
		}
	}
	for _, id := range f.TaskIDs {
		if token, ok := ls.tasks.byBackend[key][id]; ok {
			a.TaskIDs = append(a.TaskIDs, token)
			ls.any = true
		}
	}
	ls.any = ls.any || f.ToolsListChanged || f.PromptsListChanged || f.ResourcesListChanged || len(f.ResourceSubscriptions) > 0
}

// acknowledgedGatewayTasks adds the tasks the gateway runs, which it
// watches itself, to the union.
func (ls *listenSession) acknowledgedGatewayTasks() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for token := range ls.tasks.gateway {
		ls.agreed.TaskIDs = append(ls.agreed.TaskIDs, token)
		ls.any = true
	}
	sort.Strings(ls.agreed.TaskIDs)
}

// acknowledge sends the client its acknowledgement, then what came early.
func (ls *listenSession) acknowledge() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	params, _ := json.Marshal(map[string]any{"notifications": ls.agreed,
		"_meta": map[string]json.RawMessage{metaSubscriptionID: ls.subID}})
	_ = ls.c.Stream.Send(&jsonrpc.Request{Method: methodListenAck, Params: params})
	ls.acked = true
	for _, n := range ls.early {
		_ = ls.c.Stream.Send(n)
	}
	ls.early = nil
}

func (ls *listenSession) agreedAny() bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.any
}

// forward renames a backend's notification for the client, tags it with
// the client's subscription id, and sends it (or keeps it until the
// acknowledgement has gone out). Progress and log messages belong to
// requests, never to a listen.
func (ls *listenSession) forward(key string, n *jsonrpc.Request, renamed bool) {
	switch nf := wire.NotificationOf(n.Method); {
	case nf.AboutRequest() || nf.Log:
		return
	case nf.ResourceUpdate:
		if renamed {
			break
		}
		if n = reprefixNotification(ls.v, key, n); n == nil {
			return
		}
	case nf.TaskStatus:
		if n = ls.tasks.clientTaskNotification(ls.v, key, n); n == nil {
			return
		}
	}
	ls.deliver(n)
}

// deliver tags a notification with the client's subscription id and
// sends it, or keeps it until the acknowledgement has gone out.
func (ls *listenSession) deliver(n *jsonrpc.Request) {
	n = tagSubscription(n, ls.subID)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if !ls.acked {
		ls.early = append(ls.early, n)
		return
	}
	_ = ls.c.Stream.Send(n)
}

// tagSubscription sets params._meta's subscription id.
func tagSubscription(n *jsonrpc.Request, subID json.RawMessage) *jsonrpc.Request {
	var p map[string]json.RawMessage
	if json.Unmarshal(orEmpty(n.Params), &p) != nil || p == nil {
		p = map[string]json.RawMessage{}
	}
	meta := map[string]json.RawMessage{}
	_ = json.Unmarshal(p["_meta"], &meta)
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta[metaSubscriptionID] = subID
	p["_meta"] = wire.RawObject(meta)
	return &jsonrpc.Request{Method: n.Method, Params: wire.RawObject(p)}
}
