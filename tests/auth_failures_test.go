package tests

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/hydra"
)

// Every 401 says why, end to end (issue 39): tokens from two real Ory
// Hydras, gateway processes configured as a newcomer gets it wrong (an
// audience the provider does not issue, the issuer without its trailing
// slash, the JWK Set of another provider), and tokens made bad from real
// ones (an altered signature, an algorithm swapped in the header, one
// that expires). Each refusal is asserted where an operator and a client
// look: the gateway's log line at info (auth_reason, auth_detail), its
// audit record's reason, and the WWW-Authenticate challenge, which keeps
// naming the vhost's metadata. No token reaches the log or the audit.

// authFailureGateway starts a gateway with authYAML as its auth section,
// logging JSON and writing the audit trail to stdout.
func authFailureGateway(t *testing.T, bin, backendURL, authYAML string) *testsupport.GatewayProcess {
	t.Helper()
	cfg := fmt.Sprintf("session_ttl: 10m\nallowed_hosts: [127.0.0.1, localhost]\naudit:\n  output: stdout\n%svirtual_hosts:\n  demo:\n    backends:\n      gateway-one:\n        url: %s\n",
		authYAML, backendURL)
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return testsupport.StartGateway(t, bin, []string{"--config", path, "--redis-url", redisSrv.URL(), "--log-format", "json"}, nil)
}

// alteredSignature flips one byte of a real token's signature.
func alteredSignature(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) == 0 {
		t.Fatalf("signature of a Hydra token: %v", err)
	}
	sig[len(sig)/2] ^= 0x01
	return parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// swappedAlgorithm is a real token whose header claims HS256 (the
// algorithm-confusion attempt): its payload and signature unchanged.
func swappedAlgorithm(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	h := map[string]any{"alg": "HS256", "typ": "JWT", "kid": jwtKid(t, tok)}
	b, _ := json.Marshal(h)
	return base64.RawURLEncoding.EncodeToString(b) + "." + parts[1] + "." + parts[2]
}

// expiry reads a token's exp.
func expiry(t *testing.T, tok string) time.Time {
	t.Helper()
	c := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(tok, c); err != nil {
		t.Fatal(err)
	}
	exp, err := c.GetExpirationTime()
	if err != nil || exp == nil {
		t.Fatalf("token without exp: %v", err)
	}
	return exp.Time
}

// checkAuthFailure sends tools/list with token to g and asserts the 401
// says class everywhere: the challenge, the log line (its detail holding
// every one of details) and the audit record.
func checkAuthFailure(t *testing.T, g *testsupport.GatewayProcess, token, class string, details ...string) {
	t.Helper()
	r := idpRequest(t, g, token, "")
	checkRefusal(t, r, class)
	ch := r.Header.Get("WWW-Authenticate")
	if class == "no_token" {
		if strings.Contains(ch, "error=") {
			t.Errorf("%s: challenge %q has an error code (RFC 6750 §3.1: none without credentials)", class, ch)
		}
	} else if !strings.Contains(ch, `error="invalid_token", error_description="`+class+`: `) {
		t.Errorf("%s: challenge %q", class, ch)
	}
	var line, record map[string]any
	testsupport.Eventually(t, 5*time.Second, func() bool { // both are written once the answer is out
		line, record = nil, nil
		for _, l := range logLines(t, g.Output()) {
			switch {
			case l["msg"] == "request" && l["auth_reason"] == class:
				line = l
			case l["outcome"] == "unauthenticated" && l["reason"] == class:
				record = l
			}
		}
		return line != nil && record != nil
	})
	if line == nil || record == nil {
		t.Fatalf("%s: log line %v, audit record %v:\n%s", class, line, record, g.Output())
	}
	if line["level"] != "INFO" || line["status"] != float64(http.StatusUnauthorized) {
		t.Errorf("%s: log line %v", class, line)
	}
	detail, _ := line["auth_detail"].(string)
	for _, d := range details {
		if !strings.Contains(detail, d) {
			t.Errorf("%s: auth_detail %q lacks %q", class, detail, d)
		}
	}
	if token != "" && strings.Contains(g.Output(), token) {
		t.Errorf("%s: the gateway's output holds the token", class)
	}
}

func TestAuthFailures_EachReasonFromRealTokens(t *testing.T) {
	// Hydra A issues the tokens; Hydra B's keys are "another key set",
	// and its tokens live 8 s, to expire during the test.
	a := hydra.Start(t, hydra.Options{})
	b := hydra.Start(t, hydra.Options{AccessTokenTTL: 8 * time.Second})
	// Hydra makes its signing keys on the first ask: once here, not
	// once per gateway asking at the same time.
	for _, h := range []*hydra.Server{a, b} {
		res, err := http.Get(h.Public + "/.well-known/jwks.json")
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("%s JWK Set: %v", h.Issuer, err)
		}
		res.Body.Close()
	}
	backend := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "gateway-one"})
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	start := func(auth string) *testsupport.GatewayProcess {
		return authFailureGateway(t, bin, backend.URL, auth)
	}
	both := start(fmt.Sprintf("auth:\n  mode: jwt\n  issuers:\n    - {issuer: %q, audience: mcpgw}\n    - {issuer: %q, audience: mcpgw, leeway: 0s}\n", a.Issuer, b.Issuer))
	otherAudience := start(fmt.Sprintf("auth:\n  mode: jwt\n  jwt: {issuer: %q, audience: other-api}\n", a.Issuer))
	noSlash := strings.TrimSuffix(a.Issuer, "/")
	slashless := start(fmt.Sprintf("auth:\n  mode: jwt\n  jwt: {issuer: %q, audience: mcpgw}\n", noSlash))
	jwksB := b.Public + "/.well-known/jwks.json"
	otherKeys := start(fmt.Sprintf("auth:\n  mode: jwt\n  jwt: {issuer: %q, audience: mcpgw, jwks_url: %q}\n", a.Issuer, jwksB))

	accepted := func(tok string) *testsupport.Reply { // sessionless: 2026-07-28
		return (&testsupport.Client{T: t, Token: tok}).ModernRequest(both, "tools/list", nil, nil)
	}
	tokA := a.AccessToken(t, "alice", "mcpgw")
	if r := accepted(tokA); r.Status != http.StatusOK {
		t.Fatalf("Hydra's token refused: %d %s %s", r.Status, r.Header.Get("WWW-Authenticate"), r.Body)
	}
	tokB := b.AccessToken(t, "bob", "mcpgw")
	if r := accepted(tokB); r.Status != http.StatusOK {
		t.Fatalf("the short-lived token refused before its exp: %d %s", r.Status, r.Header.Get("WWW-Authenticate"))
	}

	checkAuthFailure(t, both, "", "no_token", "no Authorization header")
	checkAuthFailure(t, both, "not-a-jwt", "malformed", "not a JWT")
	checkAuthFailure(t, both, alteredSignature(t, tokA), "bad_signature", "does not verify", jwtKid(t, tokA), a.Issuer)
	checkAuthFailure(t, both, swappedAlgorithm(t, tokA), "algorithm", `alg "HS256" is not accepted`, a.Issuer)
	checkAuthFailure(t, otherAudience, tokA, "audience", `token aud ["mcpgw"]`, `accepted audiences ["other-api"]`)
	checkAuthFailure(t, slashless, tokA, "issuer",
		fmt.Sprintf("token iss %q", a.Issuer), fmt.Sprintf("want [%q]", noSlash), "differ only by a trailing slash")
	checkAuthFailure(t, otherKeys, tokA, "unknown_kid", fmt.Sprintf("token kid %q", jwtKid(t, tokA)), a.Issuer, jwksB)

	// Expired: the token's own exp is the moment to wait for (leeway 0s).
	exp := expiry(t, tokB)
	<-time.After(time.Until(exp))
	checkAuthFailure(t, both, tokB, "expired", "expired at "+exp.UTC().Format(time.RFC3339), "leeway 0s")
}
