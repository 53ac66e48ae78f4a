package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/hydra"
)

// Per-user sign-in on Lambda, under the emulator: the key and the client
// secrets come from Secrets Manager references, the MCP request and every
// step of the browser's sign-in go through the Function URL (its query
// string and cookies as Function URL events carry them), and the call then
// reaches the backend with the user's own token.
func TestUserOAuth_OnTheFunctionURL(t *testing.T) {
	t.Parallel()
	const (
		keyB64      = "bGFtYmRhLXNlYWxpbmcta2V5LTMyLWJ5dGVzLWxvbmc="
		loginSecret = "lambda-login-secret-only-in-sm"
		thirdSecret = "lambda-third-secret-only-in-sm"
	)
	public := "https://" + functionURLDomain
	idp := hydra.Start(t, hydra.Options{})
	third := hydra.Start(t, hydra.Options{Opaque: true})
	idp.CreateClient(t, hydra.Client{ID: "mcpgw-login", Secret: loginSecret, RedirectURIs: []string{public + "/oauth/callback"}, Scopes: []string{"openid"}})
	third.CreateClient(t, hydra.Client{ID: "mcpgw", Secret: thirdSecret, RedirectURIs: []string{public + "/oauth/callback"}, Scopes: []string{"offline_access"}})
	userToken := idp.AccessToken(t, "alice", "mcpgw")
	// The backend accepts only the third party's active tokens (the
	// go-sdk's bearer middleware, introspecting); whoami names the subject.
	backend := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "gh",
		TokenVerifier: func(ctx context.Context, tok string, _ *http.Request) (*sdkauth.TokenInfo, error) {
			active, sub, err := third.Introspect(ctx, tok)
			if err != nil || !active {
				return nil, sdkauth.ErrInvalidToken
			}
			return &sdkauth.TokenInfo{UserID: sub, Expiration: time.Now().Add(time.Minute)}, nil
		}})
	aws := startFakeAWS(t, map[string]string{"mcpgw/ut-key": keyB64, "mcpgw/login": loginSecret, "mcpgw/gh": thirdSecret}, nil)
	cfg := fmt.Sprintf(`allowed_hosts: [%s]
public_url: %s
user_tokens: {key_env: MCPGW_USER_TOKEN_KEY}
auth:
  mode: jwt
  jwt: {issuer: %q, audience: mcpgw}
  login: {client_id: mcpgw-login, client_secret_env: MCPGW_LOGIN_SECRET}
virtual_hosts:
  demo:
    backends:
      gh:
        url: %q
        credentials:
          user_oauth: {issuer: %q, client_id: mcpgw, client_secret_env: GH_SECRET, scopes: [offline_access]}
`, functionURLDomain, public, idp.Issuer, backend.URL, third.Issuer)
	env := []string{envConfigYAML + "=" + cfg, envMode + "=url",
		"MCPGW_USER_TOKEN_KEY=aws-secretsmanager:mcpgw/ut-key", "MCPGW_LOGIN_SECRET=aws-secretsmanager:mcpgw/login", "GH_SECRET=aws-secretsmanager:mcpgw/gh"}
	rie := startRIE(t, append(env, aws.env()...)...)
	fu := &functionURL{rie: rie, domain: functionURLDomain}

	c := &testsupport.Client{T: t, Token: userToken}
	c.Initialize(fu, map[string]any{"elicitation": map[string]any{"url": map[string]any{}}})
	r := c.Request(fu, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}})
	e := r.Error()
	if e == nil || e.Code != -32042 {
		t.Fatalf("before sign-in: %s", r.Body)
	}
	var data struct{ Elicitations []struct{ URL string } }
	if err := json.Unmarshal(e.Data, &data); err != nil || len(data.Elicitations) != 1 || !strings.HasPrefix(data.Elicitations[0].URL, public+"/oauth/connect?l=") {
		t.Fatalf("-32042 data: %s", e.Data)
	}

	jar, _ := cookiejar.New(nil)
	idp.SetSubject(jar, "alice")
	third.SetSubject(jar, "alice-gh")
	browser := &http.Client{Jar: jar, Transport: &functionURLBrowser{t: t, fu: fu}, CheckRedirect: func(_ *http.Request, via []*http.Request) error {
		if len(via) >= 30 {
			return errors.New("too many redirects")
		}
		return nil
	}}
	resp, err := browser.Get(data.Elicitations[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Connected") {
		t.Fatalf("sign-in through the Function URL: %d %s", resp.StatusCode, body)
	}
	if txt := c.Call(fu, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}).Text(); !strings.Contains(txt, "alice-gh") {
		t.Fatalf("after sign-in: %q, want the third party's alice-gh", txt)
	}
	auth := backend.LastHeaders("tools/call").Get("Authorization")
	tok := strings.TrimPrefix(auth, "Bearer ")
	active, sub, err := third.Introspect(context.Background(), tok)
	if err != nil || !active || sub != "alice-gh" || !strings.HasPrefix(tok, "ory_at_") {
		t.Fatalf("the backend got %q, not the user's active third-party token", auth)
	}
	for _, s := range []string{tok, loginSecret, thirdSecret, keyB64} {
		if strings.Contains(rie.Output(), s) {
			t.Fatalf("a secret reached the function's log")
		}
	}
}

// functionURLBrowser sends a browser's requests for the Function URL's
// domain as Function URL events (query string and cookies included, the
// response's cookies back as Set-Cookie), and the others to the network.
type functionURLBrowser struct {
	t  *testing.T
	fu *functionURL
}

func (b *functionURLBrowser) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != b.fu.domain {
		return http.DefaultTransport.RoundTrip(req)
	}
	var cookies []string
	for _, c := range req.Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	h := req.Header.Clone()
	h.Del("Cookie")
	ev := events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: req.URL.Path, RawQueryString: req.URL.RawQuery, Cookies: cookies,
		Headers: lowerHeaders(h, b.fu.domain),
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID: "anonymous", RequestID: "req", DomainName: b.fu.domain, APIID: strings.Split(b.fu.domain, ".")[0],
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
				Method: req.Method, Path: req.URL.Path, Protocol: "HTTP/1.1", SourceIP: "203.0.113.7", UserAgent: "mcpgw-test-browser",
			},
		},
	}
	payload := b.fu.rie.invoke(mustJSON(b.t, ev))
	prelude, body, ok := bytes.Cut(payload, make([]byte, 8))
	if !ok {
		return nil, fmt.Errorf("not a streaming response: %.200q", payload)
	}
	var p struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
		Cookies    []string          `json:"cookies"`
	}
	if err := json.Unmarshal(prelude, &p); err != nil {
		return nil, err
	}
	hdr := toHeader(p.Headers, nil)
	for _, c := range p.Cookies {
		hdr.Add("Set-Cookie", c)
	}
	return &http.Response{StatusCode: p.StatusCode, Header: hdr, Body: io.NopCloser(bytes.NewReader(body)), Request: req}, nil
}
