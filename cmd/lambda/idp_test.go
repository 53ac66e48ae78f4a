package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/oidcop"
)

// Tokens from identity providers on Lambda, under the emulator: keys
// discovered at the first request (nothing at init), and an opaque token
// introspected with a client secret whose variable holds a Secrets Manager
// reference resolved at cold start.
func TestInit_IdentityProvidersWithSecretReference(t *testing.T) {
	t.Parallel()
	const rsSecret = "introspection-secret-only-in-secrets-manager"
	jwtIdP := oidcop.Start(t, oidcop.Options{Path: "/realms/mcp", Clients: []*oidcop.Client{
		{ID: "svc-alice", Secret: "s", Subject: "alice", Audience: []string{"mcpgw"}}}})
	opaque := oidcop.Start(t, oidcop.Options{Path: "/hydra", Clients: []*oidcop.Client{
		{ID: "svc-alice", Secret: "s", Subject: "alice", Audience: []string{"mcpgw"}, Opaque: true},
		{ID: "mcpgw-rs", Secret: rsSecret, Subject: "mcpgw-rs"}}})
	aws := startFakeAWS(t, map[string]string{"mcpgw/introspection": rsSecret}, nil)
	backend := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "gateway-one"})
	cfg := fmt.Sprintf(`allowed_hosts: [%s]
auth:
  mode: jwt
  issuers:
    - {issuer: %q, audience: mcpgw}
    - issuer: %q
      audience: mcpgw
      introspection: {url: %q, client_id: mcpgw-rs, client_secret_env: MCPGW_INTROSPECTION_SECRET}
virtual_hosts:
  demo:
    backends:
      gateway-one: {url: %q}
`, functionURLDomain, jwtIdP.Issuer, opaque.Issuer, opaque.IntrospectionURL(), backend.URL)
	env := []string{envConfigYAML + "=" + cfg, envMode + "=url", "MCPGW_INTROSPECTION_SECRET=aws-secretsmanager:mcpgw/introspection"}
	rie := startRIE(t, append(env, aws.env()...)...)
	ep := &functionURL{rie: rie, domain: functionURLDomain}

	for name, tok := range map[string]string{"jwt": jwtIdP.Token(t, "svc-alice"), "opaque": opaque.Token(t, "svc-alice")} {
		c := &testsupport.Client{T: t, Token: tok}
		c.Initialize(ep, nil)
		if tools := c.Call(ep, "tools/list", nil).ToolNames(); len(tools) == 0 {
			t.Fatalf("%s: no tools", name)
		}
	}
	c := &testsupport.Client{T: t, Token: "ory_at_made.up"}
	if r := c.Request(ep, "tools/list", nil); r.Status != http.StatusUnauthorized || !strings.Contains(r.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Errorf("made-up token: %d %q", r.Status, r.Header.Get("WWW-Authenticate"))
	}
	if strings.Contains(rie.Output(), rsSecret) {
		t.Fatalf("the introspection secret reached the log:\n%s", rie.Output())
	}
}
