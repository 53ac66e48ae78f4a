package auth

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/internal/testsupport/oidcop"
	"github.com/mcpgw/gateway/router/credentials"
)

// Opaque access tokens, checked with the provider's RFC 7662 endpoint.

const rsSecret = "resource-server-secret-PLUGH"

func introspecting(p *oidcop.Provider, cache time.Duration) *config.JWTSettings {
	s := discovered(p.Issuer)
	s.Introspection = &config.Introspection{URL: p.IntrospectionURL(), ClientID: "mcpgw-rs",
		ClientSecret: credentials.Secret(rsSecret), SecretEnv: "RS_SECRET", Cache: cache}
	return s
}

func opaqueProvider(t *testing.T, path string) *oidcop.Provider {
	t.Helper()
	return oidcop.Start(t, oidcop.Options{Path: path, Clients: []*oidcop.Client{
		{ID: "svc-alice", Secret: "s1", Subject: "alice", Audience: []string{opAudience}, Opaque: true},
		{ID: "svc-other", Secret: "s2", Subject: "bob", Audience: []string{"another-api"}, Opaque: true},
		{ID: "mcpgw-rs", Secret: rsSecret, Subject: "mcpgw-rs"},
	}})
}

func TestIntrospection_OpaqueTokenAndRevocationWithinCacheBound(t *testing.T) {
	p := opaqueProvider(t, "/hydra")
	const cache = time.Second
	v, _ := startVerifier(t, config.Auth{Mode: config.ModeJWT, JWT: introspecting(p, cache)})
	tok := p.Token(t, "svc-alice")
	if strings.Count(tok, ".") == 2 {
		t.Fatalf("provider issued a JWT, want an opaque token")
	}
	rec, got := serve(t, v, "Bearer "+tok)
	if rec.Code != http.StatusNoContent || got != "alice" {
		t.Fatalf("opaque token: %d %q %s", rec.Code, got, rec.Body)
	}
	p.Revoke("alice")
	revoked := time.Now()
	for {
		rec, _ := serve(t, v, "Bearer "+tok)
		if rec.Code == http.StatusUnauthorized {
			break
		}
		if time.Since(revoked) > cache+2*time.Second {
			t.Fatalf("revocation not seen within the cache bound %s", cache)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Another audience, a made-up token: 401.
	if rec, _ := serve(t, v, "Bearer "+p.Token(t, "svc-other")); rec.Code != http.StatusUnauthorized {
		t.Errorf("other audience: %d", rec.Code)
	}
	if rec, _ := serve(t, v, "Bearer ory_at_made.up"); rec.Code != http.StatusUnauthorized {
		t.Errorf("made-up token: %d", rec.Code)
	}
}

// An active answer is cached under a hash of the token (never the token),
// for at most the configured time: within it the provider is not asked.
func TestIntrospection_CacheKeyedByHash(t *testing.T) {
	p := opaqueProvider(t, "")
	v, _ := startVerifier(t, config.Auth{Mode: config.ModeJWT, JWT: introspecting(p, time.Hour)})
	tok := p.Token(t, "svc-alice")
	if rec, _ := serve(t, v, "Bearer "+tok); rec.Code != http.StatusNoContent {
		t.Fatalf("status %d", rec.Code)
	}
	p.Revoke("alice")
	if rec, _ := serve(t, v, "Bearer "+tok); rec.Code != http.StatusNoContent {
		t.Errorf("cached answer not used: %d", rec.Code)
	}
	in := v.(*issuersVerifier).intro
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.cache) != 1 {
		t.Fatalf("cache holds %d answers", len(in.cache))
	}
	for k, e := range in.cache {
		if strings.Contains(string(k[:]), tok) || e.until.After(time.Now().Add(6*time.Minute)) {
			t.Errorf("entry %+v: keyed by the token, or trusted past the token's exp", e)
		}
	}
}

// A wrong client secret, or the provider down, is a 401; the secret
// never reaches the log.
func TestIntrospection_FailuresAre401AndHideTheSecret(t *testing.T) {
	p := opaqueProvider(t, "")
	s := introspecting(p, time.Second)
	s.Introspection.ClientSecret = credentials.Secret("wrong-secret-XYZZY")
	v, logs := startVerifier(t, config.Auth{Mode: config.ModeJWT, JWT: s})
	tok := p.Token(t, "svc-alice")
	if rec, _ := serve(t, v, "Bearer "+tok); rec.Code != http.StatusUnauthorized {
		t.Errorf("wrong client secret: %d", rec.Code)
	}
	good, logs2 := startVerifier(t, config.Auth{Mode: config.ModeJWT, JWT: introspecting(p, 0)})
	p.SetDown(true)
	if rec, _ := serve(t, good, "Bearer "+tok); rec.Code != http.StatusUnauthorized {
		t.Errorf("provider down: %d", rec.Code)
	}
	for _, l := range []string{logs.String(), logs2.String()} {
		if strings.Contains(l, "XYZZY") || strings.Contains(l, rsSecret) || strings.Contains(l, tok) {
			t.Errorf("log leaks a secret or the token:\n%s", l)
		}
	}
	if !strings.Contains(logs.String(), "token introspection failed") {
		t.Errorf("failure not logged:\n%s", logs)
	}
}

// With several issuers, JWTs go to their own issuer; an opaque token goes
// to the one introspecting issuer, a JWT of an untrusted issuer nowhere.
func TestIntrospection_SeveralIssuers(t *testing.T) {
	jwtIdP := oidcop.Start(t, oidcop.Options{Path: "/a", Clients: []*oidcop.Client{alice("alice")}})
	opaque := opaqueProvider(t, "/b")
	v, _ := startVerifier(t, config.Auth{Mode: config.ModeJWT, QualifiedPrincipals: true,
		Issuers: []*config.JWTSettings{discovered(jwtIdP.Issuer), introspecting(opaque, time.Second)}})
	if _, p := serve(t, v, "Bearer "+jwtIdP.Token(t, "svc-alice")); p != Principal(jwtIdP.Issuer+"#alice") {
		t.Errorf("JWT principal %q", p)
	}
	if _, p := serve(t, v, "Bearer "+opaque.Token(t, "svc-alice")); p != Principal(opaque.Issuer+"#alice") {
		t.Errorf("opaque principal %q", p)
	}
	before := opaque.Introspections()
	if rec, _ := serve(t, v, "Bearer "+forged(t, "https://stranger.example/", "k")); rec.Code != http.StatusUnauthorized {
		t.Errorf("stranger's JWT: %d", rec.Code)
	}
	if rec, _ := serve(t, v, "Bearer "+forged(t, jwtIdP.Issuer, "k")); rec.Code != http.StatusUnauthorized {
		t.Errorf("forged JWT of the JWT issuer: %d", rec.Code)
	}
	if n := opaque.Introspections() - before; n != 0 {
		t.Errorf("JWTs of other issuers were sent to the introspecting one (%d requests)", n)
	}
	if rec, _ := serve(t, v, "Bearer ory_at_x.y"); rec.Code != http.StatusUnauthorized || opaque.Introspections() != before+1 {
		t.Errorf("opaque token with a dot: %d, introspected %d times", rec.Code, opaque.Introspections()-before)
	}
}

// Concurrent requests with one new token make one introspection request;
// a hanging endpoint costs each at most the request bound, then a 401.
func TestIntrospection_OneRequestPerTokenAndBoundedWait(t *testing.T) {
	p := opaqueProvider(t, "")
	tm := defaultKeyTiming
	tm.keyWait = 300 * time.Millisecond
	v, _ := startVerifier(t, config.Auth{Mode: config.ModeJWT, JWT: introspecting(p, time.Second)}, withTiming(tm))
	tok := p.Token(t, "svc-alice")
	p.SetHang(true)
	before := p.Introspections()
	start := time.Now()
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if rec, _ := serve(t, v, "Bearer "+tok); rec.Code != http.StatusUnauthorized {
				t.Errorf("hanging endpoint: %d", rec.Code)
			}
		}()
	}
	wg.Wait()
	if n := p.Introspections() - before; n != 1 {
		t.Errorf("20 concurrent requests with one token made %d introspection requests", n)
	}
	if d := time.Since(start); d > tm.keyWait+time.Second {
		t.Errorf("took %s", d)
	}
	p.SetHang(false)
	if rec, got := serve(t, v, "Bearer "+tok); rec.Code != http.StatusNoContent || got != "alice" {
		t.Errorf("after the endpoint is back: %d %q", rec.Code, got)
	}
}
