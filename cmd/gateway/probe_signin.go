package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/usertokens"
)

// The sign-in upstreams are fetched only when someone signs in, so a
// typo in them would pass start-up and fail the first user. This file
// probes them with the code that runs then: the identity provider of
// auth.login (the gateway's own authorization server and the connect
// pages discover it with go-oidc, OpenID Connect only), and each
// user_oauth backend's authorization server (discovered, or configured,
// by router/usertokens). Each token endpoint is then asked to exchange a
// made-up code with the configured client: a provider authenticates the
// client before it looks at the code, so "invalid_grant" says the client
// id and secret are accepted, "invalid_client" that they are not. No
// token is issued and nothing is changed at the provider.

// probeCode is the authorization code no provider issued.
const probeCode = "mcpgw-check-probe-not-a-code"

// probeSignIn starts the probes of the sign-in upstreams on wg.
func probeSignIn(wg *sync.WaitGroup, cfg *config.Config, timeout time.Duration, rep *probeReport) {
	if l := cfg.Auth.Login; l != nil && cfg.Auth.JWT != nil {
		wg.Go(func() { probeLogin(cfg.Auth.JWT.Issuer, l, loginRedirect(cfg), loginUse(cfg), timeout, rep) })
	}
	for _, b := range userOAuthBackends(cfg) {
		wg.Go(func() { probeUserOAuth(b.vhost, b.key, b.s, cfg.PublicURL, timeout, rep) })
	}
}

// loginUse names what the auth.login client serves, for its line.
func loginUse(cfg *config.Config) string {
	var uses []string
	if cfg.Auth.AuthorizationServer != nil {
		uses = append(uses, "the authorization server's sign-in")
	}
	if len(userOAuthBackends(cfg)) > 0 {
		uses = append(uses, "user_oauth connect links")
	}
	if len(uses) == 0 {
		return "auth.login"
	}
	return "auth.login, for " + strings.Join(uses, " and ")
}

// loginRedirect is a redirect URI the auth.login client uses: the
// authorization server's callback when it is on, else the connect
// pages'.
func loginRedirect(cfg *config.Config) string {
	if cfg.Auth.AuthorizationServer != nil {
		return cfg.PublicURL + "/oauth2/callback"
	}
	return cfg.PublicURL + "/oauth/callback"
}

type userOAuthBackend struct {
	vhost, key string
	s          *credentials.Settings
}

// userOAuthBackends are the backends with per-user sign-in, sorted.
func userOAuthBackends(cfg *config.Config) []userOAuthBackend {
	var out []userOAuthBackend
	for vh, v := range cfg.VirtualHosts {
		for key, b := range v.Backends {
			if b.Credentials != nil && b.Credentials.Grant == credentials.GrantUserOAuth && b.Credentials.UserOAuth != nil {
				out = append(out, userOAuthBackend{vh, key, b.Credentials})
			}
		}
	}
	slices.SortFunc(out, func(a, b userOAuthBackend) int {
		return cmp.Or(cmp.Compare(a.vhost, b.vhost), cmp.Compare(a.key, b.key))
	})
	return out
}

// noRedirects is the client the sign-in code uses: a redirect would
// resend the client secret elsewhere.
func noRedirects() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// probeLogin discovers the identity provider as go-oidc does at the first
// sign-in, checks the endpoints and keys the sign-in needs, then the
// client at the token endpoint.
func probeLogin(issuer string, l *config.Login, redirect, use string, timeout time.Duration, rep *probeReport) {
	name := fmt.Sprintf("sign-in %s (%s)", redactURL(issuer), use)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	hc := noRedirects()
	defer hc.CloseIdleConnections()
	hctx := oidc.ClientContext(ctx, hc) // as sign-in passes its client to go-oidc and x/oauth2
	p, err := oidc.NewProvider(hctx, issuer)
	if err != nil {
		rep.fail("%s: OpenID Connect discovery at %s/.well-known/openid-configuration: %s (auth.jwt.issuer must be an OpenID provider: the sign-in reads this document)",
			name, redactURL(strings.TrimSuffix(issuer, "/")), timeoutSays(shorten(err.Error()), ctx, timeout))
		return
	}
	var md struct {
		Auth  string `json:"authorization_endpoint"`
		Token string `json:"token_endpoint"`
		JWKS  string `json:"jwks_uri"`
	}
	if err := p.Claims(&md); err != nil {
		rep.fail("%s: discovery document: %v", name, err)
		return
	}
	for _, f := range [][2]string{{"authorization_endpoint", md.Auth}, {"token_endpoint", md.Token}, {"jwks_uri", md.JWKS}} {
		if f[1] == "" {
			rep.fail("%s: the discovery document has no %s (the sign-in needs it)", name, f[0])
			return
		}
	}
	n, err := probeKeySet(ctx, hc, md.JWKS)
	if err != nil {
		rep.fail("%s: ID token keys (jwks_uri): %s", name, timeoutSays(err.Error(), ctx, timeout))
		return
	}
	e := p.Endpoint()
	conf := &oauth2.Config{ClientID: l.ClientID, ClientSecret: l.ClientSecret.Reveal(), RedirectURL: redirect, Endpoint: e}
	client, err := probeClient(hctx, conf, l.SecretEnv, oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams)
	if err != nil {
		rep.fail("%s: %s", name, timeoutSays(err.Error(), ctx, timeout))
		return
	}
	rep.ok("%s: OpenID provider, authorization endpoint %s, token endpoint %s, JWKS %s holds %d key(s), %s",
		name, redactURL(e.AuthURL), redactURL(e.TokenURL), redactURL(md.JWKS), n, client)
}

// probeUserOAuth finds a user_oauth backend's endpoints as the connect
// pages do (router/usertokens), then checks its client at the token
// endpoint.
func probeUserOAuth(vhost, key string, s *credentials.Settings, publicURL string, timeout time.Duration, rep *probeReport) {
	name := fmt.Sprintf("user_oauth %s/%s", vhost, key)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	vault := usertokens.NewVault(nil, nil, publicURL, slog.New(slog.DiscardHandler))
	defer vault.HTTP.CloseIdleConnections()
	e, err := vault.Endpoints(ctx, s)
	if err != nil {
		rep.fail("%s: %s (check credentials.user_oauth.issuer: its OpenID Connect or RFC 8414 metadata must answer and name it)",
			name, timeoutSays(shorten(err.Error()), ctx, timeout))
		return
	}
	how := "configured endpoints"
	if e.Issuer != "" {
		how = "issuer " + redactURL(e.Issuer) + " discovered"
	}
	conf := usertokens.OAuth2Config(s, e, vault.RedirectURL())
	client, err := probeClient(vault.CtxClient(ctx), conf, s.SecretEnv, conf.Endpoint.AuthStyle)
	if err != nil {
		rep.fail("%s: %s", name, timeoutSays(err.Error(), ctx, timeout))
		return
	}
	rep.ok("%s: %s, authorization endpoint %s, token endpoint %s, %s",
		name, how, redactURL(e.Authorization), redactURL(e.Token), client)
}

// probeClient asks the token endpoint to exchange probeCode as conf's
// client, with each auth style in turn (as x/oauth2 tries them when the
// style is unknown), and says whether the client was authenticated. ctx
// carries the HTTP client sign-in uses (oauth2.HTTPClient). The secret is
// sent, never printed.
func probeClient(ctx context.Context, conf *oauth2.Config, env string, styles ...oauth2.AuthStyle) (string, error) {
	if conf.ClientSecret == "" {
		return "", fmt.Errorf("environment variable %s (the client secret) is not set or empty", env)
	}
	var err error
	var re *oauth2.RetrieveError
	for _, style := range styles {
		c := *conf
		c.Endpoint.AuthStyle = style
		_, err = c.Exchange(ctx, probeCode)
		if !errors.As(err, &re) || !slices.Contains(clientRefused, re.ErrorCode) {
			break
		}
	}
	shown, id := redactURL(conf.Endpoint.TokenURL), conf.ClientID
	switch {
	case err == nil:
		return "", fmt.Errorf("token endpoint %s issued a token for a made-up code: it is not checking codes", shown)
	case errors.As(err, &re) && slices.Contains(codeRefused, re.ErrorCode):
		return fmt.Sprintf("token endpoint accepts client %s", id), nil
	case errors.As(err, &re) && slices.Contains(clientRefused, re.ErrorCode):
		return "", fmt.Errorf("token endpoint %s refuses client %s (%s%s): check the client id and the secret in %s",
			shown, id, re.ErrorCode, describe(re), env)
	case errors.As(err, &re) && re.ErrorCode == "unauthorized_client":
		return "", fmt.Errorf("token endpoint %s: client %s may not use the authorization_code grant (unauthorized_client%s): allow it at the provider",
			shown, id, describe(re))
	case errors.As(err, &re) && re.ErrorCode != "":
		return "", fmt.Errorf("token endpoint %s answered HTTP %d %s%s to client %s's code exchange (want invalid_grant for a made-up code)",
			shown, re.Response.StatusCode, re.ErrorCode, describe(re), id)
	case errors.As(err, &re):
		return "", fmt.Errorf("token endpoint %s answered HTTP %d without an OAuth error: not an OAuth token endpoint?", shown, re.Response.StatusCode)
	case ctx.Err() != nil:
		return "", ctx.Err()
	default:
		return "", fmt.Errorf("token endpoint %s: %s", shown, shorten(err.Error()))
	}
}

// The answers to a made-up code: the client was authenticated and the
// code refused (RFC 6749 invalid_grant; GitHub's bad_verification_code),
// or the client was refused (invalid_client; GitHub's
// incorrect_client_credentials).
var (
	codeRefused   = []string{"invalid_grant", "bad_verification_code"}
	clientRefused = []string{"invalid_client", "incorrect_client_credentials"}
)

func describe(re *oauth2.RetrieveError) string {
	if re.ErrorDescription == "" {
		return ""
	}
	return ": " + shorten(re.ErrorDescription)
}

// probeKeySet GETs a JWK Set and counts its keys.
func probeKeySet(ctx context.Context, hc *http.Client, u string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", redactURL(u), err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %s", redactURL(u), shorten(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: HTTP %d", redactURL(u), resp.StatusCode)
	}
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := decodeLimited(resp, &set); err != nil || len(set.Keys) == 0 {
		return 0, fmt.Errorf("GET %s: not a JWK Set with keys", redactURL(u))
	}
	return len(set.Keys), nil
}

// redactURL is u without its userinfo and query, for a line.
func redactURL(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return "(an unparsable URL)"
	}
	pu.User = nil
	if pu.RawQuery != "" || pu.ForceQuery {
		pu.RawQuery, pu.ForceQuery = "", false
		return pu.String() + "?…"
	}
	return pu.String()
}

// shorten keeps an upstream's error (a page body, perhaps) to one short
// line.
func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// decodeLimited decodes a JSON answer of at most 1 MiB.
func decodeLimited(resp *http.Response, into any) error {
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(into)
}
