// Package authserver is the gateway as the OAuth 2.1 authorization
// server MCP clients sign in at: zitadel/oidc's OpenID provider over the
// store, with client registration, the user's sign-in at the upstream
// identity provider and the gateway's own consent page.
//
// A client that a vhost's 401 sent to the gateway's metadata registers
// (RFC 7591, or names a Client ID Metadata Document), sends the user to
// /oauth2/authorize with PKCE S256 and resource = a vhost's URL (RFC
// 8707); the gateway signs the user in at the upstream identity provider
// through auth.login (OIDC code + PKCE), asks the user to approve the
// client for that vhost, and answers with a code the client exchanges at
// /oauth2/token for a gateway-signed JWT whose aud is that vhost's URL
// and a rotating refresh token. Every step's state is in the store
// (store.OAuthRecords, sealed), so any instance serves any step, Lambda
// included; the signing keys too, rotated, published as a JWK Set.
package authserver

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/usertokens"
	"github.com/mcpgw/gateway/store"
)

// Store is what the authorization server keeps in the store.
type Store interface {
	store.OAuthRecords
	store.RateLimits
}

// Options configure the authorization server.
type Options struct {
	// Issuer is public_url: the server's issuer and the base of every
	// vhost's resource URL.
	Issuer string
	Store  Store
	// Sealer seals every record (the user_tokens key).
	Sealer   *usertokens.Sealer
	Settings *config.AuthorizationServer
	// Upstream is the identity provider users sign in at (auth.jwt's
	// issuer) and the gateway's client there (auth.login).
	Upstream     string
	ClientID     string
	ClientSecret credentials.Secret
	LoginScopes  []string
	// HasVHost reports whether a vhost is configured (a resource must
	// name one); Scopes lists the scopes clients may ask for.
	HasVHost func(string) bool
	Scopes   func() []string
	// ClientAddr names a request's source, for the registration rate
	// limit (the peer, or the first untrusted X-Forwarded-For hop).
	ClientAddr func(*http.Request) string
	Log        *slog.Logger
	// allowPrivate lets metadata documents come from loopback addresses
	// (the package's own tests).
	allowPrivate bool
}

// Paths of the endpoints, under the issuer.
const (
	pathAuthorize = "/oauth2/authorize"
	pathToken     = "/oauth2/token"
	pathRevoke    = "/oauth2/revoke"
	pathKeys      = "/oauth2/jwks"
	pathRegister  = "/oauth2/register"
	pathLogin     = "/oauth2/login"
	pathCallback  = "/oauth2/callback"
	pathConsent   = "/oauth2/consent"
)

// Server is the authorization server; Handler serves it.
type Server struct {
	o        Options
	rec      *records
	provider *op.Provider
	keys     *keyring
	docs     *metadataDocs
	up       *upstream
	secure   bool
	mux      *http.ServeMux
}

// New builds the server. Nothing is fetched or started: the signing keys
// are made on first use, the upstream provider discovered at the first
// sign-in.
func New(o Options) (*Server, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	s := &Server{o: o, secure: len(o.Issuer) > 8 && o.Issuer[:8] == "https://", mux: http.NewServeMux()}
	s.rec = &records{store: o.Store, sealer: o.Sealer}
	s.keys = newKeyring(o.Store, o.Sealer, o.Settings.AccessTokenTTL)
	s.docs = newMetadataDocs(o.allowPrivate)
	s.up = &upstream{issuer: o.Upstream, clientID: o.ClientID, secret: o.ClientSecret, scopes: o.LoginScopes,
		redirect: o.Issuer + pathCallback}
	// The provider's own AEAD makes the codes (each is looked up in the
	// store, so any instance redeems it); its key derives from the
	// user_tokens key like every other.
	cryptoKey := sha256.Sum256([]byte(o.Sealer.Digest("as-crypto", "codes")))
	p, err := op.NewProvider(&op.Config{CryptoKey: cryptoKey, CodeMethodS256: true, AuthMethodPost: true, GrantTypeRefreshToken: true},
		&storage{s: s}, op.StaticIssuer(o.Issuer), s.insecure(),
		op.WithCustomAuthEndpoint(op.NewEndpoint(pathAuthorize[1:])),
		op.WithCustomTokenEndpoint(op.NewEndpoint(pathToken[1:])),
		op.WithCustomRevocationEndpoint(op.NewEndpoint(pathRevoke[1:])),
		op.WithCustomKeysEndpoint(op.NewEndpoint(pathKeys[1:])))
	if err != nil {
		return nil, fmt.Errorf("authorization server: %w", err)
	}
	s.provider = p
	s.routes()
	return s, nil
}

// insecure allows an http issuer, which config accepts only on a
// loopback host.
func (s *Server) insecure() op.Option {
	if s.secure {
		return func(*op.Provider) error { return nil }
	}
	return op.WithAllowInsecure()
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.serveMetadata)
	s.mux.HandleFunc("GET /.well-known/openid-configuration", s.serveMetadata)
	s.mux.HandleFunc("GET "+pathAuthorize, s.authorize)
	s.mux.HandleFunc("POST "+pathToken, s.withIssuer(s.provider))
	s.mux.HandleFunc("POST "+pathRevoke, s.withIssuer(s.provider))
	s.mux.HandleFunc("GET "+pathKeys, s.withIssuer(s.provider))
	s.mux.HandleFunc("POST "+pathRegister, s.register)
	s.mux.HandleFunc("OPTIONS "+pathRegister, s.preflight)
	s.mux.HandleFunc("GET "+pathLogin, s.login)
	s.mux.HandleFunc("GET "+pathCallback, s.callback)
	s.mux.HandleFunc("GET "+pathConsent, s.consentPage)
	s.mux.HandleFunc("POST "+pathConsent, s.consentAnswer)
}

// withIssuer serves h (the OpenID provider's own endpoints) with the
// issuer in the request's context.
func (s *Server) withIssuer(h http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r.WithContext(op.ContextWithIssuer(r.Context(), s.o.Issuer)))
	}
}

// Handler serves every endpoint; the gateway mounts it on public_url for
// the paths Paths lists.
func (s *Server) Handler() http.Handler { return s.mux }

// Paths are the path patterns Handler serves.
func Paths() []string {
	return []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration", "/oauth2/"}
}

// Issuer is the server's issuer (public_url).
func (s *Server) Issuer() string { return s.o.Issuer }

// PublicKey returns the verification key named kid, for the gateway's
// resource side (handler/auth): read from the store, cached.
func (s *Server) PublicKey(ctx context.Context, kid string) (any, error) {
	return s.keys.public(ctx, kid)
}

// Close releases nothing today; it exists so the app closes every part
// alike.
func (s *Server) Close() {}

// randomID is 128 random bits in base64url.
func randomID() string { return usertokens.RandomID() }

// hash is the SHA-256 of v in base64url (a refresh token's secret).
func hash(v string) string {
	h := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// Lifetimes of what a flow leaves in the store.
const (
	authRequestLife  = 10 * time.Minute
	codeLife         = 2 * time.Minute
	unusedClientLife = 24 * time.Hour
)
