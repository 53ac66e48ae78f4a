package tests

import (
	"net/http"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// The whole flow from Go, step by step: register, authorize (sign-in at
// Hydra, consent), token, calls on the vhost the token names and not on
// another, refresh, revocation; then the attacks.
func TestAuthServer_FlowAndAttacks(t *testing.T) {
	r := startAuthServer(t)
	cb := callbackServer(t)
	c := r.register(cb)
	alice := r.browser("alice", "ops")
	v, ch := pkce()
	code := c.code(alice, "a", ch, nil)
	st, tok := c.exchange(code, v)
	at, _ := tok["access_token"].(string)
	rt, _ := tok["refresh_token"].(string)
	if st != http.StatusOK || at == "" || rt == "" {
		t.Fatalf("token: %d %v", st, tok)
	}
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(at, claims); err != nil {
		t.Fatal(err)
	}
	if claims["iss"] != r.lb || claims["sub"] != "alice" || claims["client_id"] != c.id {
		t.Fatalf("access token claims: %v", claims)
	}
	if aud, _ := claims.GetAudience(); len(aud) != 1 || aud[0] != r.resource("a") {
		t.Fatalf("aud %v", aud)
	}
	if g, _ := claims["groups"].([]any); len(g) != 1 || g[0] != "ops" {
		t.Fatalf("groups not carried over: %v", claims)
	}
	for range 2 {
		if rep := r.call(at, "a", ""); rep.Status != http.StatusOK {
			t.Fatalf("vhost a: %d %s", rep.Status, rep.Body)
		}
		if rep := r.call(at, "b", ""); rep.Status != http.StatusUnauthorized {
			t.Fatalf("vhost b with a's token: %d %s", rep.Status, rep.Body)
		}
	}
	// Refresh rotates; the old refresh token, used again, revokes the
	// family: the new one stops working too.
	st, tok2 := c.refresh(rt)
	rt2, _ := tok2["refresh_token"].(string)
	if st != http.StatusOK || rt2 == "" || rt2 == rt || tok2["access_token"] == "" {
		t.Fatalf("refresh: %d %v", st, tok2)
	}
	if rep := r.call(tok2["access_token"].(string), "a", ""); rep.Status != http.StatusOK {
		t.Fatalf("refreshed token: %d", rep.Status)
	}
	if st, out := c.refresh(rt); st != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Fatalf("reused refresh token: %d %v", st, out)
	}
	if st, out := c.refresh(rt2); st != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Fatalf("the family survived reuse: %d %v", st, out)
	}
	// Revocation (RFC 7009) of a fresh grant's refresh token.
	v, ch = pkce()
	_, tok = c.exchange(c.code(alice, "a", ch, nil), v)
	rt = tok["refresh_token"].(string)
	if st, _ := r.postForm("/oauth2/revoke", map[string][]string{"token": {rt}, "client_id": {c.id}}); st != http.StatusOK {
		t.Fatalf("revoke: %d", st)
	}
	if st, out := c.refresh(rt); st != http.StatusBadRequest {
		t.Fatalf("refresh after revocation: %d %v", st, out)
	}
	_ = strings.TrimSpace
}
