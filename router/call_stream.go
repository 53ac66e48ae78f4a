package router

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/naming"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpgw/gateway/store"
)

// callStream handles what a backend sends on a call's stream besides the
// response: progress (token mapped back to the client's), log messages and
// other notifications, and server-to-client requests (sampling,
// elicitation, roots), which go to the client under a gateway-issued id and
// whose answers may come back through any instance.
type callStream struct {
	r    *routedCalls
	v    *vhost
	c    *Call
	ctx  context.Context
	conn *upstream.Conn
	key  string // backend key
	hook *hook.Call
	// access is the call's access decision: a resource update the
	// backend sends during the call reaches the client only for a
	// resource it may see.
	access policy.View

	// The backend sees upstreamToken; the client gets its own token back.
	upstreamToken   string
	downstreamToken json.RawMessage

	wg sync.WaitGroup // server-to-client requests in flight
}

// mapProgressToken replaces the client's progress token in the params
// sent upstream with one the gateway issues for this call, registered
// before the request is sent, so a notification carrying any other token
// (another call's, or a backend's invention) matches nothing and is
// dropped, and concurrent calls cannot see each other's progress.
func (cs *callStream) mapProgressToken(params json.RawMessage) json.RawMessage {
	if !bytes.Contains(params, []byte(`"progressToken"`)) {
		return params // most calls: no decode
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return params
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(p["_meta"], &meta) != nil || meta == nil {
		return params
	}
	tok, ok := meta["progressToken"]
	if !ok || string(tok) == "null" {
		return params
	}
	cs.downstreamToken = tok
	cs.upstreamToken = store.RandomID("mcpgw-p-")
	meta["progressToken"], _ = json.Marshal(cs.upstreamToken)
	p["_meta"], _ = json.Marshal(meta)
	out, err := json.Marshal(p)
	if err != nil {
		return params
	}
	return out
}

// onMessage runs on the upstream call's goroutine, in stream order.
func (cs *callStream) onMessage(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return
	}
	if req.IsCall() {
		cs.serverRequest(req)
		return
	}
	n := wire.NotificationOf(req.Method)
	switch {
	case n.Progress:
		cs.progress(req)
		return
	case !cs.c.Caller.streams(req.Method, cs.c.peer):
		return // (a 2026-07-28 request's: only what relates to the request)
	}
	switch {
	case n.Log:
		cs.send(req)
	case n.ResourceUpdate:
		// Only about a resource the caller may see.
		if n := reprefixNotification(cs.v, cs.key, req); n != nil && updateVisible(cs.access, n) {
			cs.send(n)
		}
	default: // list_changed, ...
		cs.send(req)
	}
}

func (cs *callStream) send(msg jsonrpc.Message) {
	if cs.c.Stream != nil {
		_ = cs.c.Stream.Send(msg)
	}
}

func (cs *callStream) progress(req *jsonrpc.Request) {
	if cs.upstreamToken == "" {
		return
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	var tok string
	if json.Unmarshal(p["progressToken"], &tok) != nil || tok != cs.upstreamToken {
		return // not this call's token: dropped
	}
	p["progressToken"] = cs.downstreamToken
	params, err := json.Marshal(p)
	if err != nil {
		return
	}
	if cs.hook != nil {
		for _, hooks := range [2][]hook.Hook{cs.r.opts.Hooks, cs.v.hooks} {
			for _, h := range hooks {
				ph, ok := h.(hook.ProgressHook)
				if !ok {
					continue
				}
				if params, err = ph.Progress(cs.ctx, cs.hook, params); err != nil {
					return // a denied progress notification is dropped
				}
			}
		}
	}
	cs.send(&jsonrpc.Request{Method: req.Method, Params: params})
}

// clientCapability is the client capability a backend's request needs
// for the gateway to forward it to the client; known is false for one the
// gateway never forwards.
func clientCapability(method string) (capName string, known bool) {
	sr, ok := wire.LookupServerRequest(method)
	return sr.Capability, ok && sr.Capability != ""
}

// serverRequest forwards a backend's request to the client. It does not
// block the stream: the answer may take as long as a human needs.
func (cs *callStream) serverRequest(req *jsonrpc.Request) {
	reply := func(resp *jsonrpc.Response) {
		resp.ID = req.ID
		_ = cs.conn.Reply(context.WithoutCancel(cs.ctx), resp)
	}
	if wire.ServerRequestOf(req.Method).Liveness {
		reply(&jsonrpc.Response{Result: json.RawMessage(`{}`)})
		return
	}
	capName, known := clientCapability(req.Method)
	switch {
	case !known:
		reply(&jsonrpc.Response{Error: rpcError(CodeMethodNotFound, "method %q is not forwarded to clients", req.Method)})
		return
	case !hasClientCapability(cs.c.peer.capabilities, capName):
		reply(&jsonrpc.Response{Error: rpcError(CodeMethodNotFound, "the client did not advertise the %q capability", capName)})
		return
	case cs.c.Caller.asker() == nil:
		reply(&jsonrpc.Response{Error: rpcError(CodeMethodNotFound, "method %q is not forwarded to clients", req.Method)})
		return
	}
	// The backend waits for the client now: its timeout stops until the
	// answer goes back (upstream/call_clock.go).
	release, err := cs.conn.AwaitClient()
	if err != nil {
		reply(&jsonrpc.Response{Error: rpcError(CodeInternalError, "%v", err)})
		return
	}
	cs.wg.Add(1)
	go func() {
		defer cs.wg.Done()
		defer release()
		reply(cs.c.Caller.asker()(cs.ctx, cs.c, req))
	}()
}

func hasClientCapability(raw json.RawMessage, name string) bool {
	var caps map[string]json.RawMessage
	if json.Unmarshal(raw, &caps) != nil {
		return false
	}
	v, ok := caps[name]
	return ok && string(v) != "null"
}

// reprefixNotification puts the backend prefix back on the URI of a
// resources/updated notification from a backend of a multi-backend vhost.
func reprefixNotification(v *vhost, key string, req *jsonrpc.Request) *jsonrpc.Request {
	if v.single() {
		return req
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(req.Params, &p) != nil {
		return nil
	}
	var uri string
	if json.Unmarshal(p["uri"], &uri) != nil || uri == "" {
		return nil
	}
	p["uri"], _ = json.Marshal(naming.PublishURI(key, uri))
	params, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	return &jsonrpc.Request{Method: req.Method, Params: params}
}
