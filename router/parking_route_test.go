package router_test

// A parked call is routed as every call is (routed, then the Caller's
// relay), so what the routed path decides holds for it too: a backend's
// own tool name, a retry after a sign-in round, and the access rules'
// cache hints. Before parking went through the Caller, each of these was
// decided apart, before routing, and differed.

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tools/call by a backend's own tool name (as an MCP App calls it) is
// the same call as by its published name: it parks when the backend asks,
// and its retry, by the same raw name, completes it.
func TestModernPark_RawToolNameParks(t *testing.T) {
	f := newFixtureOpts(t, router.Options{},
		backendSpec{Key: "legacy", Opts: testsupport.BackendOptions{StreamingTools: true}}, backendSpec{Key: "plain"})
	key, state := inputRequired(t, result(t, modernCall(t, f.Router, f.VHost, "alice", f.Parks, "confirm", nil)))

	res := result(t, modernCall(t, f.Router, f.VHost, "alice", f.Parks, "confirm",
		map[string]any{"requestState": state, "inputResponses": accept(key)}))
	if got := text(t, res); got != "user chose accept map[ok:true]" {
		t.Fatalf("the parked raw-named call answered %q", got)
	}
	if n := f.Backends["legacy"].Count("tools/call"); n != 1 {
		t.Fatalf("the backend saw %d tools/call, want the parked one only", n)
	}
}

// A retry after a sign-in round (its requestState the gateway's, naming
// no parked call, the sign-in accepted) is the same call again: when the
// backend then asks the client, it parks like a first call.
func TestModernPark_RetryAfterSignInParks(t *testing.T) {
	f := parkFixture(t, router.Options{})
	state, err := router.SealSignInState(t.Context(), f.Router, f.VHost, "alice", "tools/call", "confirm", "legacy")
	if err != nil {
		t.Fatal(err)
	}
	signedIn := map[string]any{router.SignInInputKey: map[string]any{"action": "accept"}}
	key, state := inputRequired(t, result(t, modernCall(t, f.Router, f.VHost, "alice", f.Parks, "confirm",
		map[string]any{"requestState": state, "inputResponses": signedIn})))

	res := result(t, modernCall(t, f.Router, f.VHost, "alice", f.Parks, "confirm",
		map[string]any{"requestState": state, "inputResponses": accept(key)}))
	if got := text(t, res); got != "user chose accept map[ok:true]" {
		t.Fatalf("the parked call answered %q", got)
	}
}

// Under access rules that read the caller's claims, a parked
// resources/read is finished with the rules' hints, private, on every
// round, as a routed answer is: its input_required rounds, interim, carry
// no hints on the wire at all; its answer is private to its caller, as a
// shared cache must not hand what one caller may see to another.
func TestModernPark_ClaimDependentRoundsArePrivate(t *testing.T) {
	f, _ := accessFixture(t, []policy.AccessRule{{When: "'admins' in claims.groups", Allow: []string{"*"}}},
		backendSpec{Key: "gateway-one"}, backendSpec{Key: "gateway-two"})
	f.Backends["gateway-one"].Server.AddResource(&mcp.Resource{URI: "test://asks", Name: "asks", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "proceed?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "opened: " + res.Action}}}, nil
		})
	read := func(extra map[string]any) map[string]any {
		t.Helper()
		caps := json.RawMessage(`{"elicitation":{}}`)
		params := map[string]any{"uri": "gateway-one-test://asks", "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    wire.ModernProtocolVersion,
			"io.modelcontextprotocol/clientCapabilities": caps,
		}}
		for k, v := range extra {
			params[k] = v
		}
		raw, _ := json.Marshal(params)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return result(t, f.Router.Handle(ctx, &router.Call{VHost: f.VHost, Principal: "alice", Claims: adminClaims, Header: http.Header{},
			Request: &jsonrpc.Request{ID: mustID(7), Method: "resources/read", Params: raw},
			Caller:  &router.ModernClient{ClientCapabilities: caps, Parks: f.Parks}}))
	}
	first := read(nil)
	key, state := inputRequired(t, first)
	if _, has := first["cacheScope"]; has {
		t.Fatalf("the first round %s: want no cacheScope (an interim result is never cached)", toJSON(first))
	}
	res := read(map[string]any{"requestState": state, "inputResponses": accept(key)})
	if res["cacheScope"] != "private" || !strings.Contains(toJSON(res["contents"]), "opened: accept") {
		t.Fatalf("the answer %s: want the contents, cacheScope private", toJSON(res))
	}
}
