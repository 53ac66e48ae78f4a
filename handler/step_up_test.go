package handler_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/internal/testsupport"
)

// Step-up authorization (issue 41): a name only a rule with scopes shows
// is listed, and a call to it without the scopes is 403 with an
// insufficient_scope challenge naming them and the vhost's metadata;
// with them it runs. A name no rule shows stays unknown.
func TestStepUp_InsufficientScopeChallenge(t *testing.T) {
	g := startGateway(t, gwOptions{stepUp: true, prm: &config.ResourceMetadata{AuthorizationServers: []string{"https://idp.example/"}, PublicURL: "https://gw.example"}})
	call := func(tok, name string) *resp {
		sid := g.do(req{body: initBody, path: "/servers/other/mcp", headers: map[string]string{"Authorization": "Bearer " + tok}}).header.Get("Mcp-Session-Id")
		return g.do(req{path: "/servers/other/mcp", session: sid, headers: map[string]string{"Authorization": "Bearer " + tok},
			body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`})
	}
	plain := g.token("alice")
	c := testsupport.StdClaims("alice")
	c["scope"] = "read admin"
	admin := testsupport.MintJWT(t, jwtSecret, c)

	sid := g.initialize("alice", "other")
	list := g.do(req{path: "/servers/other/mcp", session: sid, body: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`})
	if !strings.Contains(list.body, `"increment"`) || !strings.Contains(list.body, `"echo"`) {
		t.Fatalf("tools/list without the scope: %s", list.body)
	}
	r := call(plain, "increment")
	ch := r.header.Get("WWW-Authenticate")
	if r.status != http.StatusForbidden || r.rpc.Error == nil || r.rpc.Error.Code != -32011 ||
		!strings.HasPrefix(ch, `Bearer error="insufficient_scope", scope="admin"`) ||
		!strings.Contains(ch, `resource_metadata="https://gw.example/.well-known/oauth-protected-resource/servers/other/mcp"`) {
		t.Fatalf("increment without the scope: %d %q %s", r.status, ch, r.body)
	}
	if r := call(plain, "echo"); r.status != http.StatusOK || r.rpc.Error != nil {
		t.Fatalf("echo without the scope: %d %s", r.status, r.body)
	}
	if r := call(admin, "increment"); r.status != http.StatusOK || r.rpc.Error != nil {
		t.Fatalf("increment with the scope: %d %s", r.status, r.body)
	}
	// A name no rule shows: unknown, as before, with no challenge.
	if r := call(plain, "nope"); r.status != http.StatusOK || r.rpc.Error == nil || r.rpc.Error.Code != -32602 || r.header.Get("WWW-Authenticate") != "" {
		t.Fatalf("unknown name: %d %s", r.status, r.body)
	}
	// The metadata lists the scope.
	prm := g.do(req{method: http.MethodGet, path: "/.well-known/oauth-protected-resource/servers/other/mcp", sub: "-"})
	if !strings.Contains(prm.body, `"scopes_supported":["admin"]`) {
		t.Fatalf("metadata: %s", prm.body)
	}
}
