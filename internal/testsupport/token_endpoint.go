package testsupport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// TokenEndpoint is an OAuth 2.0 token endpoint written for the tests: it
// implements the RFC 8693 token exchange (the subject token must be a JWT
// the gateway would accept, signed with SubjectKey) and the client
// credentials grant, authenticates its client with HTTP Basic, and issues
// HS256 JWTs signed with IssueKey whose sub is the subject's (or
// "client:<client_id>"), whose aud is the requested audience, and whose
// act names the client (RFC 8693 §4.1). A backend verifies them with
// Verifier. It counts every grant it issued, per subject, so tests assert
// how often the gateway asked.
type TokenEndpoint struct {
	URL          string
	ClientID     string
	ClientSecret string

	subjectKey, issueKey []byte
	srv                  *httptest.Server

	mu        sync.Mutex
	expiresIn int64          // seconds; 0 leaves expires_in out
	issued    map[string]int // subject (or client:<id>) -> tokens issued
	requests  int            // token requests received, answered or not
	forms     []url.Values   // every request's form, for assertions
	down      bool           // answer 503
	hold      chan struct{}  // non-nil: requests wait until it is closed
	revoked   map[string]int // subject -> tokens up to this count are refused
	changed   chan struct{}
}

// StartTokenEndpoint starts an endpoint for client id/secret that accepts
// subject tokens signed with subjectKey. It is closed when the test ends.
func StartTokenEndpoint(t testing.TB, clientID, clientSecret string, subjectKey []byte) *TokenEndpoint {
	t.Helper()
	e := &TokenEndpoint{ClientID: clientID, ClientSecret: clientSecret, subjectKey: subjectKey,
		issueKey: []byte("token-endpoint-issue-key-0123456789abcdef"), expiresIn: 3600,
		issued: map[string]int{}, revoked: map[string]int{}, changed: make(chan struct{})}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	e.URL = e.srv.URL + "/oauth/token"
	t.Cleanup(func() {
		e.Release()
		e.srv.Close()
	})
	return e
}

// SetExpiresIn sets the expires_in of the tokens issued from now on.
func (e *TokenEndpoint) SetExpiresIn(d time.Duration) {
	e.mu.Lock()
	e.expiresIn = int64(d / time.Second)
	e.mu.Unlock()
}

// SetDown makes the endpoint answer 503 (temporarily_unavailable).
func (e *TokenEndpoint) SetDown(down bool) {
	e.mu.Lock()
	e.down = down
	e.mu.Unlock()
}

// Hold makes token requests wait, once received, until Release.
func (e *TokenEndpoint) Hold() {
	e.mu.Lock()
	if e.hold == nil {
		e.hold = make(chan struct{})
	}
	e.mu.Unlock()
}

// Release lets held requests (and later ones) through.
func (e *TokenEndpoint) Release() {
	e.mu.Lock()
	if e.hold != nil {
		close(e.hold)
		e.hold = nil
	}
	e.mu.Unlock()
}

// Revoke revokes every token issued for subject so far: Verifier refuses
// them from now on, as a backend would after a revocation.
func (e *TokenEndpoint) Revoke(subject string) {
	e.mu.Lock()
	e.revoked[subject] = e.issued[subject]
	e.mu.Unlock()
}

// Issued is how many tokens were issued for subject ("client:<id>" for
// the client credentials grant).
func (e *TokenEndpoint) Issued(subject string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.issued[subject]
}

// Requests is how many token requests arrived (answered or not).
func (e *TokenEndpoint) Requests() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.requests
}

// Forms returns the forms of every token request so far.
func (e *TokenEndpoint) Forms() []url.Values {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]url.Values(nil), e.forms...)
}

// WaitRequests waits until Requests reaches n or timeout passes, waking
// on each request (no polling); it reports whether it did.
func (e *TokenEndpoint) WaitRequests(n int, timeout time.Duration) bool {
	return waitChanged(&e.mu, timeout, func() (bool, <-chan struct{}) { return e.requests >= n, e.changed })
}

func (e *TokenEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/oauth/token" {
		http.NotFound(w, r)
		return
	}
	err := r.ParseForm()
	e.mu.Lock()
	e.requests++
	e.forms = append(e.forms, r.PostForm)
	close(e.changed)
	e.changed = make(chan struct{})
	hold, down, expiresIn := e.hold, e.down, e.expiresIn
	e.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	switch id, secret, ok := r.BasicAuth(); {
	case err != nil:
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	case down:
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable")
		return
	case !ok || id != e.ClientID || secret != e.ClientSecret:
		w.Header().Set("WWW-Authenticate", `Basic realm="token"`)
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	var subject string
	switch r.PostForm.Get("grant_type") {
	case "urn:ietf:params:oauth:grant-type:token-exchange":
		switch r.PostForm.Get("subject_token_type") {
		case "urn:ietf:params:oauth:token-type:access_token", "urn:ietf:params:oauth:token-type:jwt":
		default:
			oauthError(w, http.StatusBadRequest, "invalid_request")
			return
		}
		claims := jwt.MapClaims{}
		_, err := jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired()).
			ParseWithClaims(r.PostForm.Get("subject_token"), claims, func(*jwt.Token) (any, error) { return e.subjectKey, nil })
		sub, _ := claims.GetSubject()
		if err != nil || sub == "" {
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		subject = sub
	case "client_credentials":
		subject = "client:" + id(r)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	e.mu.Lock()
	e.issued[subject]++
	n := e.issued[subject]
	e.mu.Unlock()
	now := time.Now()
	claims := jwt.MapClaims{"sub": subject, "aud": r.PostForm.Get("audience"), "scope": r.PostForm.Get("scope"),
		"iat": now.Unix(), "jti": fmt.Sprintf("%s#%d", subject, n), "act": map[string]any{"sub": e.ClientID}}
	if expiresIn > 0 {
		// A second beyond expires_in: the claim has whole seconds only,
		// and the token must stay good for as long as the answer says.
		claims["exp"] = now.Add(time.Duration(expiresIn+1) * time.Second).Unix()
	} else {
		claims["exp"] = now.Add(time.Hour).Unix()
	}
	tok, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(e.issueKey)
	res := map[string]any{"access_token": tok, "token_type": "Bearer",
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}
	if expiresIn > 0 {
		res["expires_in"] = expiresIn
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(res)
}

func id(r *http.Request) string {
	u, _, _ := r.BasicAuth()
	return u
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": "test endpoint refused: " + code})
}

// Verifier checks a bearer token the endpoint issued for audience, as a
// backend's go-sdk auth middleware does: the token's sub becomes the
// TokenInfo's UserID, its jti is in Extra["jti"]. Any other token (the
// gateway's own, another audience's, an expired one) is refused.
func (e *TokenEndpoint) Verifier(audience string) auth.TokenVerifier {
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		claims := jwt.MapClaims{}
		_, err := jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithAudience(audience), jwt.WithExpirationRequired()).
			ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return e.issueKey, nil })
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		sub, _ := claims.GetSubject()
		exp, _ := claims.GetExpirationTime()
		if sub == "" || exp == nil {
			return nil, errors.Join(auth.ErrInvalidToken, errors.New("no sub or exp"))
		}
		jti, _ := claims["jti"].(string)
		_, seq, _ := strings.Cut(jti, "#")
		e.mu.Lock()
		revoked := e.revoked[sub]
		e.mu.Unlock()
		if n, err := strconv.Atoi(seq); err != nil || n <= revoked {
			return nil, fmt.Errorf("%w: revoked", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: sub, Expiration: exp.Time, Scopes: strings.Fields(fmt.Sprint(claims["scope"])),
			Extra: map[string]any{"jti": jti}}, nil
	}
}
