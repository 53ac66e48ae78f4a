package router

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/router/naming"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Access rules (package router/policy) decide what one caller sees; this
// file applies the decision to what the router handles: backends, routed
// targets, snapshots, notifications.

// backendVisible reports whether any name backend key publishes could be
// visible to the request: false only when none can, so a list need not
// ask the backend (and never names it, not even as skipped). On a
// multi-backend vhost every published name of the backend starts with
// "key-", except its tool aliases, which are checked one by one, and its
// ui:// and skill:// URIs, which start with "ui://key/" and "skill://key/".
func (v *vhost) backendVisible(a policy.View, key string, tools bool) bool {
	if v.single() {
		return a.PrefixVisible("", nil)
	}
	if tools {
		return a.PrefixVisible(naming.Prefix(key, ""), v.aliases.Of(key))
	}
	// Resources, templates and skills: "key-…", or a scheme-keeping URI
	// ("ui://key/…", "skill://key/…").
	for _, p := range naming.URIPrefixes(key) {
		if a.PrefixVisible(p, nil) {
			return true
		}
	}
	return false
}

// accessOf is the access decision for a caller with these claims.
func (v *vhost) accessOf(claims map[string]any) policy.View {
	if v.access == nil {
		return policy.View{}
	}
	return v.access.Decide(v.name, claims)
}

// accessHints marks the caching hints of a 2026-07-28 result private when
// the vhost's rules depend on the caller's claims: the result is then what
// this caller may see, and a shared cache must not hand it to another
// (even when nothing was hidden from this caller, another may see less).
// Rules that read no claims show every caller the same, so they leave the
// scope to the backends.
func (v *vhost) accessHints(method string, h *envelope.Hints) *envelope.Hints {
	if !envelope.Cacheable(method) || !v.access.DependsOnClaims() {
		return h
	}
	if h == nil {
		h = &envelope.Hints{FromResult: true}
	}
	h.Private = true
	return h
}

// publishedTool is the name under which a backend's tool is listed: the
// name access rules judge, whichever name (alias or prefixed) a call used.
func (v *vhost) publishedTool(backend, tool string) string {
	if a, ok := v.aliases.Advertised(backend, tool); ok {
		return a
	}
	if v.single() {
		return tool
	}
	return naming.Prefix(backend, tool)
}

// callerAccess is the access decision for the caller a context carries
// (router/credentials), for the entry points that take no Call: initialize,
// and what a session's GET stream is sent unprompted (the claims of the
// GET request attached to the stream). A reload that changes the rules
// rebuilds a stream's listeners (session.Runtime.VHostsChanged), so a
// subscription the new rules hide stops being delivered, although the
// session still holds it.
func callerAccess(ctx context.Context, v *vhost) policy.View {
	caller, _ := credentials.CallerFrom(ctx)
	return v.accessOf(caller.Claims)
}

// visibleSnapshots leaves out the backends the access view hides whole,
// for what initialize and server/discover merge (capabilities,
// instructions): a caller learns nothing of a backend none of whose names
// it may see, not even its instructions.
func (v *vhost) visibleSnapshots(a policy.View, snaps map[string]*store.BackendSnapshot) map[string]*store.BackendSnapshot {
	if a.All() {
		return snaps
	}
	out := make(map[string]*store.BackendSnapshot, len(snaps))
	for key, snap := range snaps {
		if v.backendVisible(a, key, true) || v.backendVisible(a, key, false) {
			out[key] = snap
		}
	}
	return out
}

// updateVisible reports whether a resources/updated notification, renamed
// for the client, names a resource the access view shows.
func updateVisible(a policy.View, n *jsonrpc.Request) bool {
	if a.All() {
		return true
	}
	var p struct {
		URI string `json:"uri"`
	}
	return json.Unmarshal(orEmpty(n.Params), &p) == nil && p.URI != "" && a.Visible(p.URI)
}

// routedVisible reports whether a routed request's target is visible to
// the request. A method that drops a subscription (resources/unsubscribe)
// is never refused: a client must be able to drop a subscription to a
// resource that has become hidden. A name that only a rule needing more
// scopes shows counts as visible here (it is listed); routedStepUp then
// refuses it.
func (v *vhost) routedVisible(a policy.View, method string, t *target) bool {
	row := rowOf(method)
	if a.All() || row.Subscription == wire.Unsubscribes {
		return true
	}
	return a.Listed(v.judgedName(row, t))
}

// judgedName is the name access rules judge a routed target by: a tool's
// published name (an alias is judged as the tool it stands for), else the
// identifier as the client sent it.
func (v *vhost) judgedName(row *methodRow, t *target) string {
	if row.Tool {
		return v.publishedTool(t.backend, t.name)
	}
	return t.public
}

// routedStepUp refuses a routed request whose target the caller's token
// lacks the scopes for (HTTP 403, insufficient_scope with the scopes to
// ask for: a client re-authorizes and retries); nil when it may go on.
func (v *vhost) routedStepUp(a policy.View, req *jsonrpc.Request, t *target) *jsonrpc.Response {
	row := rowOf(req.Method)
	if a.All() || row.Subscription == wire.Unsubscribes {
		return nil
	}
	name := v.judgedName(row, t)
	scopes := a.StepUp(name)
	if scopes == nil {
		return nil
	}
	return &jsonrpc.Response{ID: req.ID, Error: &Failure{Status: http.StatusForbidden, Scopes: scopes,
		RPC: rpcError(CodeInsufficientScope, "insufficient scope: %s needs a token that grants %s", name, strings.Join(scopes, " "))}}
}
