package credentials_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router/credentials"
)

var gatewayKey = []byte("gateway-jwt-secret-0123456789abcdef-XYZZY")

const secret = "sts-client-secret-PLUGH"

// clock is a settable time for the token cache.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func exchangeSettings(ep *testsupport.TokenEndpoint) credentials.Settings {
	return credentials.Settings{Grant: credentials.GrantTokenExchange, TokenURL: ep.URL, ClientID: ep.ClientID,
		ClientSecret: credentials.Secret(ep.ClientSecret), Audience: "gateway-one", Scopes: []string{"tools"}}
}

// callerCtx is a request context of sub, with a gateway token of sub.
func callerCtx(t *testing.T, sub string) (context.Context, string) {
	tok := testsupport.MintJWT(t, gatewayKey, testsupport.StdClaims(sub))
	return credentials.WithCaller(t.Context(), credentials.Caller{Principal: sub, Token: tok,
		Claims: map[string]any{"sub": sub, "exp": float64(time.Now().Add(time.Hour).Unix())}}), tok
}

// subject is whom a token the endpoint issued names, as a backend sees it.
func subject(t *testing.T, ep *testsupport.TokenEndpoint, tok string) string {
	t.Helper()
	ti, err := ep.Verifier("gateway-one")(t.Context(), tok, nil)
	if err != nil {
		t.Fatalf("the backend refuses the token: %v", err)
	}
	return ti.UserID
}

func TestSource_ExchangesPerPrincipalAndCachesUntilShortlyBeforeExpiry(t *testing.T) {
	ep := testsupport.StartTokenEndpoint(t, "mcpgw", secret, gatewayKey)
	ep.SetExpiresIn(100 * time.Second)
	clk := &clock{now: time.Now()}
	src := credentials.NewSource(exchangeSettings(ep), clk.Now, nil)
	defer src.Close()

	alice, aliceTok := callerCtx(t, "alice")
	bob, _ := callerCtx(t, "bob")
	a1, err := src.Token(alice)
	if err != nil {
		t.Fatal(err)
	}
	b1, err := src.Token(bob)
	if err != nil {
		t.Fatal(err)
	}
	if subject(t, ep, a1) != "alice" || subject(t, ep, b1) != "bob" {
		t.Fatal("an exchanged token names another subject")
	}
	if a1 == aliceTok {
		t.Fatal("the caller's own token came back")
	}
	for range 3 {
		if tok, _ := src.Token(alice); tok != a1 {
			t.Fatal("a cached token was not reused")
		}
	}
	if ep.Issued("alice") != 1 || ep.Issued("bob") != 1 {
		t.Fatalf("issued alice=%d bob=%d, want 1 each", ep.Issued("alice"), ep.Issued("bob"))
	}
	form := ep.Forms()[0]
	for k, want := range map[string]string{"grant_type": credentials.GrantTypeTokenExchange, "subject_token": aliceTok,
		"subject_token_type": credentials.TokenTypeAccessToken, "audience": "gateway-one", "scope": "tools"} {
		if got := strings.Join(form[k], ","); got != want {
			t.Errorf("form %s = %q, want %q", k, got, want)
		}
	}

	// 100s lifetime: refreshed 10s before expiry, not before.
	clk.Add(89 * time.Second)
	if tok, _ := src.Token(alice); tok != a1 || ep.Issued("alice") != 1 {
		t.Fatal("refreshed too early")
	}
	clk.Add(2 * time.Second)
	a2, err := src.Token(alice)
	if err != nil || a2 == a1 || ep.Issued("alice") != 2 {
		t.Fatalf("not refreshed shortly before expiry: issued %d, err %v", ep.Issued("alice"), err)
	}
}

// The exchanged token is not used past the caller's own token's exp.
func TestSource_ExchangedTokenNeverOutlivesTheSubjectToken(t *testing.T) {
	ep := testsupport.StartTokenEndpoint(t, "mcpgw", secret, gatewayKey)
	clk := &clock{now: time.Now()}
	src := credentials.NewSource(exchangeSettings(ep), clk.Now, nil)
	defer src.Close()
	tok := testsupport.MintJWT(t, gatewayKey, testsupport.StdClaims("alice"))
	ctx := credentials.WithCaller(t.Context(), credentials.Caller{Principal: "alice", Token: tok,
		Claims: map[string]any{"exp": float64(clk.Now().Add(20 * time.Second).Unix())}})
	if _, err := src.Token(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Add(21 * time.Second) // the endpoint said an hour
	if _, err := src.Token(ctx); err != nil || ep.Issued("alice") != 2 {
		t.Fatalf("issued %d, want a new exchange once the subject token expired (%v)", ep.Issued("alice"), err)
	}
}

// Many first requests of one principal at once cost one exchange: the
// endpoint holds the first until every caller is asking.
func TestSource_ConcurrentFirstRequestsExchangeOnce(t *testing.T) {
	ep := testsupport.StartTokenEndpoint(t, "mcpgw", secret, gatewayKey)
	src := credentials.NewSource(exchangeSettings(ep), nil, nil)
	defer src.Close()
	ep.Hold()
	const n = 16
	var started, done sync.WaitGroup
	toks := make([]string, n)
	errs := make([]error, n)
	started.Add(n)
	for i := range n {
		done.Go(func() {
			ctx, _ := callerCtx(t, "alice")
			started.Done()
			toks[i], errs[i] = src.Token(ctx)
		})
	}
	started.Wait()
	if !ep.WaitRequests(1, 5*time.Second) {
		t.Fatal("no token request arrived")
	}
	ep.Release()
	done.Wait()
	for i := range n {
		if errs[i] != nil || toks[i] != toks[0] {
			t.Fatalf("caller %d: %q, %v", i, toks[i], errs[i])
		}
	}
	if got := ep.Requests(); got != 1 {
		t.Fatalf("%d token requests for one principal's concurrent first requests, want 1", got)
	}
}

// A caller who gives up does not fail the others waiting on the same
// exchange.
func TestSource_OneCallerCancellingDoesNotFailTheFlight(t *testing.T) {
	ep := testsupport.StartTokenEndpoint(t, "mcpgw", secret, gatewayKey)
	src := credentials.NewSource(exchangeSettings(ep), nil, nil)
	defer src.Close()
	ep.Hold()
	ctx, _ := callerCtx(t, "alice")
	cctx, cancel := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() { _, err := src.Token(cctx); first <- err }()
	if !ep.WaitRequests(1, 5*time.Second) {
		t.Fatal("no token request arrived")
	}
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller got %v", err)
	}
	second := make(chan error, 1)
	go func() { _, err := src.Token(ctx); second <- err }()
	ep.Release()
	if err := <-second; err != nil {
		t.Fatalf("second caller: %v", err)
	}
	if ep.Requests() != 1 {
		t.Fatalf("%d token requests, want 1", ep.Requests())
	}
}

// Failures name what went wrong and never the secret, the caller's token,
// the endpoint's body or its URL.
func TestSource_FailuresAreClearAndHoldNoSecret(t *testing.T) {
	ep := testsupport.StartTokenEndpoint(t, "mcpgw", secret, gatewayKey)
	gone := httptest.NewServer(nil)
	goneURL := gone.URL + "/token"
	gone.Close()
	for _, tc := range []struct {
		name  string
		setup func(*credentials.Settings)
		want  string
	}{
		{"endpoint down", func(*credentials.Settings) { ep.SetDown(true) }, "token exchange failed: the token endpoint answered HTTP 503 (temporarily_unavailable)"},
		{"wrong secret", func(s *credentials.Settings) { s.ClientSecret = "wrong-secret-FROBOZZ" }, "the token endpoint answered HTTP 401 (invalid_client)"},
		{"unreachable", func(s *credentials.Settings) { s.TokenURL = goneURL }, "token exchange failed: the token endpoint is unreachable"},
		{"slow", func(s *credentials.Settings) { ep.Hold(); s.Timeout = 50 * time.Millisecond }, "the token endpoint did not answer within 50ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer ep.SetDown(false)
			defer ep.Release()
			s := exchangeSettings(ep)
			tc.setup(&s)
			src := credentials.NewSource(s, nil, nil)
			defer src.Close()
			ctx, tok := callerCtx(t, "alice")
			_, err := src.Token(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			for _, leak := range []string{secret, string(s.ClientSecret), tok, "test endpoint refused", "127.0.0.1"} {
				if strings.Contains(err.Error(), leak) {
					t.Fatalf("error %q leaks %q", err, leak)
				}
			}
		})
	}
	// No caller, or a caller without a token, cannot be exchanged for.
	src := credentials.NewSource(exchangeSettings(ep), nil, nil)
	defer src.Close()
	for _, ctx := range []context.Context{t.Context(), credentials.WithCaller(t.Context(), credentials.Caller{Principal: "anonymous"})} {
		if _, err := src.Token(ctx); err == nil || !strings.Contains(err.Error(), "no caller token to exchange") {
			t.Fatalf("err = %v", err)
		}
	}
}

// Client credentials: one token for the backend, whoever calls, and none
// needed.
func TestSource_ClientCredentialsOneTokenPerBackend(t *testing.T) {
	ep := testsupport.StartTokenEndpoint(t, "mcpgw", secret, gatewayKey)
	ep.SetExpiresIn(100 * time.Second)
	clk := &clock{now: time.Now()}
	src := credentials.NewSource(credentials.Settings{Grant: credentials.GrantClientCredentials, TokenURL: ep.URL,
		ClientID: "mcpgw", ClientSecret: secret, Scopes: []string{"a", "b"}}, clk.Now, nil)
	defer src.Close()
	alice, _ := callerCtx(t, "alice")
	var first string
	for _, ctx := range []context.Context{t.Context(), alice, t.Context()} {
		tok, err := src.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if first == "" {
			first = tok
		}
		if tok != first {
			t.Fatal("client credentials token not reused")
		}
	}
	if ep.Issued("client:mcpgw") != 1 {
		t.Fatalf("issued %d, want 1", ep.Issued("client:mcpgw"))
	}
	f := ep.Forms()[0]
	if f.Get("grant_type") != "client_credentials" || f.Get("scope") != "a b" || f.Get("subject_token") != "" {
		t.Fatalf("form = %v", f)
	}
	clk.Add(95 * time.Second)
	if _, err := src.Token(t.Context()); err != nil || ep.Issued("client:mcpgw") != 2 {
		t.Fatalf("not refreshed: %d, %v", ep.Issued("client:mcpgw"), err)
	}
}
