package router

import (
	"context"
	"encoding/json"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/capability"
	federated "github.com/mcpgw/gateway/router/federation"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The router's twin of internal/wire's method table: one row per method
// the gateway serves, saying how dispatch answers it (serve, handleModern)
// and what the router's layers ask of it (the list fan-out's operation,
// the field a routed method routes on, what access rules and rate limits
// judge). Dispatch reads the row; nothing in the router compares a method
// name to decide what to do with it. Adding a method is adding a row here
// and in wire's table: TestDispatch_EveryMethodOfTheTable fails for a
// method in one and not the other.

// serving is how the router answers a method.
type serving uint8

const (
	// notServed: -32601 (the zero row: a method in no table).
	notServed serving = iota
	// byGateway: the gateway answers it itself (answer). A 2025-era
	// session's (wire Session) are answered by the core, serve; a
	// 2026-07-28 request's (wire Modern) by handleModern, before its rate
	// limits are counted or a backend is asked anything.
	byGateway
	// fanOut: a list every backend contributes to (list, list_fanout.go).
	fanOut
	// routed: it targets one backend's tool, prompt or resource (routed.go).
	routed
	// taskMethod: a Tasks extension method, routed by its sealed task id
	// (tasks.go).
	taskMethod
)

// methodRow is one method as the router serves it.
type methodRow struct {
	// Method is wire's row: the facts the transport, metrics and the audit
	// share with the router. Routed is a routed method's identifier kind;
	// Tool: its identifier is a tool's name as clients see it (an alias
	// routes it, access rules judge the tool's published name, a name no
	// backend publishes may be a backend's own, raw_tool_names.go, and a
	// tool_search vhost's own tools are called through it); RateLimited:
	// counted (admission.go); Subscription: it changes a session's
	// subscriptions (an unsubscribe is never hidden, access.go).
	wire.Method
	serving serving
	// answer is a byGateway method's answer.
	answer func(r *Router, ctx context.Context, v *vhost, c *Call) *jsonrpc.Response
	// list is a fanOut method's operation.
	list federated.Op
	// routeOn is the params field a routed method's identifier is in, for
	// the prefix rule (routeField); resolveBy, when set, resolves instead
	// (tools/call's aliases, completion/complete's ref).
	routeOn   string
	resolveBy func(v *vhost, params map[string]json.RawMessage, kind, method string) (*target, *jsonrpc.Error)
	// skills: the Skills extension's routed methods, refused when the
	// owning backend is known not to serve the extension (skills.go);
	// directory: it also needs the extension's directoryRead.
	skills, directory bool
}

var methodRows = withWireFacts(map[string]*methodRow{
	"ping":             {serving: byGateway, answer: answerPing},
	"initialize":       {serving: byGateway, answer: answerInitialized},
	"logging/setLevel": {serving: byGateway, answer: answerSetLevel},
	"server/discover":  {serving: byGateway, answer: (*Router).modernDiscover},
	// subscriptions/listen: the answer is an event stream (subscriptions_listen.go).
	"subscriptions/listen": {serving: byGateway, answer: (*Router).listen},

	"tools/list":               {serving: fanOut, list: federated.Op{Field: "tools", Capability: "tools"}},
	"resources/list":           {serving: fanOut, list: federated.Op{Field: "resources", Capability: "resources", URIField: "uri"}},
	"prompts/list":             {serving: fanOut, list: federated.Op{Field: "prompts", Capability: "prompts"}},
	"resources/templates/list": {serving: fanOut, list: federated.Op{Field: "resourceTemplates", Capability: "resources", URIField: "uriTemplate"}},
	// The Skills extension's (SEP-2640): entries named by their uri
	// (skills.go: nameSkill).
	"skills/list": {serving: fanOut, list: federated.Op{Field: "skills", Capability: capability.Skills, URIField: "uri"}},

	"tools/call":               {serving: routed, routeOn: "name", resolveBy: resolveTool},
	"prompts/get":              {serving: routed, routeOn: "name"},
	"resources/read":           {serving: routed, routeOn: "uri"},
	"resources/subscribe":      {serving: routed, routeOn: "uri"},
	"resources/unsubscribe":    {serving: routed, routeOn: "uri"},
	"completion/complete":      {serving: routed, routeOn: "ref", resolveBy: resolveCompletion},
	"skills/get":               {serving: routed, routeOn: "uri", skills: true},
	"resources/directory/read": {serving: routed, routeOn: "uri", skills: true, directory: true},

	"tasks/get":    {serving: taskMethod},
	"tasks/update": {serving: taskMethod},
	"tasks/cancel": {serving: taskMethod},
})

// withWireFacts gives each row wire's facts of its method, so one lookup
// answers every question a layer asks of a method, and a list operation
// its method's name.
func withWireFacts(rows map[string]*methodRow) map[string]*methodRow {
	for name, row := range rows {
		row.Method = wire.MethodOf(name)
		if row.serving == fanOut {
			row.list.Method = name
		}
	}
	return rows
}

// backends reports whether the method asks backends (a list, or a
// routed method): only then does its call need a peer (Call.peer).
func (row *methodRow) backends() bool { return row.serving == fanOut || row.serving == routed }

// unserved is the row of a method the gateway does not serve.
var unserved = &methodRow{}

// rowOf is method's row; the zero row (notServed) for one in no table.
func rowOf(method string) *methodRow {
	if row, ok := methodRows[method]; ok {
		return row
	}
	return unserved
}

// listOps are the list fan-out's operations, by method, from the rows.
var listOps = func() map[string]federated.Op {
	ops := make(map[string]federated.Op)
	for name, row := range methodRows {
		if row.serving == fanOut {
			ops[name] = row.list
		}
	}
	return ops
}()

// multiRoundTrip reports whether a method may answer input_required
// (protocol 2026-07-28's multi-round-trip requests).
func multiRoundTrip(method string) bool { return rowOf(method).MultiRoundTrip }

// hooked reports whether a method runs hooks (package router/hook):
// routed.go runs them, call_stream.go shows them progress.
func hooked(method string) bool { return rowOf(method).Hooked }

// The answers of the methods the gateway answers alone.

func answerPing(_ *Router, _ context.Context, _ *vhost, c *Call) *jsonrpc.Response {
	return resultResponse(c.Request.ID, json.RawMessage(`{}`))
}

// answerInitialized refuses a second initialize: a session's first
// reaches the transport's handshake (initialize.go), never serve.
func answerInitialized(_ *Router, _ context.Context, _ *vhost, c *Call) *jsonrpc.Response {
	return errorResponse(c.Request.ID, rpcError(CodeInvalidRequest, "session is already initialized"))
}

func answerSetLevel(r *Router, ctx context.Context, _ *vhost, c *Call) *jsonrpc.Response {
	return r.setLevel(ctx, c)
}
