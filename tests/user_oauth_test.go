package tests

import (
	"context"
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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/hydra"
)

// Per-user sign-in to a third-party backend (credentials.user_oauth), end
// to end: two Ory Hydras (the gateway's own issuer, where browsers and MCP
// clients sign in, and the third party, PKCE enforced, access tokens that
// live 3 s), a backend that accepts only the third party's tokens (the
// go-sdk's bearer middleware, introspecting at the third party), two
// gateway processes on one Redis behind a round-robin balancer whose URL
// is public_url, and a scripted browser (a cookie jar following
// redirects), so every step of a flow lands on the other instance.

const (
	uoKeyB64      = "c2VhbGluZy1rZXktZm9yLXRoZS1lMmUtdGVzdHMtMzI=" // 32 bytes
	uoLoginSecret = "e2e-login-secret-value-123"
	uoThirdSecret = "e2e-third-party-secret-456"
)

type uoRig struct {
	t           *testing.T
	idp, third  *hydra.Server
	a, b        *testsupport.GatewayProcess
	lb          testsupport.BaseURL
	backend     *tokenBackend
	aliceToken  string // alice's token at the gateway's issuer (her MCP client's)
	bobToken    string
	carolToken  string
	redirectURI string
	// redis is the rig's own store: a user's stored tokens are keyed by
	// vhost, backend and principal, which every rig shares, so a rig on
	// the package's Redis would find the last test's tokens for alice.
	redis *testsupport.RedisServer
}

// tokenBackend is an MCP server (stateless, both generations) behind the
// go-sdk's bearer middleware, its tokens introspected at the third
// party: whoami answers the third party's subject.
type tokenBackend struct {
	URL  string
	mu   sync.Mutex
	seen map[string]bool // every access token that reached it
}

func startTokenBackend(t *testing.T, third *hydra.Server) *tokenBackend {
	tb := &tokenBackend{seen: map[string]bool{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "third-party-mcp", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "the third party's user"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "third-party user " + req.Extra.TokenInfo.UserID}}}, nil, nil
	})
	verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		tb.mu.Lock()
		tb.seen[token] = true
		tb.mu.Unlock()
		info, err := introspect(ctx, third, token)
		if err != nil || !info.Active {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: info.Sub, Expiration: time.Unix(info.Exp, 0), Scopes: strings.Fields(info.Scope)}, nil
	}
	h := auth.RequireBearerToken(verify, nil)(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	tb.URL = s.URL + "/mcp"
	return tb
}

func (tb *tokenBackend) tokens() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var out []string
	for k := range tb.seen {
		out = append(out, k)
	}
	return out
}

type introspection struct {
	Active bool   `json:"active"`
	Sub    string `json:"sub"`
	Exp    int64  `json:"exp"`
	Scope  string `json:"scope"`
}

func introspect(ctx context.Context, h *hydra.Server, token string) (*introspection, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.Admin+"/admin/oauth2/introspect", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var in introspection
	return &in, json.NewDecoder(resp.Body).Decode(&in)
}

func startUserOAuth(t *testing.T) *uoRig { return startUserOAuthWith(t, "") }

// startUserOAuthWith is startUserOAuth with block (YAML indented for the
// vhost, such as a tool_search block) on the demo vhost.
func startUserOAuthWith(t *testing.T, block string) *uoRig {
	return startUserOAuthPlus(t, block, nil)
}

// startUserOAuthPlus is startUserOAuthWith with more vhosts: more returns
// their YAML (indented under virtual_hosts), given the rig's Hydras.
func startUserOAuthPlus(t *testing.T, block string, more func(*uoRig) string) *uoRig {
	t.Helper()
	r := &uoRig{t: t}
	rs, err := testsupport.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	r.redis = rs
	r.idp = hydra.Start(t, hydra.Options{})
	r.third = hydra.Start(t, hydra.Options{AccessTokenTTL: 3 * time.Second, Opaque: true})
	r.backend = startTokenBackend(t, r.third)
	rr := testsupport.StartRoundRobin(t)
	r.lb = testsupport.BaseURL(rr.URL)
	r.redirectURI = rr.URL + "/oauth/callback"
	r.idp.CreateClient(t, hydra.Client{ID: "mcpgw-login", Secret: uoLoginSecret, RedirectURIs: []string{r.redirectURI}, Scopes: []string{"openid"}})
	r.third.CreateClient(t, hydra.Client{ID: "mcpgw", Secret: uoThirdSecret, RedirectURIs: []string{r.redirectURI},
		Scopes: []string{"offline_access", "repo"}, AuthMethod: "client_secret_post"})
	cfg := fmt.Sprintf(`session_ttl: 10m
allowed_hosts: [127.0.0.1, localhost]
public_url: %s
user_tokens: {key_env: E2E_UO_KEY}
auth:
  mode: jwt
  jwt: {issuer: %q, audience: mcpgw}
  login: {client_id: mcpgw-login, client_secret_env: E2E_UO_LOGIN_SECRET}
virtual_hosts:
  demo:
%s    backends:
      gh:
        url: %s
        credentials:
          user_oauth:
            issuer: %q
            client_id: mcpgw
            client_secret_env: E2E_UO_THIRD_SECRET
            token_endpoint_auth: client_secret_post
            scopes: [offline_access, repo]
`, rr.URL, r.idp.Issuer, block, r.backend.URL, r.third.Issuer)
	if more != nil {
		cfg += more(r)
	}
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	env := []string{"E2E_UO_KEY=" + uoKeyB64, "E2E_UO_LOGIN_SECRET=" + uoLoginSecret, "E2E_UO_THIRD_SECRET=" + uoThirdSecret}
	args := []string{"--config", path, "--redis-url", r.redis.URL(), "--log-level", "debug"}
	// The users' MCP clients sign in first: Hydra makes its access-token
	// signing key with the first token, and a gateway started earlier
	// would wait out its unknown-kid refetch bound (5 s) to see it.
	r.aliceToken = r.idp.AccessToken(t, "alice", "mcpgw")
	r.bobToken = r.idp.AccessToken(t, "bob", "mcpgw")
	r.carolToken = r.idp.AccessToken(t, "carol", "mcpgw")
	r.a = testsupport.StartGateway(t, bin, args, env)
	r.b = testsupport.StartGateway(t, bin, args, env)
	rr.SetTargets(r.a.URL, r.b.URL)
	return r
}

// browser is a person's browser: signed in at the gateway's issuer as
// idpSub, at the third party as thirdSub.
func (r *uoRig) browser(idpSub, thirdSub string) *http.Client {
	jar, _ := cookiejar.New(nil)
	r.idp.SetSubject(jar, idpSub)
	r.third.SetSubject(jar, thirdSub)
	return &http.Client{Jar: jar, CheckRedirect: func(_ *http.Request, via []*http.Request) error {
		if len(via) >= 30 {
			return errors.New("too many redirects")
		}
		return nil
	}}
}

func (r *uoRig) open(c *http.Client, u string) (int, string) {
	r.t.Helper()
	if !strings.HasPrefix(u, string(r.lb)+"/oauth/connect?l=") {
		r.t.Fatalf("link %q is not a connect link on public_url", u)
	}
	resp, err := c.Get(u)
	if err != nil {
		r.t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var urlCaps = map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}

// modernAsk calls whoami as a 2026-07-28 client with URL elicitation and
// returns the link of the input_required answer, or "" and the result
// when the call went through.
func (r *uoRig) modernCall(token string, extra map[string]any) (link, state string, res map[string]any) {
	r.t.Helper()
	return r.modernCallTool("demo", "whoami", nil, token, extra)
}

// modernCallTool is modernCall of any tool with args on vhost.
func (r *uoRig) modernCallTool(vhost, tool string, args map[string]any, token string, extra map[string]any) (link, state string, res map[string]any) {
	r.t.Helper()
	c := &testsupport.Client{T: r.t, Token: token, VHost: vhost}
	if args == nil {
		args = map[string]any{}
	}
	params := map[string]any{"name": tool, "arguments": args}
	for k, v := range extra {
		params[k] = v
	}
	rep := c.ModernRequest(r.lb, "tools/call", params, urlCaps)
	if rep.Status != http.StatusOK || rep.Final() == nil || rep.Final().Error != nil {
		r.t.Fatalf("modern %s: %d %s", tool, rep.Status, rep.Body)
	}
	res = rep.Result()
	if res["resultType"] != "input_required" {
		return "", "", res
	}
	var ir struct {
		InputRequests map[string]struct {
			Method string `json:"method"`
			Params struct {
				Mode, Message, URL string
				ElicitationID      *string `json:"elicitationId"`
			} `json:"params"`
		} `json:"inputRequests"`
		RequestState string `json:"requestState"`
	}
	b, _ := json.Marshal(res)
	if err := json.Unmarshal(b, &ir); err != nil || len(ir.InputRequests) != 1 || ir.RequestState == "" {
		r.t.Fatalf("input_required: %s", b)
	}
	for _, q := range ir.InputRequests {
		if q.Method != "elicitation/create" || q.Params.Mode != "url" || q.Params.Message == "" || q.Params.ElicitationID != nil {
			r.t.Fatalf("input request: %s", b)
		}
		link = q.Params.URL
	}
	return link, ir.RequestState, res
}

func resultText(res map[string]any) string {
	b, _ := json.Marshal(res["content"])
	return string(b)
}

func TestUserOAuth_SignInThroughURLElicitationOnTwoInstances(t *testing.T) {
	r := startUserOAuth(t)

	// 2026-07-28: no token yet → input_required with a URL elicitation.
	link, state, _ := r.modernCall(r.aliceToken, nil)
	if link == "" {
		t.Fatal("alice's first call went through without a sign-in")
	}
	// Lists before sign-in: the backend's tools are missing, and the
	// list's _meta names it with a link, privately.
	lc := &testsupport.Client{T: t, Token: r.aliceToken}
	lst := lc.ModernRequest(r.lb, "tools/list", nil, urlCaps).Result()
	var meta struct {
		SignIn []struct{ Backend, URL, Message string } `json:"mcpgw/signInRequired"`
	}
	mb, _ := json.Marshal(lst["_meta"])
	_ = json.Unmarshal(mb, &meta)
	if len(meta.SignIn) != 1 || meta.SignIn[0].Backend != "gh" || !strings.HasPrefix(meta.SignIn[0].URL, string(r.lb)+"/oauth/connect?l=") || lst["cacheScope"] != "private" {
		t.Fatalf("tools/list before sign-in: %v", lst)
	}
	// Retrying with accept before finishing: asked again, not blocked.
	link2, state2, _ := r.modernCall(r.aliceToken, map[string]any{"requestState": state,
		"inputResponses": map[string]any{"mcpgw-sign-in": map[string]any{"action": "accept"}}})
	if link2 == "" || link2 == link {
		t.Fatalf("an accept before the sign-in: link %q, want a new one", link2)
	}
	// Decline ends the call with an error.
	c := &testsupport.Client{T: t, Token: r.aliceToken}
	_, state3, _ := r.modernCall(r.aliceToken, nil)
	rep := c.ModernRequest(r.lb, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}, "requestState": state3,
		"inputResponses": map[string]any{"mcpgw-sign-in": map[string]any{"action": "decline"}}}, urlCaps)
	if e := rep.Error(); e == nil || !strings.Contains(e.Message, "declined") {
		t.Fatalf("decline: %s", rep.Body)
	}
	// Without the capability: -32021 naming it.
	rep = c.ModernRequest(r.lb, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)
	if e := rep.Error(); e == nil || e.Code != -32021 || !strings.Contains(string(rep.Body), "requiredCapabilities") {
		t.Fatalf("no url capability: %d %s", rep.Status, rep.Body)
	}

	// Links: tampered, then wrong user (bob's browser opens alice's
	// link): refused, never reaching the third party; nothing stored.
	if st, _ := r.open(r.browser("alice", "alice-gh"), link[:len(link)-4]+"AAAA"); st != http.StatusBadRequest {
		t.Fatalf("tampered link: %d", st)
	}
	if st, body := r.open(r.browser("bob", "bob-gh"), link); st != http.StatusForbidden || !strings.Contains(body, "another user") {
		t.Fatalf("wrong user: %d %s", st, body)
	}
	if link, _, _ := r.modernCall(r.aliceToken, nil); link == "" {
		t.Fatal("a wrong user's sign-in connected alice")
	}

	// alice signs in with a fresh link; the flow's steps alternate
	// between the instances (round robin).
	alice := r.browser("alice", "alice-gh")
	if st, body := r.open(alice, link2); st != http.StatusOK || !strings.Contains(body, "Connected") {
		t.Fatalf("connect: %d %s", st, body)
	}
	if st, _ := r.open(alice, link2); st != http.StatusGone {
		t.Fatalf("reused link: %d", st)
	}
	// The client's retry with accept now goes through.
	if l, _, res := r.modernCall(r.aliceToken, map[string]any{"requestState": state2,
		"inputResponses": map[string]any{"mcpgw-sign-in": map[string]any{"action": "accept"}}}); l != "" || !strings.Contains(resultText(res), "alice-gh") {
		t.Fatalf("the accept retry after sign-in: link %q result %v", l, res)
	}
	// Now the call goes through on both instances, with alice's own
	// third-party identity.
	for range 2 {
		if l, _, res := r.modernCall(r.aliceToken, nil); l != "" || !strings.Contains(resultText(res), "third-party user alice-gh") {
			t.Fatalf("after sign-in: link %q result %v", l, res)
		}
	}
	if names := lc.ModernRequest(r.lb, "tools/list", nil, urlCaps).ToolNames(); len(names) != 1 || names[0] != "whoami" {
		t.Fatalf("tools/list after sign-in: %v", names)
	}

	// 2025-11-25: bob's session gets -32042 with the elicitation; after
	// he signs in, his calls carry his own token, never alice's.
	bob := &testsupport.Client{T: t, Token: r.bobToken}
	bob.Initialize(r.lb, urlCaps)
	rep = bob.Request(r.lb, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}})
	e := rep.Error()
	if rep.Status != http.StatusOK || e == nil || e.Code != -32042 {
		t.Fatalf("2025-11-25 without a token: %d %s", rep.Status, rep.Body)
	}
	var data struct {
		Elicitations []struct{ Mode, ElicitationID, URL, Message string }
	}
	if err := json.Unmarshal(e.Data, &data); err != nil || len(data.Elicitations) != 1 || data.Elicitations[0].Mode != "url" ||
		data.Elicitations[0].ElicitationID == "" || data.Elicitations[0].Message == "" {
		t.Fatalf("-32042 data: %s", e.Data)
	}
	if st, body := r.open(r.browser("bob", "bob-gh"), data.Elicitations[0].URL); st != http.StatusOK {
		t.Fatalf("bob connects: %d %s", st, body)
	}
	if txt := bob.Call(r.lb, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}).Text(); !strings.Contains(txt, "bob-gh") {
		t.Fatalf("bob's call: %s", txt)
	}
	// A 2025-11-25 client without URL elicitation: the link in the message.
	carol := &testsupport.Client{T: t, Token: r.carolToken}
	carol.Initialize(r.lb, nil)
	rep = carol.Request(r.lb, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}})
	if e := rep.Error(); e == nil || !strings.Contains(e.Message, string(r.lb)+"/oauth/connect?l=") {
		t.Fatalf("no url capability (2025): %s", rep.Body)
	}

	// Refresh: once alice's access token has expired (3 s), concurrent
	// calls on both instances refresh it once: all succeed with one new
	// token, and the grant stays alive (a refresh token presented twice
	// makes Hydra revoke the whole grant).
	before := r.backend.tokens()
	if !testsupport.Eventually(t, 20*time.Second, func() bool {
		for _, tk := range before {
			if in, err := introspect(context.Background(), r.third, tk); err != nil || in.Active {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the third party's tokens did not expire")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := &testsupport.Client{T: t, Token: r.aliceToken}
			rep := cl.ModernRequest(r.lb, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, urlCaps)
			if res := rep.Result(); res == nil || !strings.Contains(resultText(res), "alice-gh") {
				t.Errorf("concurrent call %d after expiry: %s", i, rep.Body)
			}
		}()
	}
	wg.Wait()
	var fresh []string
	for _, tk := range r.backend.tokens() {
		if in, _ := introspect(context.Background(), r.third, tk); in.Active && in.Sub == "alice-gh" {
			fresh = append(fresh, tk)
		}
	}
	if len(fresh) != 1 {
		t.Fatalf("%d active alice tokens after the concurrent refresh, want exactly 1", len(fresh))
	}

	// Nothing secret anywhere: responses, both instances' debug logs,
	// every Redis key.
	secrets := append(r.backend.tokens(), uoLoginSecret, uoThirdSecret, uoKeyB64, r.aliceToken, r.bobToken, "ory_rt_", "ory_at_")
	haystacks := map[string]string{"instance a log": r.a.Output(), "instance b log": r.b.Output(), "redis": dumpRedis(t, r.redis)}
	for name, h := range haystacks {
		for _, s := range secrets {
			if strings.Contains(h, s) {
				t.Errorf("%s holds a secret (%.12s…)", name, s)
			}
		}
	}
}

// dumpRedis is every key of a test Redis with its value, whatever its type.
func dumpRedis(t *testing.T, rs *testsupport.RedisServer) string {
	t.Helper()
	return rs.Dump(t, "*")
}
