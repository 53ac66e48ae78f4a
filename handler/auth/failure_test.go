package auth

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/internal/testsupport/oidcop"
)

// What a refusal says: the class, and a detail naming the values that
// differ (never the token). The classes themselves are asserted for
// every kind of bad token in TestAuth_RejectsBadTokensWith401.

// failureOf verifies authz with v and returns why it was refused.
func failureOf(t *testing.T, v Verifier, authz string) Failure {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	p, err := v.Verify(req)
	if err == nil {
		t.Fatalf("%q accepted as %q", authz, p)
	}
	f := FailureOf(err)
	if _, tok, ok := strings.Cut(authz, " "); ok {
		for _, part := range strings.Split(tok, ".") {
			if len(part) >= 8 && strings.Contains(f.Detail, part) {
				t.Errorf("detail %q holds the token", f.Detail)
			}
		}
	}
	return f
}

func TestFailure_DetailNamesWhatDiffers(t *testing.T) {
	k := newKeys(t)
	v := mustVerifier(t, settings(k.hmac, &k.rsa.PublicKey))
	rs := func(kv ...any) string {
		return "Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), kv...))
	}
	exp := time.Now().Add(-time.Hour).Truncate(time.Second)
	nbf := time.Now().Add(time.Hour).Truncate(time.Second)
	cases := []struct {
		name, authz, class string
		want               []string // in the detail
	}{
		{"no header", "", ClassNoToken, []string{"no Authorization header"}},
		{"basic", "Basic YWxpY2U6cGFzcw==", ClassNoToken, []string{"not Bearer"}},
		{"two segments", "Bearer abc.def", ClassMalformed, []string{"three base64url segments"}},
		{"audience", rs("aud", []any{"other-api", "x"}), ClassAudience, []string{`["other-api", "x"]`, `["mcpgateway-api"]`}},
		{"no audience", rs("aud", nil), ClassAudience, []string{"(absent)"}},
		{"issuer", rs("iss", "https://evil.example"), ClassIssuer, []string{`"https://evil.example"`, `["mcpgateway"]`}},
		{"no issuer", rs("iss", nil), ClassIssuer, []string{`token has no iss claim (want ["mcpgateway"])`}},
		{"issuer slash", rs("iss", issuer+"/"), ClassIssuer, []string{`"mcpgateway/"`, "differ only by a trailing slash"}},
		{"expired", rs("exp", exp.Unix()), ClassExpired, []string{"expired at " + exp.UTC().Format(time.RFC3339), "leeway 30s"}},
		{"nbf", rs("nbf", nbf.Unix()), ClassNotYetValid, []string{"not valid before " + nbf.UTC().Format(time.RFC3339)}},
		{"iat", rs("iat", nbf.Unix()), ClassNotYetValid, []string{"issued in the future"}},
		{"algorithm", "Bearer " + sign(t, jwt.SigningMethodES256, k.ec, claims()), ClassAlgorithm, []string{`alg "ES256" is not accepted`, "RS256"}},
		{"signature", "Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa2, claims()), ClassBadSignature, []string{"does not verify"}},
		{"no exp", rs("exp", nil), ClassClaims, []string{"no exp claim"}},
		{"no sub", rs("sub", ""), ClassClaims, []string{"sub"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := failureOf(t, v, c.authz)
			if f.Class != c.class {
				t.Errorf("class %q, want %q (detail %q)", f.Class, c.class, f.Detail)
			}
			for _, w := range c.want {
				if !strings.Contains(f.Detail, w) {
					t.Errorf("detail %q lacks %q", f.Detail, w)
				}
			}
		})
	}
}

// The key lookups' sentinels from a real provider's JWK Set: a kid the
// set does not hold names the kid, the issuer and where the set came
// from; with no key held at all (the set never fetched) the cause is
// the provider, not the token.
func TestFailure_UnknownKidAndKeysNotHeld(t *testing.T) {
	p := oidcop.Start(t, oidcop.Options{Clients: []*oidcop.Client{alice("alice")}})
	v := startHeld(t, config.Auth{Mode: config.ModeJWT, JWT: discovered(p.Issuer)})
	if rec, got := serve(t, v, "Bearer "+p.Token(t, "svc-alice")); rec.Code != http.StatusNoContent || got != "alice" {
		t.Fatalf("the provider's token: %d", rec.Code)
	}
	f := failureOf(t, v, "Bearer "+forged(t, p.Issuer, "kid-nobody-has"))
	if f.Class != ClassUnknownKid || !strings.Contains(f.Detail, `"kid-nobody-has"`) ||
		!strings.Contains(f.Detail, fmt.Sprintf("%q", p.Issuer)) || !strings.Contains(f.Detail, "fetched from http") {
		t.Errorf("unknown kid: %+v", f)
	}

	down := oidcop.Start(t, oidcop.Options{Clients: []*oidcop.Client{alice("bob")}})
	tok := down.Token(t, "svc-bob")
	down.SetDown(true)
	tm := defaultKeyTiming
	tm.keyWait, tm.httpTimeout = 300*time.Millisecond, 300*time.Millisecond
	v2, _ := startVerifier(t, config.Auth{Mode: config.ModeJWT, JWT: discovered(down.Issuer)}, withTiming(tm))
	if f := failureOf(t, v2, "Bearer "+tok); f.Class != ClassUnavailable || !strings.Contains(f.Detail, "has not been fetched") {
		t.Errorf("keys never fetched: %+v", f)
	}
}

// Several issuers: a JWT of none of them names the trusted ones.
func TestFailure_SeveralIssuersNameTheTrustedOnes(t *testing.T) {
	k := newKeys(t)
	one := settings(nil, &k.rsa.PublicKey).JWT
	two := *one
	two.Issuer = "https://idp.example/"
	v := mustVerifier(t, config.Auth{Mode: config.ModeJWT, Issuers: []*config.JWTSettings{one, &two}})
	f := failureOf(t, v, "Bearer "+sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), "iss", "https://idp.example")))
	if f.Class != ClassIssuer || !strings.Contains(f.Detail, `["https://idp.example/", "mcpgateway"]`) || !strings.Contains(f.Detail, "trailing slash") {
		t.Errorf("%+v", f)
	}
}

// The class is found with errors.Is whatever wraps the sentinel, and an
// error of no known kind is a claims refusal, never a panic.
func TestFailure_ClassOfWrappedSentinels(t *testing.T) {
	cases := map[error]string{
		nil:                                     ClassNoToken,
		ErrNoToken:                              ClassNoToken,
		fmt.Errorf("x: %w", ErrNoToken):         ClassNoToken,
		&tokenError{cause: jwt.ErrTokenExpired}: ClassExpired,
		&tokenError{cause: errors.Join(jwt.ErrTokenInvalidClaims, jwt.ErrTokenExpired, jwt.ErrTokenInvalidIssuer)}: ClassIssuer,
		&tokenError{cause: errors.Join(jwt.ErrTokenUnverifiable, errUnknownKid)}:                                   ClassUnknownKid,
		&tokenError{cause: jwt.ErrTokenUnverifiable}:                                                               ClassAlgorithm,
		&tokenError{cause: errInactive}:                                                                            ClassInactive,
		&tokenError{cause: errIntrospectionBusy}:                                                                   ClassUnavailable,
		errors.New("something else"):                                                                               ClassClaims,
	}
	for err, want := range cases {
		if got := FailureOf(err); got.Class != want || got.Detail == "" {
			t.Errorf("FailureOf(%v) = %+v, want class %q", err, got, want)
		}
	}
	for _, c := range Classes {
		if describe[c] == "" || strings.ContainsAny(describe[c], `"\`) {
			t.Errorf("class %q: description %q", c, describe[c])
		}
	}
}
