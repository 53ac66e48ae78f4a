// Package hook is the contract between the router and the policy that
// runs around a routed call (package plugins, or an embedder's own): the
// Hook interface, the Call it is shown, and the Denial it may answer with.
// It sits below the router so that a plugin needs nothing of routing.
package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/store"
)

// Hook runs around the routed methods that carry user content:
// tools/call, prompts/get and resources/read.
//
// Pre runs after routing and before the backend call. It may rewrite
// c.Params (the params the backend will see, identifier already stripped)
// or deny the call by returning a *Denial: no backend call is made and the
// client gets the denial's JSON-RPC error. Post runs on the backend's
// result; it may return a rewritten result or a *Denial. Hooks run in the
// order they were registered, pre and post alike.
type Hook interface {
	Pre(ctx context.Context, c *Call) error
	Post(ctx context.Context, c *Call, result json.RawMessage) (json.RawMessage, error)
}

// Call describes one routed call to a hook.
type Call struct {
	Method    string // tools/call, prompts/get or resources/read
	VHost     string
	Backend   string // backend key the call routes to
	Name      string // backend-side identifier (tool or prompt name, resource URI)
	Principal string
	SessionID store.SessionID
	// Params are the params sent to the backend. Pre hooks may replace them.
	Params json.RawMessage

	schema   func(ctx context.Context) (json.RawMessage, error)
	observer DecisionObserver
}

// Bind is the router's: it tells the call where a hook finds the tool's
// input schema and where it reports its decisions (either may be nil).
func (c *Call) Bind(schema func(ctx context.Context) (json.RawMessage, error), observer DecisionObserver) {
	c.schema, c.observer = schema, observer
}

// DecisionObserver learns each decision a plugin reports (Call.Decided).
// The router's metrics observer implements it (as router.PluginObserver).
type DecisionObserver interface {
	PluginDecision(plugin, decision string)
}

// ErrNoToolSchema: the backend lists no tool of that name.
var ErrNoToolSchema = errors.New("the backend lists no such tool")

// InputSchema returns the inputSchema the backend lists for the tool of a
// tools/call (Name), from the backend's tools/list, cached per instance
// (router tool_schemas.go). It returns ErrNoToolSchema when the backend lists no
// such tool, or the call is not a tools/call.
func (c *Call) InputSchema(ctx context.Context) (json.RawMessage, error) {
	if c.schema == nil || !wire.MethodOf(c.Method).Tool {
		return nil, ErrNoToolSchema
	}
	return c.schema(ctx)
}

// Decided reports a plugin's decision on this call to the router's
// observer (the metric mcpgw_plugin_decisions_total). plugin and decision
// must come from small fixed sets: they become metric labels.
func (c *Call) Decided(plugin, decision string) {
	if c.observer != nil {
		c.observer.PluginDecision(plugin, decision)
	}
}

// Denial is a hook's refusal; it becomes the JSON-RPC error the client sees.
type Denial struct {
	Code    int64
	Message string
	// Data, when set, is the error's data (JSON), e.g. which plugin and
	// rule refused.
	Data json.RawMessage
}

func (d *Denial) Error() string { return fmt.Sprintf("denied (%d): %s", d.Code, d.Message) }

// ProgressHook is implemented by hooks that also see the progress
// notifications of a tools/call (progress passes the post-hook too). It
// may rewrite the notification's params (the client's token already
// restored) or return an error to drop the notification.
type ProgressHook interface {
	Progress(ctx context.Context, c *Call, params json.RawMessage) (json.RawMessage, error)
}
