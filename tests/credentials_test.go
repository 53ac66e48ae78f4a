package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// Per-user backend credentials, end to end: gateway processes on one
// Redis, a real RFC 8693 token endpoint written for the tests, and go-sdk
// backends whose bearer-token middleware refuses any token the endpoint
// did not issue for them (the gateway's own token included).
//
//   - gateway-one is stateless, so it speaks 2026-07-28 to the gateway;
//     its token is an exchange of the caller's, and claim templates add
//     X-User and X-Team;
//   - gateway-two is stateful (2025-era sessions); its token comes from
//     the client credentials grant, one for the backend.

const (
	stsSecretEnv = "E2E_STS_CLIENT_SECRET"
	stsSecret    = "sts-client-secret-e2e-PLUGH-31337"
)

type credCluster struct {
	t        *testing.T
	bin      string
	config   string
	sts      *testsupport.TokenEndpoint
	one, two *testsupport.Backend
}

func newCredCluster(t *testing.T) *credCluster {
	t.Helper()
	sts := testsupport.StartTokenEndpoint(t, "mcpgw", stsSecret, jwtSecret)
	c := &credCluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway"), sts: sts,
		one: testsupport.StartBackend(t, testsupport.BackendOptions{Name: "gateway-one", Stateless: true, TokenVerifier: sts.Verifier("gateway-one")}),
		two: testsupport.StartBackend(t, testsupport.BackendOptions{Name: "gateway-two", TokenVerifier: sts.Verifier("gateway-two")}),
	}
	c.config = filepath.Join(t.TempDir(), "gateway.yaml")
	cfg := fmt.Sprintf(`%s  demo:
    backends:
      gateway-one:
        url: %s
        add_headers:
          X-User: "${claims.sub}"
          X-Team: "team-${claims.groups[0]}"
        credentials:
          token_exchange:
            token_url: %s
            client_id: mcpgw
            client_secret_env: %s
            audience: gateway-one
            scopes: [tools]
      gateway-two:
        url: %s
        credentials:
          client_credentials:
            token_url: %s
            client_id: mcpgw
            client_secret_env: %s
            audience: gateway-two
`, configHead(), c.one.URL, sts.URL, stsSecretEnv, c.two.URL, sts.URL, stsSecretEnv)
	if err := os.WriteFile(c.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *credCluster) start() *testsupport.GatewayProcess {
	c.t.Helper()
	return testsupport.StartGateway(c.t, c.bin,
		[]string{"--config", c.config, "--redis-url", redisSrv.URL()},
		[]string{jwtSecretEnv + "=" + string(jwtSecret), stsSecretEnv + "=" + stsSecret})
}

// client is a caller whose token names sub and its groups.
func (c *credCluster) client(sub string, groups ...string) *testsupport.Client {
	claims := testsupport.StdClaims(sub)
	if groups != nil {
		claims["groups"] = groups
	}
	return &testsupport.Client{T: c.t, Token: testsupport.MintJWT(c.t, jwtSecret, claims)}
}

// whoami calls a backend's whoami through ep, in a 2025 session when cl
// has one, else as a 2026-07-28 request, and returns the subject the
// backend saw in its bearer token.
func whoami(cl *testsupport.Client, ep testsupport.Endpoint, backend string) string {
	cl.T.Helper()
	params := map[string]any{"name": backend + "-whoami", "arguments": map[string]any{}}
	if cl.SessionID != "" {
		return cl.Call(ep, "tools/call", params).Text()
	}
	return cl.ModernRequest(ep, "tools/call", params, nil).Text()
}

// assertNoSecrets fails if a gateway's output holds the client secret or
// any of the callers' tokens.
func assertNoSecrets(t *testing.T, out string, callers ...*testsupport.Client) {
	t.Helper()
	if strings.Contains(out, stsSecret) {
		t.Fatal("the gateway logged the client secret")
	}
	for _, cl := range callers {
		if strings.Contains(out, cl.Token) {
			t.Fatal("the gateway logged a caller's token")
		}
	}
	if strings.Contains(out, "eyJ") {
		t.Fatalf("the gateway logged something that looks like a JWT:\n%s", out)
	}
}

func TestCredentials_EachCallerReachesTheBackendAsItselfAcrossInstancesBothGenerations(t *testing.T) {
	c := newCredCluster(t)
	a, b := c.start(), c.start()

	alice, bob := c.client("alice", "dev"), c.client("bob", "ops")
	aliceModern, bobModern := c.client("alice", "dev"), c.client("bob", "ops")
	alice.Initialize(a, nil)
	bob.Initialize(b, nil)

	for _, tc := range []struct {
		cl   *testsupport.Client
		ep   testsupport.Endpoint
		want string
	}{
		{alice, b, "alice"}, {bob, a, "bob"}, {aliceModern, a, "alice"}, {bobModern, b, "bob"},
		{alice, a, "alice"}, {bobModern, a, "bob"},
	} {
		if got := whoami(tc.cl, tc.ep, "gateway-one"); got != tc.want {
			t.Fatalf("gateway-one saw %q, want %q", got, tc.want)
		}
		if h := c.one.LastHeaders("tools/call"); h.Get("X-User") != tc.want || h.Get("X-Team") == "" {
			t.Fatalf("claim headers for %s: X-User %q X-Team %q", tc.want, h.Get("X-User"), h.Get("X-Team"))
		}
		// client_credentials: the gateway's own identity, whoever calls.
		if got := whoami(tc.cl, tc.ep, "gateway-two"); got != "client:mcpgw" {
			t.Fatalf("gateway-two saw %q, want the gateway's client", got)
		}
	}
	if h := c.one.LastHeaders("tools/call"); h.Get("X-Team") != "team-ops" {
		t.Fatalf("X-Team = %q, want team-ops", h.Get("X-Team"))
	}

	// Lists fan out with the same credentials, in both generations.
	for _, r := range []*testsupport.Reply{alice.Call(b, "tools/list", nil), bobModern.ModernRequest(a, "tools/list", nil, nil)} {
		names := strings.Join(r.ToolNames(), ",")
		if !strings.Contains(names, "gateway-one-whoami") || !strings.Contains(names, "gateway-two-whoami") {
			t.Fatalf("tools/list misses a backend: %s", names)
		}
	}

	// The client's own token never reached a backend: every request each
	// backend saw carried the endpoint's token (the go-sdk middleware
	// refuses anything else, so the calls above prove it too).
	for _, be := range []*testsupport.Backend{c.one, c.two} {
		for _, m := range []string{"initialize", "server/discover", "tools/call", "tools/list"} {
			h := be.LastHeaders(m)
			if h == nil {
				continue
			}
			for _, cl := range []*testsupport.Client{alice, bob, aliceModern, bobModern} {
				if strings.Contains(h.Get("Authorization"), cl.Token) {
					t.Fatalf("%s of %s carried a caller's token", m, be.URL)
				}
			}
		}
	}

	// Cached per instance: one exchange per principal and instance at
	// most, one client credentials grant per instance at most.
	for _, sub := range []string{"alice", "bob"} {
		if n := c.sts.Issued(sub); n < 1 || n > 2 {
			t.Fatalf("%d exchanges for %s on two instances, want 1 or 2", n, sub)
		}
	}
	if n := c.sts.Issued("client:mcpgw"); n < 1 || n > 2 {
		t.Fatalf("%d client credentials grants on two instances, want 1 or 2", n)
	}
	for _, f := range c.sts.Forms() {
		if f.Get("subject_token") != "" && f.Get("audience") != "gateway-one" {
			t.Fatalf("an exchange asked for audience %q", f.Get("audience"))
		}
	}
	assertNoSecrets(t, a.Output()+b.Output(), alice, bob)
}

// A short-lived exchanged token is replaced shortly before it expires:
// calls keep working (the backend refuses expired tokens), and a new
// exchange happens.
func TestCredentials_ShortLivedTokensAreRefreshed(t *testing.T) {
	c := newCredCluster(t)
	c.sts.SetExpiresIn(2 * time.Second)
	a, b := c.start(), c.start()
	alice := c.client("alice", "dev")
	if got := whoami(alice, a, "gateway-one"); got != "alice" {
		t.Fatalf("gateway-one saw %q", got)
	}
	first := c.sts.Issued("alice")
	eps := []testsupport.Endpoint{a, b}
	i := 0
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		i++
		if got := whoami(alice, eps[i%2], "gateway-one"); got != "alice" {
			t.Fatalf("call %d: gateway-one saw %q", i, got)
		}
		// Each instance has refreshed at least once.
		return c.sts.Issued("alice") >= first+2
	}) {
		t.Fatalf("no refresh: %d exchanges after %d calls", c.sts.Issued("alice"), i)
	}
}

// Concurrent first requests of one caller on one instance cost one
// exchange: the token endpoint holds the first until it is released.
func TestCredentials_ConcurrentFirstRequestsCauseOneExchange(t *testing.T) {
	c := newCredCluster(t)
	a := c.start()
	c.sts.Hold()
	const n = 12
	var wg sync.WaitGroup
	got := make([]string, n)
	for i := range n {
		cl := c.client("alice", "dev")
		wg.Go(func() {
			got[i] = cl.ModernRequest(a, "tools/call", map[string]any{"name": "gateway-one-whoami", "arguments": map[string]any{}}, nil).Text()
		})
	}
	if !c.sts.WaitRequests(1, 10*time.Second) {
		t.Fatal("no token request arrived")
	}
	c.sts.Release()
	wg.Wait()
	for i, s := range got {
		if s != "alice" {
			t.Fatalf("call %d: gateway-one saw %q", i, s)
		}
	}
	if n := c.sts.Issued("alice"); n != 1 {
		t.Fatalf("%d exchanges for concurrent first requests, want 1", n)
	}
}

// A failing token endpoint is -32603 naming the backend (neither the
// secret nor a token), no backend call is made, the other backend still
// works, and once the endpoint is back so does this one.
func TestCredentials_TokenEndpointDownIsAnInternalErrorNamingTheBackend(t *testing.T) {
	c := newCredCluster(t)
	a, b := c.start(), c.start()
	alice, dave := c.client("alice", "dev"), c.client("dave", "dev")
	// Alice's exchanged token and gateway-two's are cached on a now;
	// nothing is on b, and nothing for dave anywhere.
	alice.Initialize(a, nil)
	c.sts.SetDown(true)
	c.one.ResetCounts()
	for _, r := range []*testsupport.Reply{
		alice.Request(b, "tools/call", map[string]any{"name": "gateway-one-whoami"}),
		dave.ModernRequest(a, "tools/call", map[string]any{"name": "gateway-one-whoami"}, nil),
	} {
		e := r.Error()
		if e == nil || e.Code != -32603 || !strings.Contains(e.Message, `backend "gateway-one"`) ||
			!strings.Contains(e.Message, "token exchange failed: the token endpoint answered HTTP 503") {
			t.Fatalf("endpoint down: %s", r.Body)
		}
		for _, leak := range []string{stsSecret, alice.Token, dave.Token, c.sts.URL} {
			if strings.Contains(string(r.Body), leak) {
				t.Fatalf("the error leaks a secret, token or URL: %s", r.Body)
			}
		}
	}
	if n := c.one.Count("tools/call"); n != 0 {
		t.Fatalf("gateway-one saw %d calls without a token", n)
	}
	if got := whoami(alice, a, "gateway-two"); got != "client:mcpgw" {
		t.Fatalf("gateway-two (token cached) saw %q", got)
	}
	c.sts.SetDown(false)
	if got := whoami(alice, b, "gateway-one"); got != "alice" {
		t.Fatalf("after recovery gateway-one saw %q", got)
	}
	if got := whoami(dave, a, "gateway-one"); got != "dave" {
		t.Fatalf("after recovery (modern) gateway-one saw %q", got)
	}
	assertNoSecrets(t, a.Output()+b.Output(), alice, dave)
}

// A caller whose token lacks a templated claim is refused before any
// backend call, with an error naming the header and the claim; another
// caller on the same instance is not affected (the failure is not
// remembered as the backend's).
func TestCredentials_MissingClaimIsRefusedForThatCallerOnly(t *testing.T) {
	c := newCredCluster(t)
	a := c.start()
	carol, carolModern := c.client("carol"), c.client("carol") // no groups claim
	alice := c.client("alice", "dev")
	carol.Initialize(a, nil)
	c.one.ResetCounts()
	for _, r := range []*testsupport.Reply{
		carol.Request(a, "tools/call", map[string]any{"name": "gateway-one-whoami"}),
		carolModern.ModernRequest(a, "tools/call", map[string]any{"name": "gateway-one-whoami"}, nil),
	} {
		e := r.Error()
		if e == nil || e.Code != -32603 || !strings.Contains(e.Message, `backend "gateway-one"`) ||
			!strings.Contains(e.Message, "header X-Team") || !strings.Contains(e.Message, "claims.groups[0]") {
			t.Fatalf("missing claim: %s", r.Body)
		}
		if names := strings.Join(alice.ModernRequest(a, "tools/list", nil, nil).ToolNames(), ","); !strings.Contains(names, "gateway-one-whoami") {
			t.Fatalf("right after carol's failure alice's list misses gateway-one: %s", names)
		}
		if got := whoami(alice, a, "gateway-one"); got != "alice" {
			t.Fatalf("right after carol's failure alice got %q", got)
		}
	}
	if n := c.one.Count("tools/call"); n != 2 { // alice's two
		t.Fatalf("gateway-one saw %d calls, want alice's 2", n)
	}
	// Carol still reaches the backend that needs no claim of hers.
	if got := whoami(carol, a, "gateway-two"); got != "client:mcpgw" {
		t.Fatalf("gateway-two saw %q", got)
	}
	// And her list skips gateway-one, naming it.
	r := carolModern.ModernRequest(a, "tools/list", nil, nil)
	if !strings.Contains(string(r.Body), "gateway-one") || strings.Contains(strings.Join(r.ToolNames(), ","), "gateway-one-") {
		t.Fatalf("carol's list: %s", r.Body)
	}
	if c.sts.Issued("carol") != 0 {
		t.Fatal("a caller refused by a claim template still had its token exchanged")
	}
}

// A 2025 session's GET stream, opened on another instance than the
// subscriptions, listens to both backends with their credentials: the
// client credentials token on the stateful backend's standalone stream,
// the caller's exchanged token on the modern backend's listen (each
// backend refuses any other token), so updates reach the client.
func TestCredentials_GetStreamListenersCarryTheCredentials(t *testing.T) {
	c := newCredCluster(t)
	a, b := c.start(), c.start()
	alice := c.client("alice", "dev")
	alice.Initialize(a, nil)
	for _, uri := range []string{"gateway-one-test://counter", "gateway-two-test://counter"} {
		alice.Call(a, "resources/subscribe", map[string]any{"uri": uri})
	}
	acks, gets := c.one.Count(testsupport.ListenAcknowledged), c.two.Count("GET")
	st := alice.Stream(b, "")
	st.NextRaw()
	// Both listeners are up: gateway-one acknowledged its listen, and
	// gateway-two's standalone stream (opened after the subscriptions) is
	// open.
	if !c.one.WaitCount(testsupport.ListenAcknowledged, acks+1, 15*time.Second) {
		t.Fatal("gateway-one acknowledged no listen")
	}
	if !c.two.WaitCount("GET", gets+1, 15*time.Second) {
		t.Fatal("instance b opened no listener on gateway-two")
	}
	for _, key := range []string{"gateway-two", "gateway-one"} {
		alice.Call(a, "tools/call", map[string]any{"name": key + "-increment"})
		ev := st.Next()
		if ev.Method() != "notifications/resources/updated" || !strings.Contains(ev.Data, key+"-test://counter") {
			t.Fatalf("after %s-increment: %s", key, ev.Data)
		}
	}
	assertNoSecrets(t, a.Output()+b.Output(), alice)
}

// A reload applies changed templates and credentials without a restart;
// one whose secret variable is unset is refused whole, naming the
// variable, and the running credentials stay.
func TestCredentials_ReloadAppliesNewCredentialsAndABadOneKeepsThem(t *testing.T) {
	c := newCredCluster(t)
	a := c.start()
	alice := c.client("alice", "dev")
	if got := whoami(alice, a, "gateway-one"); got != "alice" {
		t.Fatalf("gateway-one saw %q", got)
	}
	orig, err := os.ReadFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	next := strings.Replace(string(orig), `X-Team: "team-${claims.groups[0]}"`, `X-Team: "squad-${claims.groups[*]}"`, 1)
	if next == string(orig) {
		t.Fatal("the template to change is not in the config")
	}
	if err := os.WriteFile(c.config, []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	a.Signal(sighup)
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		whoami(alice, a, "gateway-one")
		return c.one.LastHeaders("tools/call").Get("X-Team") == "squad-dev"
	}) {
		t.Fatalf("the new template never applied: X-Team %q", c.one.LastHeaders("tools/call").Get("X-Team"))
	}

	bad := strings.ReplaceAll(next, "client_secret_env: "+stsSecretEnv, "client_secret_env: E2E_STS_UNSET_SECRET")
	if err := os.WriteFile(c.config, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	a.Signal(sighup)
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(a.Output(), "environment variable E2E_STS_UNSET_SECRET is not set")
	}) {
		t.Fatalf("the bad reload was not reported by variable:\n%s", a.Output())
	}
	if got := whoami(c.client("erin", "dev"), a, "gateway-one"); got != "erin" {
		t.Fatalf("after a bad reload gateway-one saw %q", got)
	}
	if c.one.LastHeaders("tools/call").Get("X-Team") != "squad-dev" {
		t.Fatal("a bad reload changed the running templates")
	}
	assertNoSecrets(t, a.Output(), alice)
}

// A backend that refuses a cached token (revoked before it expired) costs
// one failed request: the gateway drops the token and the next request
// exchanges again.
func TestCredentials_ARefusedTokenIsReplacedOnTheNextRequest(t *testing.T) {
	c := newCredCluster(t)
	a := c.start()
	alice := c.client("alice", "dev")
	if got := whoami(alice, a, "gateway-one"); got != "alice" {
		t.Fatalf("gateway-one saw %q", got)
	}
	c.sts.Revoke("alice")
	r := alice.ModernRequest(a, "tools/call", map[string]any{"name": "gateway-one-whoami"}, nil)
	if e := r.Error(); e == nil || e.Code != -32603 || !strings.Contains(e.Message, "HTTP 401") {
		t.Fatalf("a revoked token: %s", r.Body)
	}
	if got := whoami(alice, a, "gateway-one"); got != "alice" {
		t.Fatalf("after the refusal gateway-one saw %q", got)
	}
	if n := c.sts.Issued("alice"); n != 2 {
		t.Fatalf("%d exchanges, want 2", n)
	}
}
