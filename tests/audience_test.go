package tests

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/oidcop"
)

// The audience rule of the MCP authorization spec, alone (issue 41): an
// authorization server that honours RFC 8707 puts the vhost's URL in
// aud; two gateway processes behind a balancer whose URL is public_url,
// two vhosts, one issuer. With audience: resource a token works on the
// vhost it names and no other; with a configured audience list, the
// list's audiences work everywhere besides.
func TestAudience_ResourceURLOfEachVHost(t *testing.T) {
	rr := testsupport.StartRoundRobin(t)
	lb := testsupport.BaseURL(rr.URL)
	urlA, urlB := rr.URL+"/servers/a/mcp", rr.URL+"/servers/b/mcp"
	op := oidcop.Start(t, oidcop.Options{Clients: []*oidcop.Client{
		{ID: "for-a", Secret: "s", Subject: "alice", Audience: []string{urlA}},
		{ID: "for-b", Secret: "s", Subject: "alice", Audience: []string{urlB}},
		{ID: "for-both", Secret: "s", Subject: "bob", Audience: []string{urlA, urlB}},
		{ID: "for-api", Secret: "s", Subject: "carol", Audience: []string{"mcpgw"}},
		{ID: "for-elsewhere", Secret: "s", Subject: "dave", Audience: []string{"https://other.example/servers/a/mcp"}},
	}})
	backend := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "one"})
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	start := func(audience string) {
		cfg := fmt.Sprintf("session_ttl: 10m\nallowed_hosts: [127.0.0.1, localhost]\npublic_url: %s\n"+
			"auth:\n  mode: jwt\n  jwt: {issuer: %q, audience: %s}\n"+
			"virtual_hosts:\n  a: {backends: {one: {url: %q}}}\n  b: {backends: {one: {url: %q}}}\n",
			rr.URL, op.Issuer, audience, backend.URL, backend.URL)
		path := filepath.Join(t.TempDir(), "gateway.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"--config", path, "--redis-url", redisSrv.URL()}
		a, b := testsupport.StartGateway(t, bin, args, nil), testsupport.StartGateway(t, bin, args, nil)
		rr.SetTargets(a.URL, b.URL)
	}
	tokens := map[string]string{}
	for _, id := range []string{"for-a", "for-b", "for-both", "for-api", "for-elsewhere"} {
		tokens[id] = op.Token(t, id)
	}
	check := func(rule, client, vhost string, want int) {
		t.Helper()
		for range 2 { // once on each instance
			cl := &testsupport.Client{T: t, Token: tokens[client], VHost: vhost}
			if r := cl.ModernRequest(lb, "tools/list", nil, nil); r.Status != want {
				t.Errorf("%s: token %s on vhost %s: %d, want %d (%s)", rule, client, vhost, r.Status, want, r.Body)
			}
		}
	}

	start("resource")
	check("resource", "for-a", "a", http.StatusOK)
	check("resource", "for-a", "b", http.StatusUnauthorized)
	check("resource", "for-b", "b", http.StatusOK)
	check("resource", "for-b", "a", http.StatusUnauthorized)
	check("resource", "for-both", "a", http.StatusOK)
	check("resource", "for-both", "b", http.StatusOK)
	check("resource", "for-api", "a", http.StatusUnauthorized)
	check("resource", "for-elsewhere", "a", http.StatusUnauthorized)

	start("[mcpgw, other-api]")
	check("list", "for-api", "a", http.StatusOK)
	check("list", "for-api", "b", http.StatusOK)
	check("list", "for-a", "a", http.StatusOK)
	check("list", "for-a", "b", http.StatusUnauthorized)
	check("list", "for-elsewhere", "a", http.StatusUnauthorized)
}
