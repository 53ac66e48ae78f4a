package usertokens

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpgw/gateway/router/credentials"
)

// Endpoints are a user_oauth backend's authorization server endpoints:
// configured, or discovered from its issuer.
type Endpoints struct {
	Authorization, Token, Revocation string
	// Issuer is the discovered issuer ("" for configured endpoints), and
	// IssParameter whether its metadata says it names itself in every
	// authorization response (RFC 9207): the callback checks both.
	Issuer       string
	IssParameter bool
}

// metadata is the part of an OIDC discovery document or RFC 8414
// metadata read here.
type metadata struct {
	Issuer        string `json:"issuer"`
	Authorization string `json:"authorization_endpoint"`
	Token         string `json:"token_endpoint"`
	Revocation    string `json:"revocation_endpoint"`
	IssParameter  bool   `json:"authorization_response_iss_parameter_supported"`
}

// providers caches discovered endpoints per issuer (a cache: any instance
// discovers on its own). A failure is not cached.
type providers struct {
	hc *http.Client
	mu sync.Mutex
	by map[string]Endpoints
}

// endpoints returns s's endpoints, discovering them when s names an
// issuer: OIDC discovery first, then RFC 8414 (path inserted), the
// document's issuer matched byte for byte (mix-up defence).
func (p *providers) endpoints(ctx context.Context, s *credentials.Settings) (Endpoints, error) {
	u := s.UserOAuth
	if u.Issuer == "" {
		return Endpoints{Authorization: u.AuthorizationURL, Token: s.TokenURL, Revocation: u.RevocationURL}, nil
	}
	p.mu.Lock()
	e, ok := p.by[u.Issuer]
	p.mu.Unlock()
	if ok {
		return e, nil
	}
	var last error
	for _, du := range discoveryURLs(u.Issuer) {
		m, err := p.fetch(ctx, du)
		if err != nil {
			last = err
			continue
		}
		if m.Issuer != u.Issuer {
			return Endpoints{}, fmt.Errorf("the metadata of %s names issuer %q: a mismatch", u.Issuer, m.Issuer)
		}
		if m.Authorization == "" || m.Token == "" {
			return Endpoints{}, fmt.Errorf("the metadata of %s has no authorization or token endpoint", u.Issuer)
		}
		e = Endpoints{Authorization: m.Authorization, Token: m.Token, Revocation: m.Revocation, Issuer: m.Issuer, IssParameter: m.IssParameter}
		if u.RevocationURL != "" {
			e.Revocation = u.RevocationURL
		}
		p.mu.Lock()
		if p.by == nil {
			p.by = map[string]Endpoints{}
		}
		p.by[u.Issuer] = e
		p.mu.Unlock()
		return e, nil
	}
	return Endpoints{}, fmt.Errorf("discovering %s: %w", u.Issuer, last)
}

func discoveryURLs(issuer string) []string {
	oidc := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	pu, err := url.Parse(issuer)
	if err != nil {
		return []string{oidc}
	}
	path := strings.TrimSuffix(pu.Path, "/")
	pu.Path = "/.well-known/oauth-authorization-server" + path
	return []string{oidc, pu.String()}
}

func (p *providers) fetch(ctx context.Context, u string) (*metadata, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var m metadata
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&m); err != nil {
		return nil, errors.New("GET " + u + ": not a metadata document")
	}
	return &m, nil
}

// OAuth2Config is the x/oauth2 client of a backend, its redirect URI
// {public_url}/oauth/callback, with the configured client
// authentication (never "the first the metadata lists").
func OAuth2Config(s *credentials.Settings, e Endpoints, redirect string) *oauth2.Config {
	style := oauth2.AuthStyleInHeader
	if s.UserOAuth.TokenEndpointAuth == credentials.AuthClientSecretPost {
		style = oauth2.AuthStyleInParams
	}
	return &oauth2.Config{
		ClientID: s.ClientID, ClientSecret: s.ClientSecret.Reveal(), RedirectURL: redirect, Scopes: s.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: e.Authorization, TokenURL: e.Token, AuthStyle: style},
	}
}
