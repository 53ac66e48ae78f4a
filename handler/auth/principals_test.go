package auth

// Principals name callers everywhere (sessions, rate-limit counters,
// parked calls, tasks, user tokens): two (issuer, subject) pairs must
// never make one.

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgw/gateway/internal/config"
)

func hmacIssuer(iss string, secret []byte) *config.JWTSettings {
	return &config.JWTSettings{Issuer: iss, Audience: audience, HMACSecret: secret, Leeway: 30 * time.Second}
}

// The red team's pair: issuers rt3-x and rt3-x#a would make (rt3-x#a,
// bob) and (rt3-x, a#bob) both rt3-x#a#bob. Such a list is refused.
func TestPrincipals_AnIssuerWithAHashIsRefused(t *testing.T) {
	secret := newKeys(t).hmac
	a := config.Auth{Mode: config.ModeJWT, QualifiedPrincipals: true,
		Issuers: []*config.JWTSettings{hmacIssuer("rt3-x", secret), hmacIssuer("rt3-x#a", secret)}}
	if err := Check(a); err == nil || !strings.Contains(err.Error(), `"rt3-x#a"`) {
		t.Fatalf("Check: %v, want the issuer with a '#' refused", err)
	}
	if v, err := New(a); err == nil {
		Close(v)
		t.Fatal("New accepted an issuer with a '#'")
	}
	// One issuer (auth.jwt): its principal is the subject alone, so
	// nothing can collide and the issuer is left as it was.
	if err := Check(config.Auth{Mode: config.ModeJWT, JWT: hmacIssuer("rt3-x#a", secret)}); err != nil {
		t.Fatalf("a single issuer with a '#': %v", err)
	}
}

// With issuers that may be trusted together, subjects shaped to collide
// (holding '#', or another issuer's name) stay apart, and principals of
// one issuer stay what they were (sessions made before keep their owner).
func TestPrincipals_PairsThatLookAlikeStayApart(t *testing.T) {
	secret := newKeys(t).hmac
	issuers := []string{"rt3-x", "rt3-x-a", "https://idp.example/a", "https://idp.example/a/b"}
	var list []*config.JWTSettings
	for _, iss := range issuers {
		list = append(list, hmacIssuer(iss, secret))
	}
	v := mustVerifier(t, config.Auth{Mode: config.ModeJWT, QualifiedPrincipals: true, Issuers: list})
	defer Close(v)
	subjects := []string{"bob", "a#bob", "#bob", "bob#", "x#a#bob", "-a#bob", "/b#bob", "b#bob"}
	seen := map[Principal][2]string{}
	for _, iss := range issuers {
		for _, sub := range subjects {
			c := claims()
			c["iss"], c["sub"] = iss, sub
			rec, p := serve(t, v, "Bearer "+sign(t, jwt.SigningMethodHS256, secret, c))
			if rec.Code >= 300 || p == "" {
				t.Fatalf("(%s, %s): %d", iss, sub, rec.Code)
			}
			if other, dup := seen[p]; dup {
				t.Fatalf("(%s, %s) and (%s, %s) are both the principal %q", iss, sub, other[0], other[1], p)
			}
			seen[p] = [2]string{iss, sub}
			if p != Principal(iss+"#"+sub) {
				t.Fatalf("(%s, %s) is %q: a principal several issuers make is {iss}#{sub}, as before", iss, sub, p)
			}
		}
	}
	one := mustVerifier(t, settings(secret, nil))
	c := claims()
	c["sub"] = "a#bob"
	if _, p := serve(t, one, "Bearer "+sign(t, jwt.SigningMethodHS256, secret, c)); p != "a#bob" {
		t.Fatalf("one issuer's principal %q, want the subject as it is", p)
	}
}
