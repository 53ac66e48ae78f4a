package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgw/gateway/internal/config"
)

const (
	issuer   = "mcpgateway"
	audience = "mcpgateway-api"
	realm    = "mcpgw"

	bareChallenge = `Bearer realm="mcpgw"`
)

type testKeys struct {
	hmac   []byte
	rsa    *rsa.PrivateKey
	rsa2   *rsa.PrivateKey // not configured anywhere
	ec     *ecdsa.PrivateKey
	ec384  *ecdsa.PrivateKey
	ed     ed25519.PrivateKey
	rsaPEM []byte // the configured RSA public key, PEM encoded
}

func newKeys(t *testing.T) *testKeys {
	t.Helper()
	k := &testKeys{hmac: []byte("0123456789abcdef0123456789abcdef-hmac-secret")}
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.rsa2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	if k.ec384, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	if _, k.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	k.rsaPEM = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	return k
}

func settings(hmac []byte, pub crypto.PublicKey, algs ...string) config.Auth {
	return config.Auth{Mode: config.ModeJWT, JWT: &config.JWTSettings{
		Issuer: issuer, Audience: audience, HMACSecret: hmac, PublicKey: pub,
		Algorithms: algs, Leeway: 30 * time.Second,
	}}
}

func mustVerifier(t *testing.T, a config.Auth) Verifier {
	t.Helper()
	v, err := New(a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// claims are valid for issuer/audience, subject "alice", for 5 minutes.
func claims() jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss": issuer, "aud": audience, "sub": "alice",
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
	}
}

func with(c jwt.MapClaims, kv ...any) jwt.MapClaims {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(c, kv[i].(string))
		} else {
			c[kv[i].(string)] = kv[i+1]
		}
	}
	return c
}

func sign(t *testing.T, m jwt.SigningMethod, key any, c jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(m, c).SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", m.Alg(), err)
	}
	return s
}

// serve runs one request through Middleware and reports the response and
// the principal the next handler saw ("" if it was not called).
func serve(t *testing.T, v Verifier, authz ...string) (*httptest.ResponseRecorder, Principal) {
	t.Helper()
	var got Principal
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := FromContext(r.Context())
		if !ok {
			t.Error("next handler called without a principal")
		}
		if r.Header.Get("Authorization") != "" {
			t.Error("Authorization header reached the next handler")
		}
		got = p
		w.WriteHeader(http.StatusNoContent)
	})
	req := httptest.NewRequest(http.MethodPost, "/servers/demo/mcp", strings.NewReader(`{}`))
	for _, a := range authz {
		req.Header.Add("Authorization", a)
	}
	rec := httptest.NewRecorder()
	Middleware(v, realm, nil)(next).ServeHTTP(rec, req)
	return rec, got
}

func TestAuth_AcceptsValidTokenPerAlgorithmFamily(t *testing.T) {
	k := newKeys(t)
	vRSA := mustVerifier(t, settings(k.hmac, &k.rsa.PublicKey))
	vEC := mustVerifier(t, settings(nil, &k.ec.PublicKey))
	vEd := mustVerifier(t, settings(nil, k.ed.Public()))
	cases := map[string]struct {
		v     Verifier
		m     jwt.SigningMethod
		key   any
		sub   string
		extra []any
	}{
		"HS256":           {vRSA, jwt.SigningMethodHS256, k.hmac, "alice", nil},
		"HS384":           {vRSA, jwt.SigningMethodHS384, k.hmac, "bob", nil},
		"HS512":           {vRSA, jwt.SigningMethodHS512, k.hmac, "carol", nil},
		"RS256":           {vRSA, jwt.SigningMethodRS256, k.rsa, "dave", nil},
		"RS512":           {vRSA, jwt.SigningMethodRS512, k.rsa, "erin", nil},
		"PS256":           {vRSA, jwt.SigningMethodPS256, k.rsa, "frank", nil},
		"ES256":           {vEC, jwt.SigningMethodES256, k.ec, "grace", nil},
		"EdDSA":           {vEd, jwt.SigningMethodEdDSA, k.ed, "heidi", nil},
		"aud list":        {vRSA, jwt.SigningMethodRS256, k.rsa, "ivan", []any{"aud", []string{"other", audience}}},
		"no nbf or iat":   {vRSA, jwt.SigningMethodRS256, k.rsa, "judy", []any{"nbf", nil, "iat", nil}},
		"exp in leeway":   {vRSA, jwt.SigningMethodRS256, k.rsa, "mallory", []any{"exp", time.Now().Add(-10 * time.Second).Unix()}},
		"nbf in leeway":   {vRSA, jwt.SigningMethodRS256, k.rsa, "niaj", []any{"nbf", time.Now().Add(10 * time.Second).Unix()}},
		"unicode sub":     {vRSA, jwt.SigningMethodHS256, k.hmac, "user|Zoë@example", nil},
		"lower scheme":    {vRSA, jwt.SigningMethodHS256, k.hmac, "olivia", nil},
		"upper scheme":    {vRSA, jwt.SigningMethodHS256, k.hmac, "peggy", nil},
		"extra claims ok": {vRSA, jwt.SigningMethodHS256, k.hmac, "rupert", []any{"scope", "mcp"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			tok := sign(t, c.m, c.key, with(claims(), append([]any{"sub", c.sub}, c.extra...)...))
			scheme := "Bearer "
			switch name {
			case "lower scheme":
				scheme = "bearer "
			case "upper scheme":
				scheme = "BEARER  "
			}
			rec, p := serve(t, c.v, scheme+tok)
			if rec.Code != http.StatusNoContent || p != Principal(c.sub) {
				t.Fatalf("status %d principal %q, want 204 %q; body %s", rec.Code, p, c.sub, rec.Body)
			}
		})
	}
}

func TestAuth_RejectsBadTokensWith401(t *testing.T) {
	k := newKeys(t)
	vRSA := mustVerifier(t, settings(k.hmac, &k.rsa.PublicKey))
	vRSAOnly := mustVerifier(t, settings(nil, &k.rsa.PublicKey))
	vEC := mustVerifier(t, settings(nil, &k.ec.PublicKey))
	vRS256 := mustVerifier(t, settings(k.hmac, &k.rsa.PublicKey, "RS256"))
	now := time.Now()

	noneTok := sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims())
	good := sign(t, jwt.SigningMethodRS256, k.rsa, claims())
	parts := strings.Split(good, ".")
	evil := sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), "sub", "root"))
	tampered := parts[0] + "." + strings.Split(evil, ".")[1] + "." + parts[2]

	cases := map[string]struct {
		v     Verifier
		authz []string
		class string // the class of FailureOf: the challenge's error_description
	}{
		"missing header":                         {vRSA, nil, ClassNoToken},
		"basic scheme":                           {vRSA, []string{"Basic YWxpY2U6cGFzcw=="}, ClassNoToken},
		"empty header":                           {vRSA, []string{""}, ClassNoToken},
		"bearer without token":                   {vRSA, []string{"Bearer"}, ClassMalformed},
		"bearer blank token":                     {vRSA, []string{"Bearer    "}, ClassMalformed},
		"token with space":                       {vRSA, []string{"Bearer " + good + " extra"}, ClassMalformed},
		"two headers":                            {vRSA, []string{"Bearer " + good, "Bearer " + good}, ClassMalformed},
		"not a jwt":                              {vRSA, []string{"Bearer not-a-jwt"}, ClassMalformed},
		"garbage segments":                       {vRSA, []string{"Bearer a.b.c"}, ClassMalformed},
		"expired":                                {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), "exp", now.Add(-2*time.Minute).Unix()))}, ClassExpired},
		"not yet valid":                          {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), "nbf", now.Add(2*time.Minute).Unix()))}, ClassNotYetValid},
		"issued in future":                       {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), "iat", now.Add(2*time.Minute).Unix()))}, ClassNotYetValid},
		"wrong issuer":                           {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), "iss", "evil"))}, ClassIssuer},
		"missing issuer":                         {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), "iss", nil))}, ClassIssuer},
		"wrong audience":                         {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), "aud", "other-api"))}, ClassAudience},
		"missing audience":                       {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), "aud", nil))}, ClassAudience},
		"missing sub":                            {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), "sub", nil))}, ClassClaims},
		"empty sub":                              {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), "sub", ""))}, ClassClaims},
		"control char sub":                       {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), "sub", "a\nb"))}, ClassClaims},
		"missing exp":                            {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), "exp", nil))}, ClassClaims},
		"alg none":                               {vRSA, []string{"Bearer " + noneTok}, ClassAlgorithm},
		"alg none no hmac":                       {vRSAOnly, []string{"Bearer " + noneTok}, ClassAlgorithm},
		"HS256 with RSA PEM":                     {vRSAOnly, []string{"Bearer " + sign(t, jwt.SigningMethodHS256, k.rsaPEM, claims())}, ClassAlgorithm},
		"HS256 with RSA PEM and hmac configured": {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodHS256, k.rsaPEM, claims())}, ClassBadSignature},
		"HS256 with RSA DER":                     {vRSAOnly, []string{"Bearer " + sign(t, jwt.SigningMethodHS256, x509.MarshalPKCS1PublicKey(&k.rsa.PublicKey), claims())}, ClassAlgorithm},
		"wrong RSA signature":                    {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa2, claims())}, ClassBadSignature},
		"wrong HMAC secret":                      {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodHS256, []byte("another-secret-another-secret-xx"), claims())}, ClassBadSignature},
		"tampered payload":                       {vRSA, []string{"Bearer " + tampered}, ClassBadSignature},
		"stripped signature":                     {vRSA, []string{"Bearer " + parts[0] + "." + parts[1] + "."}, ClassBadSignature},
		"ES256 vs RSA key":                       {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodES256, k.ec, claims())}, ClassAlgorithm},
		"RS256 vs EC key":                        {vEC, []string{"Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, claims())}, ClassAlgorithm},
		"ES384 vs P-256 key":                     {vEC, []string{"Bearer " + sign(t, jwt.SigningMethodES384, k.ec384, claims())}, ClassAlgorithm},
		"EdDSA vs RSA key":                       {vRSA, []string{"Bearer " + sign(t, jwt.SigningMethodEdDSA, k.ed, claims())}, ClassAlgorithm},
		"HS256 not allowed":                      {vRS256, []string{"Bearer " + sign(t, jwt.SigningMethodHS256, k.hmac, claims())}, ClassAlgorithm},
		"PS256 not allowed":                      {vRS256, []string{"Bearer " + sign(t, jwt.SigningMethodPS256, k.rsa, claims())}, ClassAlgorithm},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			rec, p := serve(t, c.v, c.authz...)
			if rec.Code != http.StatusUnauthorized || p != "" {
				t.Fatalf("status %d principal %q, want 401", rec.Code, p)
			}
			want := bareChallenge
			if c.class != ClassNoToken {
				want = `Bearer realm="mcpgw", error="invalid_token", error_description="` + c.class + ": " + describe[c.class] + `"`
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != want {
				t.Errorf("WWW-Authenticate %q, want %q", got, want)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var body struct {
				JSONRPC string           `json:"jsonrpc"`
				ID      *json.RawMessage `json:"id"`
				Error   struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			raw := rec.Body.String()
			if err := json.Unmarshal([]byte(raw), &body); err != nil {
				t.Fatalf("body %q: %v", raw, err)
			}
			if body.JSONRPC != "2.0" || body.ID != nil || !strings.Contains(raw, `"id":null`) ||
				body.Error.Code != CodeUnauthorized || body.Error.Message == "" {
				t.Errorf("body %s", raw)
			}
			// The presented credentials never come back.
			for _, a := range c.authz {
				_, tok, _ := strings.Cut(a, " ")
				tok = strings.TrimSpace(tok)
				if len(tok) < 4 {
					continue
				}
				for _, part := range append([]string{tok}, strings.Split(tok, ".")...) {
					if len(part) < 4 {
						continue
					}
					if strings.Contains(raw, part) {
						t.Errorf("body leaks the token: %s", raw)
					}
					for h, vs := range rec.Header() {
						if strings.Contains(strings.Join(vs, " "), part) {
							t.Errorf("header %s leaks the token", h)
						}
					}
				}
			}
		})
	}
}

func TestAuth_VerifyErrorsClassifyAndHideToken(t *testing.T) {
	k := newKeys(t)
	v := mustVerifier(t, settings(k.hmac, &k.rsa.PublicKey))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	if _, err := v.Verify(req); !errors.Is(err, ErrNoToken) {
		t.Errorf("no header: %v, want ErrNoToken", err)
	}
	tok := sign(t, jwt.SigningMethodRS256, k.rsa, with(claims(), "exp", time.Now().Add(-time.Hour).Unix()))
	req.Header.Set("Authorization", "Bearer "+tok)
	_, err := v.Verify(req)
	if !errors.Is(err, ErrInvalidToken) || !errors.Is(err, jwt.ErrTokenExpired) {
		t.Errorf("expired: %v, want ErrInvalidToken and jwt.ErrTokenExpired", err)
	}
	for _, part := range strings.Split(tok, ".") {
		if strings.Contains(err.Error(), part) {
			t.Errorf("error %q holds the token", err)
		}
	}
}

func TestAuth_ModeNoneIsAnonymous(t *testing.T) {
	v := mustVerifier(t, config.Auth{Mode: config.ModeNone})
	for _, authz := range [][]string{nil, {"Bearer whatever"}, {"Basic x"}} {
		rec, p := serve(t, v, authz...)
		if rec.Code != http.StatusNoContent || p != "anonymous" {
			t.Errorf("authz %q: status %d principal %q", authz, rec.Code, p)
		}
	}
}

func TestAuth_WorksWithParsedConfig(t *testing.T) {
	k := newKeys(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jwt.pem"), k.rsaPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPGW_TEST_AUTH_SECRET", string(k.hmac))
	y := `
auth:
  mode: jwt
  jwt:
    issuer: ` + issuer + `
    audience: ` + audience + `
    hs_secret_env: MCPGW_TEST_AUTH_SECRET
    public_key_file: jwt.pem
    algorithms: [RS256, HS256]
virtual_hosts: {demo: {backends: {one: {url: "http://127.0.0.1:1/mcp"}}}}
`
	cfg, err := config.Parse([]byte(y), filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	v := mustVerifier(t, cfg.Auth)
	for _, tok := range []string{
		sign(t, jwt.SigningMethodRS256, k.rsa, claims()),
		sign(t, jwt.SigningMethodHS256, k.hmac, claims()),
	} {
		if rec, p := serve(t, v, "Bearer "+tok); rec.Code != http.StatusNoContent || p != "alice" {
			t.Errorf("status %d principal %q", rec.Code, p)
		}
	}
	if rec, _ := serve(t, v, "Bearer "+sign(t, jwt.SigningMethodPS256, k.rsa, claims())); rec.Code != http.StatusUnauthorized {
		t.Errorf("PS256 outside the allow-list: status %d", rec.Code)
	}
}

func TestAuth_NewRejectsUnusableSettings(t *testing.T) {
	k := newKeys(t)
	cases := map[string]config.Auth{
		"unknown mode":  {Mode: "basic"},
		"empty mode":    {},
		"jwt without":   {Mode: config.ModeJWT},
		"no keys":       settings(nil, nil),
		"no issuer":     {Mode: config.ModeJWT, JWT: &config.JWTSettings{Audience: audience, HMACSecret: k.hmac}},
		"alg needs key": settings(k.hmac, nil, "RS256"),
		"alg none":      settings(k.hmac, nil, "none"),
		"bad curve alg": settings(nil, &k.ec.PublicKey, "ES384"),
	}
	for name, a := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := New(a); err == nil {
				t.Error("New succeeded")
			}
		})
	}
}

func TestAuth_ChallengeEscapesRealm(t *testing.T) {
	rec := httptest.NewRecorder()
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("next called") })
	Middleware(mustVerifier(t, settings(newKeys(t).hmac, nil)), `a "b"\`, nil)(next).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if got, want := rec.Header().Get("WWW-Authenticate"), `Bearer realm="a \"b\"\\"`; got != want {
		t.Errorf("WWW-Authenticate %q, want %q", got, want)
	}
}

func TestAuth_PrincipalContext(t *testing.T) {
	if _, ok := FromContext(context.Background()); ok {
		t.Error("empty context has a principal")
	}
	ctx := WithIdentity(context.Background(), Identity{Principal: "alice"})
	if p, ok := FromContext(ctx); !ok || p != "alice" {
		t.Errorf("FromContext = %q, %v", p, ok)
	}
}

// The key function is the second line of defence behind the algorithm
// allow-list: even with every algorithm allowed, a key is only handed out
// for its own family (no HS* token is ever checked against public key bytes).
func TestAuth_KeyFuncRefusesMismatchedKeyTypes(t *testing.T) {
	k := newKeys(t)
	all := []string{"HS256", "RS256", "PS256", "ES256", "ES384", "EdDSA", "none"}
	v := &jwtVerifier{parser: jwt.NewParser(jwt.WithValidMethods(all), jwt.WithExpirationRequired()), pub: &k.rsa.PublicKey,
		aud: audienceRule{list: []string{audience}}, audClaim: "aud"}
	cases := map[string]string{
		"HS256 signed with the RSA public key PEM": sign(t, jwt.SigningMethodHS256, k.rsaPEM, claims()),
		"alg none": sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims()),
		"ES256":    sign(t, jwt.SigningMethodES256, k.ec, claims()),
		"EdDSA":    sign(t, jwt.SigningMethodEdDSA, k.ed, claims()),
	}
	for name, tok := range cases {
		t.Run(name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			if p, err := v.Verify(req); err == nil || !errors.Is(err, ErrInvalidToken) {
				t.Errorf("Verify = %q, %v; want ErrInvalidToken", p, err)
			}
		})
	}
	// Sanity: the same verifier accepts a genuine RS256 token.
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Authorization", "Bearer "+sign(t, jwt.SigningMethodRS256, k.rsa, claims()))
	if p, err := v.Verify(req); err != nil || p != "alice" {
		t.Errorf("RS256: %q, %v", p, err)
	}
	// An EC key of another curve is refused for ES384.
	vEC := &jwtVerifier{parser: jwt.NewParser(jwt.WithValidMethods(all)), pub: &k.ec.PublicKey}
	if _, err := vEC.key(&jwt.Token{Method: jwt.SigningMethodES384}); err == nil {
		t.Error("P-256 key handed out for ES384")
	}
}

// The verified token stays in the context (for a backend's token
// exchange) while the header is dropped; mode none carries none.
func TestAuth_MiddlewareKeepsTheVerifiedTokenInTheContextOnly(t *testing.T) {
	k := newKeys(t)
	tok := sign(t, jwt.SigningMethodHS256, k.hmac, claims())
	for _, tc := range []struct {
		name string
		v    Verifier
		want string
	}{
		{"jwt", mustVerifier(t, settings(k.hmac, nil)), tok},
		{"none", mustVerifier(t, config.Auth{Mode: config.ModeNone}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			called := false
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				called = true
				got = TokenFromContext(r.Context())
				if r.Header.Get("Authorization") != "" {
					t.Error("Authorization header reached the next handler")
				}
			})
			req := httptest.NewRequest(http.MethodPost, "/servers/demo/mcp", strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer "+tok)
			Middleware(tc.v, realm, nil)(next).ServeHTTP(httptest.NewRecorder(), req)
			if !called || got != tc.want {
				t.Fatalf("called %v, token in context %q, want %q", called, got, tc.want)
			}
		})
	}
}

// The identity is one value: Middleware fills in the caller and keeps
// the resource named before it (the audience rule's input).
func TestAuth_MiddlewareCompletesTheIdentity(t *testing.T) {
	k := newKeys(t)
	tok := sign(t, jwt.SigningMethodHS256, k.hmac, claims())
	var got Identity
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = IdentityFrom(r.Context()) })
	req := httptest.NewRequest(http.MethodPost, "/servers/demo/mcp", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req = req.WithContext(WithResource(req.Context(), "https://gw/servers/demo/mcp"))
	Middleware(mustVerifier(t, settings(k.hmac, nil)), realm, nil)(next).ServeHTTP(httptest.NewRecorder(), req)
	if got.Resource != "https://gw/servers/demo/mcp" || got.Principal == "" || got.Claims == nil || got.Token != tok {
		t.Fatalf("identity = %+v", got)
	}
}
