package authserver

import (
	"context"
	"crypto/subtle"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// A client is registered (RFC 7591: a record in the store, named by the
// random client_id the gateway gave it) or names its own metadata
// document (an https client_id, fetched and cached: cimd.go). Either
// way it has exact redirect URIs, and it authenticates with a secret
// (kept as a keyed digest) or not at all (a public client, whose only
// proof is PKCE).

// Client authentication methods the server takes.
const (
	authNone   = "none"
	authBasic  = "client_secret_basic"
	authPost   = "client_secret_post"
	grantCode  = "authorization_code"
	grantRenew = "refresh_token"
)

// client is one client's metadata: what registration stored, or what a
// metadata document says.
type client struct {
	ID        string    `json:"client_id"`
	Name      string    `json:"client_name,omitempty"`
	Redirects []string  `json:"redirect_uris"`
	Method    string    `json:"token_endpoint_auth_method"`
	Grants    []string  `json:"grant_types"`
	Secret    string    `json:"s,omitempty"` // keyed digest of the secret
	Created   time.Time `json:"c"`
	// Used is when a token was last issued to it (a registration unused
	// for a day expires; a used one lives as long as its grants may).
	Used time.Time `json:"u,omitzero"`
	// Document: client_id is the URL of its metadata document.
	Document bool `json:"-"`

	s *Server
}

// lookupClient finds a client: a metadata document for an https
// client_id, else a registration.
func (s *Server) lookupClient(ctx context.Context, id string) (*client, error) {
	if isDocumentID(id) {
		if !s.o.Settings.ClientIDMetadataDocuments {
			return nil, errNotFound
		}
		c, err := s.docs.client(ctx, id)
		if err != nil {
			return nil, err
		}
		c.s = s
		return c, nil
	}
	if len(id) > 100 {
		return nil, errNotFound
	}
	var c client
	if _, err := s.rec.get(ctx, kindClient, id, &c); err != nil {
		return nil, err
	}
	c.s = s
	return &c, nil
}

// used keeps a registration that received a token for as long as its
// grants may live (written at most once a day).
func (s *Server) used(ctx context.Context, c *client) {
	if c.Document || time.Since(c.Used) < 24*time.Hour {
		return
	}
	c.Used = time.Now()
	if err := s.rec.put(ctx, kindClient, c.ID, c, s.o.Settings.RefreshTokenTTL+unusedClientLife); err != nil {
		s.o.Log.Warn("authorization server: a client's registration could not be kept", "error", err)
	}
}

// secretOK checks a client secret against the stored digest.
func (c *client) secretOK(secret string) bool {
	return c.Secret != "" && secret != "" && subtle.ConstantTimeCompare([]byte(c.Secret), []byte(c.s.rec.digest("client-secret", secret))) == 1
}

// redirectOK: the URI is one of the client's, byte for byte.
func (c *client) redirectOK(uri string) bool { return slices.Contains(c.Redirects, uri) }

// redirectURIProblem says what makes a redirect URI unacceptable, or "":
// absolute, no fragment, https or http on a loopback host, or a private
// scheme of a native app (RFC 8252: com.example.app:/callback).
func redirectURIProblem(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Scheme == "" || len(raw) > 2000:
		return "is not an absolute URI of at most 2000 bytes"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "must not have a fragment"
	case u.Scheme == "https":
		if u.Host == "" {
			return "has no host"
		}
	case u.Scheme == "http":
		if h := u.Hostname(); h != "localhost" && h != "127.0.0.1" && h != "::1" {
			return "must use https, or http on a loopback host"
		}
	case u.Scheme == "javascript" || u.Scheme == "data" || u.Scheme == "file" || !strings.Contains(u.Scheme, "."):
		return "must be https, http on a loopback host, or a private-use scheme of reverse domain form"
	}
	return ""
}

// op.Client.

func (c *client) GetID() string                       { return c.ID }
func (c *client) RedirectURIs() []string              { return c.Redirects }
func (c *client) PostLogoutRedirectURIs() []string    { return nil }
func (c *client) ApplicationType() op.ApplicationType { return op.ApplicationTypeNative }
func (c *client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethod(c.Method) }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType {
	out := []oidc.GrantType{oidc.GrantTypeCode}
	if slices.Contains(c.Grants, grantRenew) {
		out = append(out, oidc.GrantTypeRefreshToken)
	}
	return out
}
func (c *client) LoginURL(id string) string {
	return c.s.o.Issuer + pathLogin + "?id=" + url.QueryEscape(id)
}
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *client) IDTokenLifetime() time.Duration       { return time.Minute }
func (c *client) DevMode() bool                        { return false }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// IsScopeAllowed: the scopes the vhosts' access rules (and metadata) name.
func (c *client) IsScopeAllowed(scope string) bool { return slices.Contains(c.s.o.Scopes(), scope) }
