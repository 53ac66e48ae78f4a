package tests

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/oidcop"
)

// Tokens from identity providers, end to end: two gateway processes on one
// Redis behind a round-robin balancer, and real OpenID providers (zitadel's
// OP, in this process) that the gateways reach over HTTP: keys discovered
// from the issuer, a rotation seen without a restart, a flood of made-up
// kids, the provider down, several issuers with equal subjects, opaque
// tokens introspected, and every refusal a 401 naming the RFC 9728
// metadata.

const idpIntrospectSecretEnv = "E2E_IDP_INTROSPECT_SECRET"

type idpCluster struct {
	t     *testing.T
	a, b  *testsupport.GatewayProcess
	lb    testsupport.BaseURL // the round-robin balancer
	hosts []testsupport.Endpoint
}

// startIdPCluster runs two gateways whose config has authYAML as its auth
// section, over one backend.
func startIdPCluster(t *testing.T, authYAML string, env ...string) *idpCluster {
	t.Helper()
	backend := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "gateway-one"})
	cfg := fmt.Sprintf("session_ttl: 10m\nallowed_hosts: [127.0.0.1, localhost]\n%svirtual_hosts:\n  demo:\n    backends:\n      gateway-one:\n        url: %s\n",
		authYAML, backend.URL)
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	start := func() *testsupport.GatewayProcess {
		return testsupport.StartGateway(t, bin, []string{"--config", path, "--redis-url", redisSrv.URL()}, env)
	}
	c := &idpCluster{t: t, a: start(), b: start()}
	c.lb = testsupport.BaseURL(testsupport.StartRoundRobin(t, c.a.URL, c.b.URL).URL)
	c.hosts = []testsupport.Endpoint{c.a, c.b}
	return c
}

func (c *idpCluster) client(token string) *testsupport.Client {
	return &testsupport.Client{T: c.t, Token: token}
}

// status sends tools/list with token (no session: the auth check comes
// first) to ep and returns the answer.
func idpRequest(t *testing.T, ep testsupport.Endpoint, token, sessionID string) *testsupport.Reply {
	t.Helper()
	cl := &testsupport.Client{T: t, Token: token, SessionID: sessionID}
	return cl.Request(ep, "tools/list", nil)
}

// checkRefusal asserts a 401 whose challenge names the vhost's metadata.
func checkRefusal(t *testing.T, r *testsupport.Reply, what string) {
	t.Helper()
	ch := r.Header.Get("WWW-Authenticate")
	if r.Status != http.StatusUnauthorized || !strings.HasPrefix(ch, "Bearer ") ||
		!strings.Contains(ch, `resource_metadata="`) || !strings.Contains(ch, "/.well-known/oauth-protected-resource/servers/demo/mcp") {
		t.Errorf("%s: status %d, WWW-Authenticate %q", what, r.Status, ch)
	}
}

var e2eForgeKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// forgedToken is a well-formed token for issuer under a kid the provider
// never published.
func forgedToken(t *testing.T, issuer, aud, kid string) string {
	t.Helper()
	c := testsupport.StdClaims("alice")
	c["iss"], c["aud"] = issuer, aud
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(e2eForgeKey())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestIdP_DiscoveryRotationFloodAndProviderDown(t *testing.T) {
	op := oidcop.Start(t, oidcop.Options{Path: "/realms/mcp", Clients: []*oidcop.Client{
		{ID: "svc-alice", Secret: "s", Subject: "alice", Audience: []string{"mcpgw"}}}})
	c := startIdPCluster(t, fmt.Sprintf("auth:\n  mode: jwt\n  jwt:\n    issuer: %s\n    audience: mcpgw\n", op.Issuer))

	// Discovery: the shortest config accepts the provider's tokens, on a
	// session spread over both instances.
	cl := c.client(op.Token(t, "svc-alice"))
	cl.Initialize(c.lb, nil)
	for range 4 {
		cl.Call(c.lb, "tools/list", nil)
	}

	// The metadata names the issuer.
	res, err := http.Get(c.a.URL + "/.well-known/oauth-protected-resource/servers/demo/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var prm struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	_ = json.NewDecoder(res.Body).Decode(&prm)
	res.Body.Close()
	if len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != op.Issuer {
		t.Errorf("authorization_servers %v", prm.AuthorizationServers)
	}

	// Rotation: a token of the new key works on every instance within 10 s,
	// without a restart; the session carries on.
	op.Rotate(t, "ES256", false)
	cl.Token = op.Token(t, "svc-alice")
	rotated := time.Now()
	for _, ep := range c.hosts {
		for {
			r := cl.Request(ep, "tools/list", nil)
			if r.Status == http.StatusOK {
				break
			}
			checkRefusal(t, r, "new key not yet seen")
			if time.Since(rotated) > 10*time.Second {
				t.Fatalf("rotation not picked up within 10s: %d %s", r.Status, r.Body)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// A flood of made-up kids: every one a 401, the provider asked at most
	// once per 5 s per instance.
	before, start := op.JWKSHits(), time.Now()
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			checkRefusal(t, idpRequest(t, c.lb, forgedToken(t, op.Issuer, "mcpgw", fmt.Sprintf("kid-%d", i)), ""), "made-up kid")
		}()
	}
	wg.Wait()
	if hits, bound := op.JWKSHits()-before, 2*(1+int(time.Since(start)/(5*time.Second))); hits > bound {
		t.Errorf("60 made-up kids cost %d JWK Set fetches, want at most %d", hits, bound)
	}

	// The provider down: held keys keep working on both instances; a key
	// that cannot be had is a quick 401.
	op.SetDown(true)
	for _, ep := range c.hosts {
		cl.Call(ep, "tools/list", nil)
		start := time.Now()
		checkRefusal(t, idpRequest(t, ep, forgedToken(t, op.Issuer, "mcpgw", "unknown-while-down"), ""), "provider down")
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("unknown kid with the provider down took %s", d)
		}
	}
}

func TestIdP_SeveralIssuersAudienceClaimAndOpaqueTokens(t *testing.T) {
	a := oidcop.Start(t, oidcop.Options{Path: "/a", Clients: []*oidcop.Client{
		{ID: "svc-alice", Secret: "s", Subject: "alice", Audience: []string{"mcpgw"}}}})
	// A Cognito-like issuer: access tokens without the gateway's aud,
	// client_id names the app; only RFC 8414 metadata.
	b := oidcop.Start(t, oidcop.Options{Path: "/b", RFC8414Only: true, Clients: []*oidcop.Client{
		{ID: "cognito-app", Secret: "s", Subject: "alice", Audience: []string{"elsewhere"}}}})
	// An issuer of opaque tokens, checked by introspection.
	const rsSecret = "introspection-secret-e2e-XYZZY"
	o := oidcop.Start(t, oidcop.Options{Path: "/o", Clients: []*oidcop.Client{
		{ID: "svc-alice", Secret: "s", Subject: "alice", Audience: []string{"mcpgw"}, Opaque: true},
		{ID: "mcpgw-rs", Secret: rsSecret, Subject: "mcpgw-rs"}}})
	auth := fmt.Sprintf(`auth:
  mode: jwt
  issuers:
    - {issuer: %q, audience: mcpgw}
    - {issuer: %q, audience: cognito-app, audience_claim: client_id}
    - issuer: %q
      audience: mcpgw
      introspection: {url: %q, client_id: mcpgw-rs, client_secret_env: %s, cache: 1s}
`, a.Issuer, b.Issuer, o.Issuer, o.IntrospectionURL(), idpIntrospectSecretEnv)
	c := startIdPCluster(t, auth, idpIntrospectSecretEnv+"="+rsSecret)

	// alice of issuer a opens a session; alice of b and of o are other
	// principals: the session id is unknown to them (404), on every
	// instance.
	aliceA := c.client(a.Token(t, "svc-alice"))
	aliceA.Initialize(c.lb, nil)
	aliceA.Call(c.lb, "tools/list", nil)
	bTok, oTok := b.Token(t, "cognito-app"), o.Token(t, "svc-alice")
	for _, ep := range c.hosts {
		for name, tok := range map[string]string{"b": bTok, "o": oTok} {
			if r := idpRequest(t, ep, tok, aliceA.SessionID); r.Status != http.StatusNotFound {
				t.Errorf("alice of %s used alice of a's session: %d %s", name, r.Status, r.Body)
			}
		}
	}
	// Each has a session of its own.
	for _, tok := range []string{bTok, oTok} {
		cl := c.client(tok)
		cl.Initialize(c.lb, nil)
		cl.Call(c.lb, "tools/list", nil)
		cl.Call(c.lb, "tools/list", nil)
	}

	// A revoked opaque token is refused within the cache bound, everywhere.
	o.Revoke("alice")
	revoked := time.Now()
	for _, ep := range c.hosts {
		for {
			r := idpRequest(t, ep, oTok, "")
			if r.Status == http.StatusUnauthorized {
				checkRefusal(t, r, "revoked opaque token")
				break
			}
			if time.Since(revoked) > 3*time.Second {
				t.Fatalf("revocation not seen within the 1s cache bound: %d", r.Status)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Every refusal is a 401 naming the metadata.
	stranger := oidcop.Start(t, oidcop.Options{Clients: []*oidcop.Client{{ID: "x", Secret: "s", Subject: "alice", Audience: []string{"mcpgw"}}}})
	for what, tok := range map[string]string{
		"no token":         "",
		"untrusted issuer": stranger.Token(t, "x"),
		"a's iss, b's key": forgedToken(t, a.Issuer, "mcpgw", jwtKid(t, bTok)),
		"made-up opaque":   "ory_at_made.up",
		"garbage":          "a.b.c",
	} {
		checkRefusal(t, idpRequest(t, c.lb, tok, ""), what)
	}

	// The metadata names the three issuers; the secret is in no log.
	res, err := http.Get(c.b.URL + "/.well-known/oauth-protected-resource/servers/demo/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var prm struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	_ = json.NewDecoder(res.Body).Decode(&prm)
	res.Body.Close()
	if strings.Join(prm.AuthorizationServers, " ") != strings.Join([]string{a.Issuer, b.Issuer, o.Issuer}, " ") {
		t.Errorf("authorization_servers %v", prm.AuthorizationServers)
	}
	for _, gw := range []*testsupport.GatewayProcess{c.a, c.b} {
		if out := gw.Output(); strings.Contains(out, rsSecret) || strings.Contains(out, oTok) {
			t.Errorf("gateway output leaks the introspection secret or a token")
		}
	}
}

func jwtKid(t *testing.T, raw string) string {
	t.Helper()
	tok, _, err := jwt.NewParser().ParseUnverified(raw, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := tok.Header["kid"].(string)
	return kid
}
