package router

import (
	"context"
	"encoding/json"
	"fmt"

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
	Pre(ctx context.Context, c *HookCall) error
	Post(ctx context.Context, c *HookCall, result json.RawMessage) (json.RawMessage, error)
}

// HookCall describes one routed call to a hook.
type HookCall struct {
	Method    string // tools/call, prompts/get or resources/read
	VHost     string
	Backend   string // backend key the call routes to
	Name      string // backend-side identifier (tool or prompt name, resource URI)
	Principal string
	SessionID store.SessionID
	// Params are the params sent to the backend. Pre hooks may replace them.
	Params json.RawMessage
}

// Denial is a hook's refusal; it becomes the JSON-RPC error the client sees.
type Denial struct {
	Code    int64
	Message string
}

func (d *Denial) Error() string { return fmt.Sprintf("denied (%d): %s", d.Code, d.Message) }

// hooked reports whether a method runs hooks.
func hooked(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read":
		return true
	}
	return false
}

// ProgressHook is implemented by hooks that also see the progress
// notifications of a tools/call (progress passes the post-hook too). It
// may rewrite the notification's params (the client's token already
// restored) or return an error to drop the notification.
type ProgressHook interface {
	Progress(ctx context.Context, c *HookCall, params json.RawMessage) (json.RawMessage, error)
}
