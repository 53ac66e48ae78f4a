package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/hook"
)

// validateArguments checks a tools/call's arguments against the tool's
// inputSchema, as the backend lists it (router.HookCall.InputSchema),
// before the backend is called. Arguments that do not validate get -32602
// (invalid params) with the validator's reason; a tool the backend does
// not list is refused (-32030): a check that cannot be made is not passed.
// A backend whose tools/list fails, or whose schema does not compile,
// gets -32603 naming the backend. Other methods pass.
type validateArguments struct {
	rule
	mu       sync.Mutex
	compiled map[[32]byte]*jsonschema.Resolved // by the schema's digest
}

// maxCompiledSchemas bounds the compiled schemas one plugin keeps; past
// it they are all dropped and compiled again as they come.
const maxCompiledSchemas = 1024

func newValidateArguments(r rule) *validateArguments {
	return &validateArguments{rule: r, compiled: map[[32]byte]*jsonschema.Resolved{}}
}

func (v *validateArguments) Pre(ctx context.Context, c *hook.Call) error {
	if !wire.MethodOf(c.Method).Tool {
		return nil
	}
	raw, err := c.InputSchema(ctx)
	switch {
	case errors.Is(err, hook.ErrNoToolSchema):
		c.Decided(TypeValidateArguments, DecisionDeny)
		return v.deny(wire.CodePolicyDenied, "", "backend %s lists no tool %s, so its arguments cannot be checked", wire.Quote(c.Backend), wire.Quote(c.Name))
	case err != nil:
		c.Decided(TypeValidateArguments, DecisionError)
		return v.deny(wire.CodeInternalError, "", "cannot read the input schemas of backend %s", wire.Quote(c.Backend))
	}
	rs, err := v.resolve(raw)
	if err != nil {
		c.Decided(TypeValidateArguments, DecisionError)
		return v.deny(wire.CodeInternalError, "", "the inputSchema backend %s lists for tool %s cannot be used: %s", wire.Quote(c.Backend), wire.Quote(c.Name), truncate(err.Error()))
	}
	var instance any = map[string]any{}
	if args := arguments(c); len(args) > 0 {
		if err := json.Unmarshal(args, &instance); err != nil {
			c.Decided(TypeValidateArguments, DecisionDeny)
			return v.deny(wire.CodeInvalidParams, "", "tool %s: arguments are not JSON", wire.Quote(c.Name))
		}
	}
	if err := rs.Validate(instance); err != nil {
		c.Decided(TypeValidateArguments, DecisionDeny)
		// The reason may quote the arguments: the client's own input, cut short.
		return v.deny(wire.CodeInvalidParams, "", "invalid arguments for tool %s: %s", wire.Quote(c.Name), truncate(err.Error()))
	}
	c.Decided(TypeValidateArguments, DecisionAllow)
	return nil
}

func (v *validateArguments) Post(_ context.Context, _ *hook.Call, result json.RawMessage) (json.RawMessage, error) {
	return result, nil
}

// resolve compiles a schema once per distinct text. Remote $refs are not
// fetched: a schema that needs one fails to compile.
func (v *validateArguments) resolve(raw json.RawMessage) (*jsonschema.Resolved, error) {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{"type":"object"}`) // MCP requires one; a backend that lists none accepts any object
	}
	key := sha256.Sum256(raw)
	v.mu.Lock()
	rs, ok := v.compiled[key]
	v.mu.Unlock()
	if ok {
		return rs, nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	if len(v.compiled) >= maxCompiledSchemas {
		clear(v.compiled)
	}
	v.compiled[key] = rs
	v.mu.Unlock()
	return rs, nil
}

// truncate keeps a message that may quote client input within 200 bytes.
func truncate(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
