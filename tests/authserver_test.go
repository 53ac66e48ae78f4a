package tests

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// The whole flow from Go, step by step: register, authorize (sign-in at
// Hydra, consent), token, calls on the vhost the token names and not on
// another, refresh, revocation; then the attacks.
func TestAuthServer_FlowAndAttacks(t *testing.T) {
	r := startAuthServer(t, "10m")
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

	asStepUp(t, r, c, alice)
	asAttacks(t, r, c, alice)
	asNoSecrets(t, r, []string{at, rt, rt2, code, v, asLoginSecret, asKeyB64})
}

// Step-up: a token without scope admin gets the 403 challenge for
// increment on vhost a; re-authorized with the scope, the call runs. A
// caller outside group ops does not learn increment exists.
func asStepUp(t *testing.T, r *asRig, c *oauthClient, alice *browser) {
	v, ch := pkce()
	_, tok := c.exchange(c.code(alice, "a", ch, nil), v)
	rep := r.call(tok["access_token"].(string), "a", "increment")
	challenge := rep.Header.Get("WWW-Authenticate")
	if rep.Status != http.StatusForbidden || !strings.Contains(challenge, `error="insufficient_scope"`) || !strings.Contains(challenge, `scope="admin"`) {
		t.Fatalf("increment without admin: %d %q %s", rep.Status, challenge, rep.Body)
	}
	v, ch = pkce()
	_, tok = c.exchange(c.code(alice, "a", ch, url.Values{"scope": {"admin"}}), v)
	if rep := r.call(tok["access_token"].(string), "a", "increment"); rep.Status != http.StatusOK || rep.Error() != nil {
		t.Fatalf("increment with admin: %d %s", rep.Status, rep.Body)
	}
	bob := r.browser("bob")
	v, ch = pkce()
	_, tok = c.exchange(c.code(bob, "a", ch, url.Values{"scope": {"admin"}}), v)
	if rep := r.call(tok["access_token"].(string), "a", "increment"); rep.Error() == nil || rep.Error().Code != -32602 {
		t.Fatalf("increment for bob: %d %s", rep.Status, rep.Body)
	}
}

// noRedirect asserts an authorization request refused on the spot: 400,
// no redirect anywhere.
func noRedirect(t *testing.T, what string, st int, loc string) {
	t.Helper()
	if st != http.StatusBadRequest || loc != "" {
		t.Errorf("%s: %d %q, want 400 without a redirect", what, st, loc)
	}
}

// errorRedirect asserts a refusal sent back to the client's redirect URI.
func errorRedirect(t *testing.T, what string, st int, loc, want string) {
	t.Helper()
	u, err := url.Parse(loc)
	if st != http.StatusFound || err != nil || u.Query().Get("error") != want || u.Query().Get("code") != "" {
		t.Errorf("%s: %d %q, want a redirect with error=%s", what, st, loc, want)
	}
}

func asAttacks(t *testing.T, r *asRig, c *oauthClient, alice *browser) {
	v, ch := pkce()
	alice.stopAt = c.redirect
	// Redirect URIs: another, one with an extra query, one of another client.
	other := r.register(callbackServer(t))
	for name, redirect := range map[string]string{"another": "https://evil.example/cb", "extra query": c.redirect + "?x=1",
		"another client's": other.redirect} {
		bad := *c
		bad.redirect = redirect
		st, loc, _ := alice.visit(bad.authorizeURL("a", ch, "s", nil))
		noRedirect(t, "redirect URI "+name, st, loc)
	}
	// PKCE: none, plain.
	st, loc, _ := alice.visit(c.authorizeURL("a", "", "s", nil))
	errorRedirect(t, "no PKCE", st, loc, "invalid_request")
	st, loc, _ = alice.visit(c.authorizeURL("a", ch, "s", url.Values{"code_challenge_method": {"plain"}}))
	errorRedirect(t, "PKCE plain", st, loc, "invalid_request")
	// Resources: another server's, an unknown vhost, none.
	for name, res := range map[string][]string{"foreign": {"https://other.example/servers/a/mcp"}, "unknown vhost": {r.resource("zz")},
		"none": nil, "two": {r.resource("a"), r.resource("b")}} {
		st, loc, _ := alice.visit(c.authorizeURL("a", ch, "s", url.Values{"resource": res}))
		errorRedirect(t, "resource "+name, st, loc, "invalid_target")
	}
	// Verifier: missing, wrong; the code is then spent.
	code := c.code(alice, "a", ch, nil)
	if st, out := c.exchange(code, ""); st != http.StatusBadRequest || out["access_token"] != nil {
		t.Errorf("no verifier: %d %v", st, out)
	}
	code = c.code(alice, "a", ch, nil)
	if st, out := c.exchange(code, v+"x"); st != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Errorf("wrong verifier: %d %v", st, out)
	}
	if st, _ := c.exchange(code, v); st != http.StatusBadRequest {
		t.Errorf("a code after a wrong verifier: %d", st)
	}
	// Another client's code.
	code = c.code(alice, "a", ch, nil)
	thief := *other
	thief.redirect = c.redirect
	if st, out := thief.exchange(code, v); st != http.StatusBadRequest || out["access_token"] != nil {
		t.Errorf("another client's code: %d %v", st, out)
	}
	// Replay: the second redemption fails and revokes the first's grant.
	code = c.code(alice, "a", ch, nil)
	_, tok := c.exchange(code, v)
	if st, out := c.exchange(code, v); st != http.StatusBadRequest || out["access_token"] != nil {
		t.Errorf("replayed code: %d %v", st, out)
	}
	if st, _ := c.refresh(tok["refresh_token"].(string)); st != http.StatusBadRequest {
		t.Errorf("the replayed code's grant survived: %d", st)
	}
	asConsentAndStateAttacks(t, r, c)
	asDocumentAndFlood(t, r)
}

// Consent skipped by crafted requests, state mismatch at the upstream
// callback.
func asConsentAndStateAttacks(t *testing.T, r *asRig, c *oauthClient) {
	_, ch := pkce()
	carol := r.browser("carol")
	carol.consent, carol.stopAt = false, c.redirect
	st, _, body := carol.visit(c.authorizeURL("b", ch, "s", nil))
	id, csrf := formIDRE.FindStringSubmatch(body), formCSRFRE.FindStringSubmatch(body)
	if st != http.StatusOK || id == nil || csrf == nil || !strings.Contains(body, "Go test client") || !strings.Contains(body, "<strong>b</strong>") {
		t.Fatalf("consent page: %d %s", st, body)
	}
	mallory := r.browser("mallory")
	mallory.stopAt = c.redirect
	for name, b := range map[string]*browser{"another browser": mallory, "the same browser, a forged token": carol} {
		token := csrf[1]
		if b == carol {
			token = "forged"
		}
		resp, err := b.hc.PostForm(r.lb+"/oauth2/consent", url.Values{"id": {id[1]}, "csrf": {token}, "approve": {"yes"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
			t.Errorf("consent from %s: %d %q", name, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	for _, p := range []string{"/oauth2/authorize/callback?id=", "/callback?id="} {
		if st, loc, _ := mallory.visit(r.lb + p + id[1]); st == http.StatusFound || loc != "" {
			t.Errorf("the library's callback %s answers: %d %q", p, st, loc)
		}
	}
	// The upstream callback: a forged state, and a real one in another
	// browser.
	if st, _, _ := mallory.visit(r.lb + "/oauth2/callback?code=x&state=forged"); st != http.StatusBadRequest {
		t.Errorf("forged state: %d", st)
	}
	dave := r.browser("dave")
	dave.stopAt = r.idp.Public
	_, toIdP, _ := dave.visit(c.authorizeURL("b", ch, "s", nil))
	u, err := url.Parse(toIdP)
	if err != nil || u.Query().Get("state") == "" {
		t.Fatalf("no upstream redirect: %q", toIdP)
	}
	if st, _, body := mallory.visit(r.lb + "/oauth2/callback?code=x&state=" + url.QueryEscape(u.Query().Get("state"))); st != http.StatusBadRequest ||
		!strings.Contains(body, "another browser") {
		t.Errorf("state in another browser: %d %s", st, body)
	}
}

// A client ID metadata document at a loopback or private address is
// refused before any connection; registrations from one address are
// bounded.
func asDocumentAndFlood(t *testing.T, r *asRig) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int32
	go func() {
		for {
			cn, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			cn.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	_, ch := pkce()
	b := r.browser("alice")
	for _, id := range []string{"https://" + ln.Addr().String() + "/client.json", "https://localhost:" + strings.Split(ln.Addr().String(), ":")[1] + "/c"} {
		doc := &oauthClient{r: r, id: id, redirect: "http://127.0.0.1:1/cb"}
		st, loc, body := b.visit(doc.authorizeURL("a", ch, "s", nil))
		noRedirect(t, "document at "+id, st, loc)
		_ = body
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the gateway connected to a loopback metadata document %d times", n)
	}
	// The flood: at most 20 an hour from one address (the balancer's).
	refused := 0
	for i := range 30 {
		st, body := r.postJSON("/oauth2/register", map[string]any{"redirect_uris": []string{"http://127.0.0.1:9/cb"}, "token_endpoint_auth_method": "none"})
		if st == http.StatusTooManyRequests {
			refused++
			if !strings.Contains(body, "registrations an hour") {
				t.Errorf("flood refusal: %s", body)
			}
		} else if st != http.StatusCreated {
			t.Fatalf("registration %d: %d %s", i, st, body)
		}
	}
	if refused < 10 {
		t.Errorf("%d of 30 registrations refused, want at least 10", refused)
	}
	// Malformed registrations.
	for name, reg := range map[string]map[string]any{
		"no redirect": {"client_name": "x"},
		"fragment":    {"redirect_uris": []string{"https://a.example/cb#x"}},
		"javascript":  {"redirect_uris": []string{"javascript:alert(1)"}},
		"http remote": {"redirect_uris": []string{"http://a.example/cb"}},
		"eleven":      {"redirect_uris": strings.Split(strings.Repeat("https://a.example/cb,", 11), ",")[:11]},
		"implicit":    {"redirect_uris": []string{"https://a.example/cb"}, "response_types": []string{"token"}},
		"private_key": {"redirect_uris": []string{"https://a.example/cb"}, "token_endpoint_auth_method": "private_key_jwt"},
	} {
		if st, body := r.postJSON("/oauth2/register", reg); st != http.StatusBadRequest && st != http.StatusTooManyRequests {
			t.Errorf("registration %s: %d %s", name, st, body)
		}
	}
}

// asNoSecrets: no token, code, verifier or secret in either instance's
// log or in the store.
func asNoSecrets(t *testing.T, r *asRig, secrets []string) {
	haystacks := map[string]string{"instance a log": r.a.Output(), "instance b log": r.b.Output(), "redis": dumpRedis(t, redisSrv)}
	for name, h := range haystacks {
		for _, s := range secrets {
			if s != "" && strings.Contains(h, s) {
				t.Errorf("%s holds a secret (%.12s…)", name, s)
			}
		}
	}
}
