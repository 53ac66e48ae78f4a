package plugins

import (
	"context"
	"encoding/json"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/hook"
)

// maxResultBytes refuses a result whose JSON is larger than its limit,
// so a client (often a model's context) is not flooded: -32030. The
// backend has answered by then; limits.inflight_response_bytes is what
// bounds the gateway's own memory.
type maxResultBytes struct {
	rule
	limit int64
}

func (m *maxResultBytes) Pre(context.Context, *hook.Call) error { return nil }

func (m *maxResultBytes) Post(_ context.Context, c *hook.Call, result json.RawMessage) (json.RawMessage, error) {
	if int64(len(result)) > m.limit {
		c.Decided(TypeMaxResultBytes, DecisionDeny)
		return nil, m.deny(wire.CodePolicyDenied, "limit", "the result has %d bytes, more than the limit of %d", len(result), m.limit)
	}
	c.Decided(TypeMaxResultBytes, DecisionAllow)
	return result, nil
}
