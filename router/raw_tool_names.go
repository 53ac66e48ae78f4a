package router

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/capability"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// An MCP App's HTML calls its own server's tools by the names that server
// gave them (callServerTool({name: "get-time"})): it knows nothing of the
// gateway's renaming. So a tools/call whose name routes to no backend is
// tried as a backend's raw name: when exactly one backend of the vhost
// lists a tool of that name that the caller may see, the call goes to it,
// as if the published name had been used (access rules, hooks and rate
// limits judge the published name). Two or more such backends: -32602
// naming the published candidates. A name that routes (a published name,
// an alias) never reaches this, so a published name always wins.
//
// The backends' tool names come from the per-instance tool schema cache
// (tool_schemas.go): a raw-name call costs a list walk per backend at
// most once per cache lifetime.

// decideRawTool decides a tools/call whose name no backend publishes
// (Serve, once it has the peer): when the name is a backend's own, as an
// MCP App calls it, the call is decided anew, once, as the published
// name's and counted against the rate limits, as Admit counts any other.
// It returns the call to serve: c itself when the name is not a backend's
// own (or the call is malformed), routed then refuses it as unknown; else
// a copy with the request renamed and new decisions (neither the ones
// Admit made nor c are changed), or the error naming the candidates when
// it is several backends'. refusal is the rate limit's, when counting
// refused it.
func (rc *routedCalls) decideRawTool(ctx context.Context, v *vhost, c *Call) (_ *Call, refusal *jsonrpc.Response) {
	d, req := c.d, c.Request
	// Only a name no backend owns (not a malformed call): the very
	// error unknownIdentifier makes for it.
	name, ok := rawToolName(req.Params)
	if !ok || d.t != nil || d.rerr.Message != unknownIdentifier("tool", name).Message {
		return c, nil
	}
	published, perr := rc.resolveRawTool(ctx, v, c, name)
	decided, call := *d, *c
	call.d = &decided
	switch {
	case perr != nil:
		decided.rerr = perr
		return &call, nil
	case published == "":
		return c, nil
	}
	renamed := *req
	renamed.Params = withToolName(req.Params, published)
	call.Request = &renamed
	decided.t, decided.rerr = rc.resolve(v, req.Method, renamed.Params)
	if n := c.Audit; n != nil {
		n.Name = published
	}
	// Counted only when routed will serve it: a hidden name, or one the
	// caller lacks the scopes for, is refused there (and noted), uncounted.
	if decided.visible(req.Method) && v.routedStepUp(decided.access, &renamed, decided.t) == nil {
		refusal = rc.countLimits(ctx, &decided, &renamed, c.Principal)
	}
	return &call, refusal
}

// resolveRawTool resolves tools/call name as a backend's raw tool name,
// returning the published name it stands for, or the error to answer with
// (unknown: nil and "").
func (rc *routedCalls) resolveRawTool(ctx context.Context, v *vhost, c *Call, name string) (string, *jsonrpc.Error) {
	if v.single() {
		return "", nil // nothing is renamed on a single-backend vhost
	}
	access := c.d.access
	var candidates []string
	for _, key := range v.keys {
		if !capability.Of(c.peer.backends[key]).Has("tools") {
			continue
		}
		if _, err := rc.fed.toolInputSchema(ctx, v, c, key, name); err != nil {
			continue // not listed, or the backend's list failed
		}
		published := v.publishedTool(key, name)
		if v.routedVisible(access, c.Request.Method, &target{backend: key, name: name, public: published, kind: "tool"}) {
			candidates = append(candidates, published)
		}
	}
	switch len(candidates) {
	case 0:
		return "", nil
	case 1:
		return candidates[0], nil
	}
	sort.Strings(candidates)
	quoted := make([]string, len(candidates))
	for i, p := range candidates {
		quoted[i] = wire.Quote(p)
	}
	return "", invalidParams("tool %s is a tool of several backends of this virtual host: call it by one of %s", wire.Quote(name), strings.Join(quoted, ", "))
}

// withToolName is params with name replaced.
func withToolName(params json.RawMessage, name string) json.RawMessage {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return params
	}
	p["name"], _ = json.Marshal(name)
	out, err := json.Marshal(p)
	if err != nil {
		return params
	}
	return out
}

// rawToolName is a tools/call's name when it is a non-empty string.
func rawToolName(params json.RawMessage) (string, bool) {
	var p struct {
		Name string `json:"name"`
	}
	return p.Name, json.Unmarshal(params, &p) == nil && p.Name != ""
}
