package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/hydra"
)

// The gateway as the authorization server MCP clients sign in at (issue
// 41): Ory Hydra as the upstream identity provider (no dynamic
// registration, no RFC 8707), two gateway processes on one Redis behind
// a round-robin balancer whose URL is public_url, so each step of a flow
// lands on the other instance, and a scripted browser (a cookie jar
// following redirects) that signs in at Hydra and answers the gateway's
// consent page.

const (
	asKeyB64      = "YXV0aG9yaXphdGlvbi1zZXJ2ZXItZTJlLWtleS0zMmI=" // 32 bytes
	asLoginSecret = "e2e-as-login-secret-789"
)

type asRig struct {
	t    *testing.T
	idp  *hydra.Server
	a, b *testsupport.GatewayProcess
	rr   *testsupport.RoundRobin
	lb   string // public_url
}

// startAuthServer runs the rig: vhosts a, b and c over one backend;
// on vhost a, group ops sees everything with scope admin (step-up),
// everyone else echo and get_stats. Clients are told to ask for scope
// read first.
func startAuthServer(t *testing.T, tokenTTL string) *asRig {
	t.Helper()
	r := &asRig{t: t, idp: hydra.Start(t, hydra.Options{})}
	r.rr = testsupport.StartRoundRobin(t)
	r.lb = r.rr.URL
	r.idp.CreateClient(t, hydra.Client{ID: "mcpgw-login", Secret: asLoginSecret, RedirectURIs: []string{r.lb + "/oauth2/callback"},
		Scopes: []string{"openid"}})
	backend := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "one"})
	cfg := fmt.Sprintf(`session_ttl: 10m
allowed_hosts: [127.0.0.1, localhost]
public_url: %s
user_tokens: {key_env: E2E_AS_KEY}
auth:
  mode: jwt
  jwt: {issuer: %q, audience: mcpgw}
  login: {client_id: mcpgw-login, client_secret_env: E2E_AS_LOGIN_SECRET}
  resource_metadata: {scopes_supported: [read]}
  authorization_server:
    enabled: true
    access_token_ttl: %s
    claims: [groups]
virtual_hosts:
  a:
    backends: {one: {url: %q}}
    access:
      - {when: "'ops' in claims.groups", allow: ["*"], scopes: [admin]}
      - {allow: [echo, get_stats]}
  b:
    backends: {one: {url: %q}}
  c:
    backends: {one: {url: %q}}
`, r.lb, r.idp.Issuer, tokenTTL, backend.URL, backend.URL, backend.URL)
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	env := []string{"E2E_AS_KEY=" + asKeyB64, "E2E_AS_LOGIN_SECRET=" + asLoginSecret}
	args := []string{"--config", path, "--redis-url", redisSrv.URL(), "--log-level", "debug"}
	r.a = testsupport.StartGateway(t, bin, args, env)
	r.b = testsupport.StartGateway(t, bin, args, env)
	r.rr.SetTargets(r.a.URL, r.b.URL)
	return r
}

// resource is vhost's canonical URL.
func (r *asRig) resource(vhost string) string { return r.lb + "/servers/" + vhost + "/mcp" }

// browser is a person signed in at Hydra as sub, in groups.
type browser struct {
	t  *testing.T
	hc *http.Client
	// stopAt: a redirect to a URL with this prefix is not followed (the
	// client's redirect URI).
	stopAt string
	// consent, when false, leaves the consent page unanswered.
	consent bool
}

func (r *asRig) browser(sub string, groups ...string) *browser {
	jar, _ := cookiejar.New(nil)
	r.idp.SetSubject(jar, sub)
	if len(groups) > 0 {
		r.idp.SetGroups(jar, groups...)
	}
	b := &browser{t: r.t, consent: true}
	b.hc = &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 20 {
			return errors.New("too many redirects")
		}
		if b.stopAt != "" && strings.HasPrefix(req.URL.String(), b.stopAt) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	return b
}

var (
	formIDRE   = regexp.MustCompile(`name="id" value="([^"]+)"`)
	formCSRFRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	formActRE  = regexp.MustCompile(`<form method="post" action="([^"]+)"`)
)

// visit opens u as a person would: follows redirects, answers the
// consent page (Allow) when asked, and stops at stopAt. It returns the
// last answer: the redirect to stopAt (its Location), or a page.
func (b *browser) visit(u string) (status int, location, body string) {
	b.t.Helper()
	resp, err := b.hc.Get(u)
	if err != nil {
		b.t.Fatalf("browser: GET %s: %v", u, err)
	}
	for range 3 {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(data)
		m := formCSRFRE.FindStringSubmatch(body)
		if resp.StatusCode != http.StatusOK || m == nil || !b.consent {
			return resp.StatusCode, resp.Header.Get("Location"), body
		}
		id, act := formIDRE.FindStringSubmatch(body), formActRE.FindStringSubmatch(body)
		resp, err = b.hc.PostForm(act[1], url.Values{"id": {id[1]}, "csrf": {m[1]}, "approve": {"yes"}})
		if err != nil {
			b.t.Fatalf("browser: consent: %v", err)
		}
	}
	return resp.StatusCode, resp.Header.Get("Location"), body
}

// oauthClient is a client driven from Go, for the flows' edge cases.
type oauthClient struct {
	r        *asRig
	id       string
	redirect string
}

// register registers a client (RFC 7591) and fails the test unless it
// is accepted.
func (r *asRig) register(redirects ...string) *oauthClient {
	r.t.Helper()
	st, body := r.postJSON("/oauth2/register", map[string]any{"redirect_uris": redirects, "client_name": "Go test client",
		"token_endpoint_auth_method": "none"})
	var out struct {
		ClientID string `json:"client_id"`
	}
	if st != http.StatusCreated || json.Unmarshal([]byte(body), &out) != nil || out.ClientID == "" {
		r.t.Fatalf("register: %d %s", st, body)
	}
	return &oauthClient{r: r, id: out.ClientID, redirect: redirects[0]}
}

func (r *asRig) postJSON(path string, v any) (int, string) {
	r.t.Helper()
	b, _ := json.Marshal(v)
	resp, err := http.Post(r.lb+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func (r *asRig) postForm(path string, form url.Values) (int, map[string]any) {
	r.t.Helper()
	resp, err := http.PostForm(r.lb+path, form)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(data, &out)
	if out == nil {
		out = map[string]any{"body": string(data)}
	}
	return resp.StatusCode, out
}

func pkce() (verifier, challenge string) {
	verifier = oauth2.GenerateVerifier()
	return verifier, oauth2.S256ChallengeFromVerifier(verifier)
}

// authorizeURL is the authorization request of c for vhost.
func (c *oauthClient) authorizeURL(vhost, challenge, state string, extra url.Values) string {
	q := url.Values{"response_type": {"code"}, "client_id": {c.id}, "redirect_uri": {c.redirect},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {state}, "resource": {c.r.resource(vhost)}}
	for k, v := range extra {
		q[k] = v
	}
	return c.r.lb + "/oauth2/authorize?" + q.Encode()
}

// code runs the authorization request in b and returns the code the
// redirect carries (failing unless there is one, with state).
func (c *oauthClient) code(b *browser, vhost, challenge string, extra url.Values) string {
	c.r.t.Helper()
	b.stopAt = c.redirect
	st, loc, body := b.visit(c.authorizeURL(vhost, challenge, "st-123", extra))
	u, err := url.Parse(loc)
	if st != http.StatusFound || err != nil || u.Query().Get("code") == "" || u.Query().Get("state") != "st-123" {
		c.r.t.Fatalf("authorize: %d %q %.300s", st, loc, body)
	}
	return u.Query().Get("code")
}

// exchange redeems a code.
func (c *oauthClient) exchange(code, verifier string) (int, map[string]any) {
	return c.r.postForm("/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"redirect_uri": {c.redirect}, "client_id": {c.id}})
}

func (c *oauthClient) refresh(rt string) (int, map[string]any) {
	return c.r.postForm("/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {c.id}})
}

// callbackServer is a client's redirect URI that answers 200.
func callbackServer(t *testing.T) string {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	t.Cleanup(s.Close)
	return s.URL + "/callback"
}

// mcpStatus calls tools/list on vhost with token (2026-07-28, no
// session) and returns the status.
func (r *asRig) call(token, vhost, tool string) *testsupport.Reply {
	cl := &testsupport.Client{T: r.t, Token: token, VHost: vhost}
	if tool == "" {
		return cl.ModernRequest(testsupport.BaseURL(r.lb), "tools/list", nil, nil)
	}
	return cl.ModernRequest(testsupport.BaseURL(r.lb), "tools/call", map[string]any{"name": tool, "arguments": map[string]any{}}, nil)
}
