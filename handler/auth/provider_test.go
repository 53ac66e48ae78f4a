package auth

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/goleak"

	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/oidcop"
)

// Tokens from a real OpenID provider (zitadel's OP, in process): keys
// discovered from the issuer, rotation, a flood of made-up kids, the
// provider down, several issuers, audience_claim.

const opAudience = "mcpgw"

func discovered(issuer string) *config.JWTSettings {
	return &config.JWTSettings{Issuer: issuer, Audience: opAudience, Discover: true, Algorithms: asymmetricAlgs, Leeway: 30 * time.Second}
}

// startVerifier builds a verifier for a, closed when the test ends; its
// log goes to the returned buffer.
func startVerifier(t *testing.T, a config.Auth, opts ...Option) (Verifier, *testsupport.SyncBuffer) {
	t.Helper()
	logs := &testsupport.SyncBuffer{}
	v, err := New(a, append([]Option{WithLogger(slog.New(slog.NewTextHandler(logs, nil)))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Close(v) })
	return v, logs
}

// startHeld is startVerifier for a test about tokens the provider
// issued: it returns once every issuer's first key fetch has ended with
// keys held. A request waits for that fetch at most keyWait (3 s), a
// bound a loaded machine (-race, parallel packages) can pass; the test
// waits for the fetch itself instead.
func startHeld(t *testing.T, a config.Auth, opts ...Option) Verifier {
	t.Helper()
	v, logs := startVerifier(t, a, opts...)
	var remotes []*remoteKeys
	switch v := v.(type) {
	case *jwtVerifier:
		remotes = append(remotes, v.remote)
	case *issuersVerifier:
		for _, jv := range v.byIssuer {
			remotes = append(remotes, jv.remote)
		}
	default:
		t.Fatalf("startHeld: a %T fetches no keys", v)
	}
	for _, k := range remotes {
		if k == nil {
			continue // configured keys: nothing to fetch
		}
		k.mu.Lock()
		done := k.done // the first fetch's, or a later one's: either ends
		k.mu.Unlock()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("%s: the first key fetch never ended", k.issuer)
		}
		if !k.holdsKeys(t.Context()) {
			t.Fatalf("%s: no keys held after the first fetch; log:\n%s", k.issuer, logs)
		}
	}
	return v
}

func alice(sub string, aud ...string) *oidcop.Client {
	if len(aud) == 0 {
		aud = []string{opAudience}
	}
	return &oidcop.Client{ID: "svc-" + sub, Secret: "secret-" + sub, Subject: sub, Audience: aud}
}

var forgeKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// forged signs claims for issuer with a key the provider never had.
func forged(t *testing.T, issuer, kid string) string {
	t.Helper()
	k := forgeKey()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, with(claims(), "iss", issuer, "aud", opAudience))
	tok.Header["kid"] = kid
	s, err := tok.SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestProvider_KeysDiscoveredFromTheIssuer(t *testing.T) {
	for name, o := range map[string]oidcop.Options{
		"openid discovery":        {Path: "/realms/mcp"},
		"rfc 8414 path insertion": {Path: "/realms/mcp", RFC8414Only: true},
		"issuer without path":     {},
	} {
		t.Run(name, func(t *testing.T) {
			o.Clients = []*oidcop.Client{alice("alice")}
			p := oidcop.Start(t, o)
			v := startHeld(t, config.Auth{Mode: config.ModeJWT, JWT: discovered(p.Issuer)})
			rec, got := serve(t, v, "Bearer "+p.Token(t, "svc-alice"))
			if rec.Code != http.StatusNoContent || got != "alice" {
				t.Fatalf("status %d principal %q: %s", rec.Code, got, rec.Body)
			}
		})
	}
}

// The issuer is matched byte for byte: a trailing slash the provider does
// not have is a mix-up, reported clearly, and no token is accepted.
func TestProvider_IssuerMismatchIsReported(t *testing.T) {
	p := oidcop.Start(t, oidcop.Options{Path: "/realms/mcp", Clients: []*oidcop.Client{alice("alice")}})
	v, logs := startVerifier(t, config.Auth{Mode: config.ModeJWT, JWT: discovered(p.Issuer + "/")})
	if rec, _ := serve(t, v, "Bearer "+p.Token(t, "svc-alice")); rec.Code != http.StatusUnauthorized {
		t.Fatalf("status %d", rec.Code)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !bytes.Contains([]byte(logs.String()), []byte("names another issuer")) {
		if time.Now().After(deadline) {
			t.Fatalf("no clear message; log:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A rotation is picked up without a restart, within 10 s, for each key
// family the provider may rotate to.
func TestProvider_RotationPickedUpWithinTenSeconds(t *testing.T) {
	p := oidcop.Start(t, oidcop.Options{Clients: []*oidcop.Client{alice("alice")}})
	v := startHeld(t, config.Auth{Mode: config.ModeJWT, JWT: discovered(p.Issuer)})
	if rec, _ := serve(t, v, "Bearer "+p.Token(t, "svc-alice")); rec.Code != http.StatusNoContent {
		t.Fatalf("before rotation: %d", rec.Code)
	}
	for _, alg := range []string{"ES256", "EdDSA", "RS256"} {
		old := p.Token(t, "svc-alice")
		p.Rotate(t, alg, false)
		tok := p.Token(t, "svc-alice")
		start := time.Now()
		for {
			rec, got := serve(t, v, "Bearer "+tok)
			if rec.Code == http.StatusNoContent && got == "alice" {
				break
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("%s: rotation not picked up within 10s (last status %d)", alg, rec.Code)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// The retired key went with the refetch.
		if rec, _ := serve(t, v, "Bearer "+old); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s: token of the retired key: %d", alg, rec.Code)
		}
	}
}

// Made-up kids cost the provider a bounded number of JWK Set fetches: at
// most one per minRefetch (5 s), however many tokens come.
func TestProvider_KidFloodIsBounded(t *testing.T) {
	p := oidcop.Start(t, oidcop.Options{Clients: []*oidcop.Client{alice("alice")}})
	v := startHeld(t, config.Auth{Mode: config.ModeJWT, JWT: discovered(p.Issuer)})
	if rec, _ := serve(t, v, "Bearer "+p.Token(t, "svc-alice")); rec.Code != http.StatusNoContent {
		t.Fatalf("status %d", rec.Code)
	}
	before := p.JWKSHits()
	tok := forged(t, p.Issuer, "made-up")
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := tok
			if i%2 == 1 {
				tok = forged(t, p.Issuer, "other-"+string(rune('a'+i%26)))
			}
			if rec, _ := serve(t, v, "Bearer "+tok); rec.Code != http.StatusUnauthorized {
				t.Errorf("made-up kid: %d", rec.Code)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if hits, bound := p.JWKSHits()-before, 1+int(elapsed/defaultKeyTiming.minRefetch); hits > bound {
		t.Errorf("200 made-up kids in %s cost %d JWK Set fetches, want at most %d", elapsed, hits, bound)
	}
}

// With the provider down, the keys held keep working, and a token whose
// key cannot be had is refused quickly (401, never 5xx, never a long wait).
func TestProvider_DownKeepsKeysAndRefusesUnknownQuickly(t *testing.T) {
	p := oidcop.Start(t, oidcop.Options{Clients: []*oidcop.Client{alice("alice")}})
	tm := defaultKeyTiming
	tm.refresh, tm.retryMax, tm.minRefetch, tm.keyWait = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond, 500*time.Millisecond
	tm.httpTimeout = 300 * time.Millisecond
	v, logs := startVerifier(t, config.Auth{Mode: config.ModeJWT, JWT: discovered(p.Issuer)}, withTiming(tm))
	tok := p.Token(t, "svc-alice")
	// The keys are first fetched under the test's tight timing (300 ms):
	// on a loaded machine that fetch can miss it, and the token is refused
	// until the next try. What this test is about comes after: retry
	// until the keys are held.
	for deadline := time.Now().Add(10 * time.Second); ; {
		rec, _ := serve(t, v, "Bearer "+tok)
		if rec.Code == http.StatusNoContent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %d: the keys were never fetched", rec.Code)
		}
	}
	for _, mode := range []string{"503", "hang"} {
		if mode == "503" {
			p.SetDown(true)
		} else {
			p.SetDown(false)
			p.SetHang(true)
		}
		// Failed refreshes (discovery or the JWK Set) happen meanwhile.
		hits, deadline := p.Requests(), time.Now().Add(5*time.Second)
		for p.Requests() < hits+3 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no refresh attempts", mode)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if rec, got := serve(t, v, "Bearer "+tok); rec.Code != http.StatusNoContent || got != "alice" {
			t.Fatalf("%s: held key refused: %d", mode, rec.Code)
		}
		start := time.Now()
		rec, _ := serve(t, v, "Bearer "+forged(t, p.Issuer, "unknown"))
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("%s: unknown kid: %d", mode, rec.Code)
		}
		if d := time.Since(start); d > tm.keyWait+time.Second {
			t.Errorf("%s: unknown kid took %s", mode, d)
		}
	}
	if !bytes.Contains([]byte(logs.String()), []byte("keeping the keys held")) {
		t.Errorf("failed refreshes not logged:\n%s", logs)
	}
}

// Start-up never waits for a provider: New returns at once with the
// provider hanging, and Close stops the fetcher (no goroutine left).
func TestProvider_NoStartupWaitAndCloseLeavesNothing(t *testing.T) {
	before := goleak.IgnoreCurrent()
	p := oidcop.Start(t, oidcop.Options{})
	p.SetHang(true)
	start := time.Now()
	v, err := New(config.Auth{Mode: config.ModeJWT, JWT: discovered(p.Issuer)}, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("New took %s", d)
	}
	Close(v)
	goleak.VerifyNone(t, before, goleak.IgnoreTopFunction("net/http.(*conn).serve"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

// Several issuers: a token is verified with its own issuer's keys only,
// and equal subjects of two issuers are different principals.
func TestProvider_SeveralIssuersKeepEqualSubjectsApart(t *testing.T) {
	a := oidcop.Start(t, oidcop.Options{Path: "/a", Clients: []*oidcop.Client{alice("alice")}})
	b := oidcop.Start(t, oidcop.Options{Path: "/b", Clients: []*oidcop.Client{alice("alice")}})
	stranger := oidcop.Start(t, oidcop.Options{Path: "/c", Clients: []*oidcop.Client{alice("alice")}})
	v := startHeld(t, config.Auth{Mode: config.ModeJWT, QualifiedPrincipals: true,
		Issuers: []*config.JWTSettings{discovered(a.Issuer), discovered(b.Issuer)}})
	_, pa := serve(t, v, "Bearer "+a.Token(t, "svc-alice"))
	_, pb := serve(t, v, "Bearer "+b.Token(t, "svc-alice"))
	if pa != Principal(a.Issuer+"#alice") || pb != Principal(b.Issuer+"#alice") {
		t.Fatalf("principals %q and %q", pa, pb)
	}
	if rec, _ := serve(t, v, "Bearer "+stranger.Token(t, "svc-alice")); rec.Code != http.StatusUnauthorized {
		t.Errorf("untrusted issuer: %d", rec.Code)
	}
	// A token naming issuer a but signed by b's key is refused.
	bTok := b.Token(t, "svc-alice")
	if rec, _ := serve(t, v, "Bearer "+forged(t, a.Issuer, jwtKid(t, bTok))); rec.Code != http.StatusUnauthorized {
		t.Errorf("cross-issuer key: %d", rec.Code)
	}
	// auth.jwt: the principal stays sub; auth.issuers with one entry
	// qualifies it all the same.
	one := startHeld(t, config.Auth{Mode: config.ModeJWT, JWT: discovered(a.Issuer)})
	if _, p := serve(t, one, "Bearer "+a.Token(t, "svc-alice")); p != "alice" {
		t.Errorf("single issuer principal %q", p)
	}
	listed := startHeld(t, config.Auth{Mode: config.ModeJWT, QualifiedPrincipals: true, Issuers: []*config.JWTSettings{discovered(a.Issuer)}})
	if _, p := serve(t, listed, "Bearer "+a.Token(t, "svc-alice")); p != Principal(a.Issuer+"#alice") {
		t.Errorf("one listed issuer principal %q", p)
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

// audience_claim: Cognito's access tokens carry client_id, not aud.
func TestProvider_AudienceClaim(t *testing.T) {
	p := oidcop.Start(t, oidcop.Options{Clients: []*oidcop.Client{alice("alice", "some-resource")}})
	s := discovered(p.Issuer)
	s.Audience, s.AudienceClaim = "svc-alice", "client_id"
	v := startHeld(t, config.Auth{Mode: config.ModeJWT, JWT: s})
	tok := p.Token(t, "svc-alice")
	if rec, got := serve(t, v, "Bearer "+tok); rec.Code != http.StatusNoContent || got != "alice" {
		t.Fatalf("client_id audience: %d %q", rec.Code, got)
	}
	plain := discovered(p.Issuer)
	plain.Audience = "svc-alice"
	v2, _ := startVerifier(t, config.Auth{Mode: config.ModeJWT, JWT: plain})
	if rec, _ := serve(t, v2, "Bearer "+tok); rec.Code != http.StatusUnauthorized {
		t.Errorf("aud checked without audience_claim: %d", rec.Code)
	}
}

// A JWK Set never verifies HMAC (its public key bytes as the secret) or
// alg none, whatever kid the token names.
func TestProvider_RefusesAlgorithmConfusionWithJWKS(t *testing.T) {
	p := oidcop.Start(t, oidcop.Options{Clients: []*oidcop.Client{alice("alice")}})
	v := startHeld(t, config.Auth{Mode: config.ModeJWT, JWT: discovered(p.Issuer)})
	real := p.Token(t, "svc-alice")
	if rec, _ := serve(t, v, "Bearer "+real); rec.Code != http.StatusNoContent {
		t.Fatalf("status %d", rec.Code)
	}
	c := with(claims(), "iss", p.Issuer, "aud", opAudience)
	for name, m := range map[string]struct {
		method jwt.SigningMethod
		key    any
	}{
		"HS256 with the JWK Set as secret": {jwt.SigningMethodHS256, []byte(p.Issuer + "/keys")},
		"none":                             {jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType},
	} {
		tok := jwt.NewWithClaims(m.method, c)
		tok.Header["kid"] = jwtKid(t, real)
		s, err := tok.SignedString(m.key)
		if err != nil {
			t.Fatal(err)
		}
		if rec, _ := serve(t, v, "Bearer "+s); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s: %d", name, rec.Code)
		}
	}
}

// A provider that is down when the gateway starts (or answers before its
// keys exist) is retried: once it is up, its tokens are accepted within
// seconds, without a restart.
func TestProvider_DownAtStartIsRetried(t *testing.T) {
	p := oidcop.Start(t, oidcop.Options{Clients: []*oidcop.Client{alice("alice")}})
	tok := p.Token(t, "svc-alice")
	p.SetDown(true)
	v, _ := startVerifier(t, config.Auth{Mode: config.ModeJWT, JWT: discovered(p.Issuer)})
	if rec, _ := serve(t, v, "Bearer "+tok); rec.Code != http.StatusUnauthorized {
		t.Fatalf("provider down: %d", rec.Code)
	}
	p.SetDown(false)
	up := time.Now()
	for {
		rec, got := serve(t, v, "Bearer "+tok)
		if rec.Code == http.StatusNoContent && got == "alice" {
			break
		}
		if time.Since(up) > 10*time.Second {
			t.Fatalf("not accepted 10s after the provider came up: %d", rec.Code)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
