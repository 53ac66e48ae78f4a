package config

import (
	"slices"
	"time"
)

// auth.authorization_server: the gateway as the OAuth 2.1 authorization
// server MCP clients sign in at (handler/authserver). Users sign in at
// the upstream identity provider through auth.login; the gateway issues
// its own tokens for its vhosts' resource URLs. It needs what the
// sign-in needs: auth.jwt with an issuer URL, auth.login, public_url (the
// gateway's issuer and the base of every resource URL), and
// user_tokens.key_env (the key that seals the signing keys and grants
// the gateway keeps in the store).

// Defaults and bounds of the authorization server.
const (
	DefaultAccessTokenTTL  = time.Hour
	DefaultRefreshTokenTTL = 30 * 24 * time.Hour
	maxAccessTokenTTL      = 24 * time.Hour
	maxRefreshTokenTTL     = 365 * 24 * time.Hour
)

// AuthorizationServer is auth.authorization_server when enabled.
type AuthorizationServer struct {
	// AccessTokenTTL (access_token_ttl) is the life of an access token
	// (a JWT the resource side checks without the store: it stays valid
	// until then, even after its grant is revoked). Default 1h; 10s..24h.
	AccessTokenTTL time.Duration
	// RefreshTokenTTL (refresh_token_ttl) is how long a grant lives
	// unused: each refresh rotates its token and starts it again.
	// Default 720h; 1h..8760h.
	RefreshTokenTTL time.Duration
	// Claims (claims) are the upstream ID token's claims copied, as they
	// are, into the gateway's access tokens (groups, email, roles): what
	// access rules read. The registered claims and scope are the
	// gateway's own and cannot be listed.
	Claims []string
	// DynamicRegistration (registration.dynamic): RFC 7591 at
	// {public_url}/oauth2/register. Default on.
	DynamicRegistration bool
	// ClientIDMetadataDocuments (registration.client_id_metadata_documents):
	// an https client_id names its metadata document. Default on.
	ClientIDMetadataDocuments bool
}

type rawAuthorizationServer struct {
	// Turns the authorization server on.
	Enabled bool `yaml:"enabled" jsonschema:"default=false"`
	// The life of an access token (a JWT checked without the store: it
	// stays valid until then, even after its grant is revoked). 10s to
	// 24h.
	AccessTokenTTL *rawDuration `yaml:"access_token_ttl" jsonschema:"default=1h"`
	// How long a grant lives unused; each refresh rotates its token and
	// starts it again. 1h to 8760h.
	RefreshTokenTTL *rawDuration `yaml:"refresh_token_ttl" jsonschema:"default=720h"`
	// The upstream ID token's claims copied into the gateway's access
	// tokens (groups, email, roles), for access rules to read.
	Claims []string `yaml:"claims"`
	// How clients register.
	Registration *rawASRegistration `yaml:"registration"`
}

type rawASRegistration struct {
	// Dynamic client registration (RFC 7591) at
	// {public_url}/oauth2/register.
	Dynamic *bool `yaml:"dynamic" jsonschema:"default=true"`
	// Client ID metadata documents: an https client_id names its
	// metadata document.
	ClientIDMetadataDocuments *bool `yaml:"client_id_metadata_documents" jsonschema:"default=true"`
}

// reservedClaims are the access token's own claims.
var reservedClaims = []string{"iss", "sub", "aud", "exp", "iat", "nbf", "jti", "client_id", "scope", "scp", "azp", "nonce", "at_hash", "auth_time"}

func (v *validator) authorizationServer(raw *rawAuthorizationServer, cfg *Config) *AuthorizationServer {
	if raw == nil || !raw.Enabled {
		return nil
	}
	const path = "auth.authorization_server"
	as := &AuthorizationServer{
		AccessTokenTTL:            v.duration(path+".access_token_ttl", raw.AccessTokenTTL, DefaultAccessTokenTTL, 10*time.Second),
		RefreshTokenTTL:           v.duration(path+".refresh_token_ttl", raw.RefreshTokenTTL, DefaultRefreshTokenTTL, time.Hour),
		DynamicRegistration:       true,
		ClientIDMetadataDocuments: true,
	}
	if as.AccessTokenTTL > maxAccessTokenTTL {
		v.errf(path+".access_token_ttl", "must be at most %s: an access token cannot be recalled before it expires", maxAccessTokenTTL)
	}
	if as.RefreshTokenTTL > maxRefreshTokenTTL {
		v.errf(path+".refresh_token_ttl", "must be at most %s", maxRefreshTokenTTL)
	}
	for i, c := range raw.Claims {
		p := indexPath(path+".claims", i)
		switch {
		case !scopeOK(c):
			v.errf(p, "%q is not a claim name", c)
		case slices.Contains(reservedClaims, c):
			v.errf(p, "%q is the gateway's own claim in its access tokens, not copied from the identity provider", c)
		case slices.Contains(as.Claims, c):
			v.errf(p, "claim %q is listed twice", c)
		default:
			as.Claims = append(as.Claims, c)
		}
	}
	if r := raw.Registration; r != nil {
		if r.Dynamic != nil {
			as.DynamicRegistration = *r.Dynamic
		}
		if r.ClientIDMetadataDocuments != nil {
			as.ClientIDMetadataDocuments = *r.ClientIDMetadataDocuments
		}
		if !as.DynamicRegistration && !as.ClientIDMetadataDocuments {
			v.errf(path+".registration", "turns off both dynamic registration and client ID metadata documents: no client could sign in")
		}
	}
	switch {
	case cfg.PublicURL == "":
		v.errf(path, "needs public_url: it is the gateway's issuer and the base of every vhost's resource URL")
	case cfg.Auth.ResourceMetadata != nil && cfg.Auth.ResourceMetadata.PublicURL != cfg.PublicURL:
		v.errf("auth.resource_metadata.public_url", "must equal public_url with the authorization server on (the tokens' audience is {public_url}/servers/{vhost}/mcp)")
	default:
		// The vhosts' RFC 9728 documents name the gateway, unless the
		// operator listed the servers.
		rm := cfg.Auth.ResourceMetadata
		if rm == nil {
			rm = &ResourceMetadata{PublicURL: cfg.PublicURL}
			cfg.Auth.ResourceMetadata = rm
		}
		if raw := v.rawAuthServers; len(raw) == 0 {
			rm.AuthorizationServers = []string{cfg.PublicURL}
		}
	}
	if cfg.Auth.Login == nil {
		v.errf(path, "needs auth.login: users sign in at the identity provider through the gateway's client there")
	}
	if cfg.Auth.JWT == nil || keyURLProblem(cfg.Auth.JWT.Issuer) != "" {
		v.errf(path, "needs auth.jwt with an issuer URL: the identity provider users sign in at")
	}
	if cfg.UserTokens == nil {
		v.errf(path, "needs user_tokens.key_env: the gateway's signing keys and grants are sealed in the store under that key")
	}
	return as
}
