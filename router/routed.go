package router

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/naming"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// target is where a routed request goes.
type target struct {
	backend string
	name    string // backend-side identifier
	public  string // downstream identifier, for messages and re-prefixing
	kind    string // what the identifier names: tool, prompt, resource
	params  map[string]json.RawMessage
	// headers are the Mcp-Param-* headers the call to a 2026-07-28
	// backend carries (upstream.CallOptions.Headers): the client's, or
	// made from the arguments (withParamHeaders).
	headers http.Header
}

// routed forwards a targeted method to the one backend that owns the
// identifier. The identifier is stripped before the backend sees it.
func (rc *routedCalls) routed(ctx context.Context, v *vhost, c *Call) *jsonrpc.Response {
	method := c.Request.Method
	t, rerr := c.d.t, c.d.rerr
	if rerr == nil && !v.routedVisible(c.d.access, method, t) {
		// Hidden: refused as if no backend owned it, before any hook,
		// bound or backend could answer differently.
		rerr = unknownIdentifier(t.kind, t.public)
		noteDenied(c, c.d.access.DenialReason(t.public))
	} else if rerr == nil {
		noteRouted(c, t)
	}
	if rerr == nil {
		if refusal := v.routedStepUp(c.d.access, c.Request, t); refusal != nil {
			noteDenied(c, c.d.access.DenialReason(t.public)+" without the scopes of the rule ahead")
			return refusal
		}
	}
	if sess := c.Caller.facts().session; rerr == nil && wire.MethodOf(method).Subscription == wire.Subscribes && sess != nil { // (a client no session holds has none to hold it)
		rerr = subscribeRefusal(sess, t.public)
	}
	if rerr == nil {
		rerr = rc.skillsRefusal(v, c, t) // skills.go
	}
	if rerr != nil {
		return errorResponse(c.Request.ID, rerr)
	}
	rc.annotateTarget(ctx, t)
	headers, perr := c.Caller.clientParamHeaders(ctx, rc, v, c, t, modernSnapshot(c.peer.backends[t.backend]))
	if perr != nil {
		return errorResponse(c.Request.ID, perr)
	}
	t.headers = headers
	if c.Caller.facts().inRounds && multiRoundTrip(method) {
		if resp := rc.openRequestState(ctx, v, c, t); resp != nil {
			return resp
		}
		if resp := takeSignInAnswer(c, t); resp != nil { // sign_in.go
			return resp
		}
	}
	c, resp := rc.signInFirst(ctx, v, c, t) // sign_in.go
	if resp != nil {
		return resp
	}
	params := []byte(wire.RawObject(t.params)) // its members' bytes as they came: no re-encoding

	sent := params // what the client sent, for the Mcp-Param-* headers below
	hc, params, herr := rc.preHooks(ctx, v, c, t, params)
	if herr != nil {
		return errorResponse(c.Request.ID, herr)
	}

	if runs, refusal := rc.tasks.runsAsTask(v, c, t); refusal != nil {
		return errorResponse(c.Request.ID, refusal)
	} else if runs {
		return rc.tasks.startTask(ctx, v, c, t, params, sent, hc) // tasks_run.go
	}
	return c.Caller.relay(ctx, rc, v, c, t, params, sent, hc) // caller_*.go: relay, or park
}

// relay sends a routed request, decided and hooked, to its backend and
// gives back the backend's answer as the client sees it: request state
// sealed, task ids sealed, URIs published, envelope stripped for a
// 2025-era client, post-hooks run. sent is the params as the client sent
// them, params as the pre-hooks left them. A task the gateway runs
// relays its call here too, detached from the client's request.
func (rc *routedCalls) relay(ctx context.Context, v *vhost, c *Call, t *target, params, sent json.RawMessage, hc *hook.Call) *jsonrpc.Response {
	method := c.Request.Method
	mrtr := c.Caller.facts().inRounds && multiRoundTrip(method)
	// The Mcp-Param-* headers a 2026-07-28 backend reads, where the
	// client's do not fit these arguments.
	t = c.Caller.gatewayParamHeaders(ctx, rc, v, c, t, params, sent, modernSnapshot(c.peer.backends[t.backend]))
	resp, err := rc.link.withBackend(ctx, v, t.backend, method, c.peer, c.Header, func(conn *upstream.Conn) (*jsonrpc.Response, error) {
		return rc.callRouted(ctx, v, c, t, conn, params, hc)
	})
	if err != nil {
		if resp := rc.signInAnswer(ctx, v, c, t, err); resp != nil { // sign_in.go
			return resp
		}
		return errorResponse(c.Request.ID, backendError(t.backend, err))
	}
	if resp.Error != nil {
		// The backend's JSON-RPC error passes through unchanged.
		return &jsonrpc.Response{ID: c.Request.ID, Error: resp.Error}
	}
	result := resp.Result
	if mrtr {
		var asks bool
		if result, asks, err = rc.sealRequestState(ctx, v, c, t, result); err != nil {
			if errors.Is(err, errStoreUnavailable) {
				return rc.storeUnavailable(c.Request.ID, err)
			}
			return errorResponse(c.Request.ID, rpcError(CodeInternalError, "backend %s answered input_required with a malformed result", wire.Quote(t.backend)))
		}
		if asks {
			return resultResponse(c.Request.ID, result) // an interim result: no post-hooks, no renaming
		}
	}
	isTask := false
	if wire.MethodOf(method).Tool {
		if result, isTask, err = rc.tasks.sealTaskResult(ctx, v, c, t, result); err != nil {
			if errors.Is(err, errStoreUnavailable) {
				return rc.storeUnavailable(c.Request.ID, err)
			}
			return errorResponse(c.Request.ID, rpcError(CodeInternalError, "backend %s answered a malformed task: %v", wire.Quote(t.backend), err))
		}
	}
	if !v.single() {
		result = naming.PublishResultURIs(t.backend, method, result)
	}
	if wire.MethodOf(method).ResultURIs == wire.URIsInChildren {
		result = visibleChildren(result, c.d.access) // skills.go
	}
	// The envelope as the client reads it (only a 2026-07-28 backend writes it).
	result = c.Caller.backendResult(result, modernSnapshot(c.peer.backends[t.backend]), isTask)
	if hc != nil {
		var herr *jsonrpc.Error
		if result, herr = rc.postHooks(ctx, v, c, hc, result); herr != nil {
			return errorResponse(c.Request.ID, herr)
		}
	}
	return rc.recordSubscription(ctx, c, t, result)
}

// preHooks runs the plugins' Pre hooks on a hooked method's params: the
// hook call the Post hooks get (nil when none runs) and the params as the
// hooks left them.
func (rc *routedCalls) preHooks(ctx context.Context, v *vhost, c *Call, t *target, params json.RawMessage) (*hook.Call, json.RawMessage, *jsonrpc.Error) {
	method := c.Request.Method
	if !hooked(method) || len(rc.opts.Hooks)+len(v.hooks) == 0 {
		return nil, params, nil
	}
	hc := &hook.Call{Method: method, VHost: v.name, Backend: t.backend, Name: t.name,
		Principal: c.Principal, SessionID: c.peer.sessionID, Params: params}
	var schema func(ctx context.Context) (json.RawMessage, error)
	if wire.MethodOf(method).Tool {
		schema = func(ctx context.Context) (json.RawMessage, error) {
			return rc.fed.toolInputSchema(ctx, v, c, t.backend, t.name)
		}
	}
	observer, _ := rc.opts.Observer.(PluginObserver)
	hc.Bind(schema, observer)
	for _, hooks := range [2][]hook.Hook{rc.opts.Hooks, v.hooks} {
		for _, h := range hooks {
			if err := h.Pre(ctx, hc); err != nil {
				return nil, nil, hookRefusal(c, err)
			}
		}
	}
	return hc, hc.Params, nil
}

// postHooks runs the plugins' Post hooks on a result.
func (rc *routedCalls) postHooks(ctx context.Context, v *vhost, c *Call, hc *hook.Call, result json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	var err error
	for _, hooks := range [2][]hook.Hook{rc.opts.Hooks, v.hooks} {
		for _, h := range hooks {
			if result, err = h.Post(ctx, hc, result); err != nil {
				return nil, hookRefusal(c, err)
			}
		}
	}
	// Results are written downstream as they are (wire.EncodeResponse):
	// what a hook made must be JSON.
	if !json.Valid(result) {
		return nil, rpcError(CodeInternalError, "a post-hook returned a result that is not JSON")
	}
	return result, nil
}

// callRouted sends a routed call to the backend on conn, relaying what the
// backend sends meanwhile (progress, requests to the client).
func (rc *routedCalls) callRouted(ctx context.Context, v *vhost, c *Call, t *target, conn *upstream.Conn, params json.RawMessage, hc *hook.Call) (*jsonrpc.Response, error) {
	method := c.Request.Method
	callCtx, endCall := context.WithCancel(ctx)
	defer endCall()
	cs := &callStream{r: rc, v: v, c: c, ctx: callCtx, conn: conn, key: t.backend, hook: hc, access: c.d.access}
	p := params
	if c.Stream != nil {
		p = cs.mapProgressToken(params)
	}
	if conn.Modern() && wire.MethodOf(method).Subscription != wire.SubscriptionNone {
		// A 2026-07-28 backend has no resources/subscribe: the session
		// records the subscription and the GET-stream holder's
		// subscriptions/listen carries it (backend_listen.go).
		return &jsonrpc.Response{ID: c.Request.ID, Result: json.RawMessage(`{}`)}, nil
	}
	// A client asked in rounds gets a 2026-07-28 backend's own; another
	// has the gateway fulfil them (caller_*.go).
	resp, err := c.Caller.exchange(callCtx, rc, conn, cs, method, p, upstream.CallOptions{Headers: t.headers})
	endCall() // server-to-client requests still waiting give up
	cs.wg.Wait()
	return resp, err
}

// recordSubscription records a resources/subscribe or unsubscribe the
// backend accepted (or that the gateway answers itself) in the session,
// and has the instance holding the session's GET stream rebuild its
// listeners; other methods' results pass.
func (rc *routedCalls) recordSubscription(ctx context.Context, c *Call, t *target, result json.RawMessage) *jsonrpc.Response {
	var err error
	switch wire.MethodOf(c.Request.Method).Subscription {
	case wire.Subscribes:
		err = rc.opts.Store.AddSubscription(ctx, c.peer.sessionID, t.public, rc.opts.SessionTTL)
	case wire.Unsubscribes:
		err = rc.opts.Store.RemoveSubscription(ctx, c.peer.sessionID, t.public, rc.opts.SessionTTL)
	default:
		return resultResponse(c.Request.ID, result)
	}
	if err != nil {
		return rc.subscriptionStoreError(c.Request.ID, t.public, err)
	}
	c.Caller.listenersChanged(ctx, c.peer.sessionID)
	return resultResponse(c.Request.ID, result)
}

// resolve finds the backend and the backend-side identifier of a routed
// request, and returns the params with the identifier rewritten: by the
// prefix rule on the field its row routes on, or by the row's own
// resolver.
func (rc *routedCalls) resolve(v *vhost, method string, raw json.RawMessage) (*target, *jsonrpc.Error) {
	params, ok := wire.Object(raw) // the transport has checked it is JSON
	if !ok {
		return nil, invalidParams("%s params must be an object", method)
	}
	row := rowOf(method)
	if row.resolveBy != nil {
		return row.resolveBy(v, params, row.Routed, method)
	}
	return routeField(v, params, row.routeOn, row.Routed, method)
}

// resolveTool resolves a tools/call: an alias, else the prefix rule.
func resolveTool(v *vhost, params map[string]json.RawMessage, kind, method string) (*target, *jsonrpc.Error) {
	name, err := stringField(params, "name", method)
	if err != nil {
		return nil, err
	}
	// A 2025-11-25 task augmentation (params.task) is ignored, as
	// SEP-2663 says: the gateway declares no capabilities.tasks, and a
	// backend that creates tasks does so under the Tasks extension
	// (router/tasks.go). The backend never sees it.
	delete(params, "task")
	t := &target{public: name, kind: kind, params: params}
	if a, ok := v.aliases.Resolve(name); ok {
		t.backend, t.name = a.Backend, a.Tool
	} else if t.backend, t.name, err = v.route(kind, name); err != nil {
		return nil, err
	}
	params["name"], _ = json.Marshal(t.name)
	// "arguments": null is legal JSON but some SDK servers crash on it;
	// absent arguments mean the same thing to every backend.
	if a, ok := params["arguments"]; ok && string(a) == "null" {
		delete(params, "arguments")
	}
	return t, nil
}

// resolveCompletion resolves a completion/complete by its reference: a
// prompt's name or a resource's URI.
func resolveCompletion(v *vhost, params map[string]json.RawMessage, _, method string) (*target, *jsonrpc.Error) {
	var ref map[string]json.RawMessage
	if err := json.Unmarshal(params["ref"], &ref); err != nil || ref == nil {
		return nil, invalidParams("completion/complete needs params.ref")
	}
	refType, _ := stringField(ref, "type", method)
	field, kind := "", ""
	switch refType {
	case "ref/prompt":
		field, kind = "name", "prompt"
	case "ref/resource":
		field, kind = "uri", "resource"
	default:
		return nil, invalidParams("completion/complete: unsupported ref type %s", wire.Quote(refType))
	}
	t, err := routeField(v, ref, field, kind, method)
	if err != nil {
		return nil, err
	}
	params["ref"], _ = json.Marshal(t.params)
	t.params = params
	return t, nil
}

// routeField routes on one string field of an object and rewrites it.
func routeField(v *vhost, obj map[string]json.RawMessage, field, kind, method string) (*target, *jsonrpc.Error) {
	id, err := stringField(obj, field, method)
	if err != nil {
		return nil, err
	}
	t := &target{public: id, kind: kind, params: obj}
	if t.backend, t.name, err = v.route(kind, id); err != nil {
		return nil, err
	}
	obj[field], _ = json.Marshal(t.name)
	return t, nil
}

// RouteOf names the backend that a routed request (tools/call,
// resources/read, prompts/get, …) for the published identifier id goes to
// on vhost: aliases first for tools/call, then the prefix rule. It is ""
// when the method is not routed, the identifier unknown or the vhost not
// configured. It reads only the routing table, for the request log: no
// access rule is evaluated and no backend is contacted.
func (r *Router) RouteOf(vhost, method, id string) string {
	v, row := r.table.Load().vhosts[vhost], rowOf(method)
	if v == nil || row.serving != routed || id == "" {
		return ""
	}
	if row.Tool {
		if v.search != nil && gatewayTool(id) {
			return "" // the gateway's own (tool_search.go)
		}
		if a, ok := v.aliases.Resolve(id); ok {
			return a.Backend
		}
	}
	backend, _, err := v.route(row.Routed, id)
	if err != nil {
		return ""
	}
	return backend
}

// route applies the prefix rule: single-backend vhosts pass identifiers
// through, multi-backend ones split on the longest matching key.
func (v *vhost) route(kind, id string) (backend, name string, err *jsonrpc.Error) {
	if v.single() {
		return v.keys[0], id, nil
	}
	split := v.split.Split
	if kind == "resource" || kind == "skill" {
		split = v.split.SplitURI
	}
	if k, rest, ok := split(id); ok {
		return k, rest, nil
	}
	return "", "", unknownIdentifier(kind, id)
}

// unknownIdentifier is the answer to a routed request for an identifier
// no backend owns, and, word for word, to one for an identifier the
// caller's access rules hide: the two must not be told apart.
func unknownIdentifier(kind, id string) *jsonrpc.Error {
	return invalidParams("unknown %s %s: no backend of this virtual host owns it", kind, wire.Quote(id))
}

func stringField(obj map[string]json.RawMessage, field, method string) (string, *jsonrpc.Error) {
	var s string
	if err := json.Unmarshal(obj[field], &s); err != nil || s == "" {
		return "", invalidParams("%s needs a non-empty string %q", method, field)
	}
	return s, nil
}

// hookError turns a hook's error into the JSON-RPC error the client sees.
func hookError(err error) *jsonrpc.Error {
	var d *hook.Denial
	if errors.As(err, &d) {
		return &jsonrpc.Error{Code: d.Code, Message: d.Message, Data: d.Data}
	}
	return rpcError(CodeInternalError, "hook failed")
}
