package router_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// initialize and server/discover merge only the backends the caller may
// see something of: a backend hidden whole lends neither capabilities nor
// instructions, so its description does not reach a caller who may not
// use it. A 2026-07-28 discover that depends on the caller is private.
func TestAccess_InitializeAndDiscoverShowOnlyVisibleBackends(t *testing.T) {
	f, _ := twoBackendsWithAccess(t, []policy.AccessRule{
		{When: "'admins' in claims.groups", Allow: []string{"*"}},
		{When: "'dev' in claims.groups", Allow: []string{"gateway-one-*"}},
	})
	initialize := func(claims map[string]any) map[string]any {
		t.Helper()
		ctx := credentials.WithCaller(context.Background(), credentials.Caller{Principal: "p", Claims: claims})
		req := &jsonrpc.Request{ID: mustID(1), Method: "initialize",
			Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)}
		_, resp := f.Router.Initialize(ctx, f.VHost, "p", http.Header{}, req)
		return result(t, resp)
	}
	discover := func(claims map[string]any) map[string]any {
		t.Helper()
		raw, _ := json.Marshal(map[string]any{"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    wire.ModernProtocolVersion,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}})
		return result(t, f.Router.Handle(context.Background(), &router.Call{VHost: f.VHost, Principal: "p", Claims: claims,
			Request: &jsonrpc.Request{ID: mustID(2), Method: "server/discover", Params: raw}, Caller: &router.ModernClient{ClientCapabilities: json.RawMessage(`{}`)}}))
	}
	for _, tc := range []struct {
		name     string
		claims   map[string]any
		sections []string // instruction sections shown
		tools    bool     // a tools capability
	}{
		{"admin sees both", adminClaims, []string{"## gateway-one", "## gateway-two"}, true},
		{"dev sees gateway-one only", devClaims, []string{"## gateway-one"}, true},
		{"no rule: nothing", nobody, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for gen, res := range map[string]map[string]any{"initialize": initialize(tc.claims), "server/discover": discover(tc.claims)} {
				ins, _ := res["instructions"].(string)
				for _, s := range []string{"## gateway-one", "## gateway-two"} {
					if want := slices.Contains(tc.sections, s); strings.Contains(ins, s) != want {
						t.Errorf("%s instructions %q: section %q shown %v, want %v", gen, ins, s, !want, want)
					}
				}
				if _, has := res["capabilities"].(map[string]any)["tools"]; has != tc.tools {
					t.Errorf("%s capabilities %v: tools %v, want %v", gen, res["capabilities"], has, tc.tools)
				}
				if gen == "server/discover" && res["cacheScope"] != "private" {
					t.Errorf("server/discover cacheScope %v, want private (it depends on the caller)", res["cacheScope"])
				}
			}
		})
	}
}
