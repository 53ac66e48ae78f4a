package oidcop

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the provider's state, in memory: its clients, the access
// tokens it issued (for introspection and revocation) and its signing
// keys, which the test rotates. Only what the client credentials grant,
// the key set and introspection need is implemented; the browser flows
// answer "not supported".
type storage struct {
	mu      sync.Mutex
	clients map[string]*Client
	tokens  map[string]*token // by token id
	signing *key              // signs new tokens
	keys    []*key            // published, signing first
}

type token struct {
	clientID, subject string
	audience, scopes  []string
	exp               time.Time
}

var errUnsupported = errors.New("oidcop: not supported by the test provider")

var keySeq atomic.Int64

// key is a signing key; kid is unique per process.
type key struct {
	id   string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

func newKey(alg jose.SignatureAlgorithm, priv crypto.Signer) *key {
	return &key{id: "k" + strconv.FormatInt(keySeq.Add(1), 10), alg: alg, priv: priv}
}

func newRSAKey() (*key, error) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return newKey(jose.RS256, priv), nil
}

// op.SigningKey
func (k *key) SignatureAlgorithm() jose.SignatureAlgorithm { return k.alg }
func (k *key) Key() any                                    { return k.priv }
func (k *key) ID() string                                  { return k.id }

// publicKey is a key as the JWK Set shows it (op.Key).
type publicKey struct{ k *key }

func (p publicKey) ID() string                         { return p.k.id }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return p.k.alg }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return p.k.priv.Public() }

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signing, nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []jose.SignatureAlgorithm{s.signing.alg}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]op.Key, 0, len(s.keys))
	for _, k := range s.keys {
		out = append(out, publicKey{k})
	}
	return out, nil
}

// Client credentials grant.

func (s *storage) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[id]; c != nil && c.Secret == secret {
		return opClient{c}, nil
	}
	return nil, errors.New("wrong client id or secret")
}

func (s *storage) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[id]
	if c == nil {
		return nil, errors.New("unknown client")
	}
	return &tokenRequest{client: c, scopes: scopes}, nil
}

type tokenRequest struct {
	client *Client
	scopes []string
}

func (r *tokenRequest) GetSubject() string    { return r.client.Subject }
func (r *tokenRequest) GetAudience() []string { return r.client.Audience }
func (r *tokenRequest) GetScopes() []string   { return r.scopes }

func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	tr, ok := req.(*tokenRequest)
	if !ok {
		return "", time.Time{}, errUnsupported
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := "t" + strconv.FormatInt(keySeq.Add(1), 10)
	exp := time.Now().Add(tr.client.lifetime())
	s.tokens[id] = &token{clientID: tr.client.ID, subject: tr.client.Subject, audience: tr.client.Audience, scopes: tr.scopes, exp: exp}
	return id, exp, nil
}

func (s *storage) GetPrivateClaimsFromScopes(_ context.Context, _, clientID string, _ []string) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[clientID]; c != nil {
		return c.Claims, nil
	}
	return nil, nil
}

// Introspection: the caller authenticates as a client; the answer is
// active while the token is known and unexpired.

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[id]; c != nil && c.Secret == secret {
		return nil
	}
	return errors.New("wrong client id or secret")
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[id]; c != nil {
		return opClient{c}, nil
	}
	return nil, errors.New("unknown client")
}

func (s *storage) SetIntrospectionFromToken(_ context.Context, resp *oidc.IntrospectionResponse, tokenID, _, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tokens[tokenID]
	if t == nil || time.Now().After(t.exp) {
		return errors.New("token not active")
	}
	resp.Subject = t.subject
	resp.Audience = t.audience
	resp.ClientID = t.clientID
	resp.Scope = t.scopes
	resp.Expiration = oidc.FromTime(t.exp)
	resp.TokenType = oidc.BearerToken
	if c := s.clients[t.clientID]; c != nil && len(c.Claims) > 0 {
		resp.Claims = c.Claims
	}
	return nil
}

func (s *storage) RevokeToken(_ context.Context, tokenID, _, _ string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, tokenID)
	return nil
}

// revokeSubject forgets every token issued to subject.
func (s *storage) revokeSubject(subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, t := range s.tokens {
		if t.subject == subject {
			delete(s.tokens, id)
		}
	}
}

func (s *storage) Health(context.Context) error { return nil }

// Unused by client credentials, keys and introspection.

func (s *storage) CreateAuthRequest(context.Context, *oidc.AuthRequest, string) (op.AuthRequest, error) {
	return nil, errUnsupported
}
func (s *storage) AuthRequestByID(context.Context, string) (op.AuthRequest, error) {
	return nil, errUnsupported
}
func (s *storage) AuthRequestByCode(context.Context, string) (op.AuthRequest, error) {
	return nil, errUnsupported
}
func (s *storage) SaveAuthCode(context.Context, string, string) error { return errUnsupported }
func (s *storage) DeleteAuthRequest(context.Context, string) error    { return errUnsupported }
func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errUnsupported
}
func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, errUnsupported
}
func (s *storage) TerminateSession(context.Context, string, string) error { return errUnsupported }
func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}
func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}
func (s *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return errUnsupported
}
func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errUnsupported
}
func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errUnsupported
}

// opClient is a Client as the provider sees it: confidential, client
// credentials only, JWT or opaque access tokens.
type opClient struct{ c *Client }

func (c opClient) GetID() string                       { return c.c.ID }
func (c opClient) RedirectURIs() []string              { return nil }
func (c opClient) PostLogoutRedirectURIs() []string    { return nil }
func (c opClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c opClient) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c opClient) ResponseTypes() []oidc.ResponseType  { return nil }
func (c opClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}
func (c opClient) LoginURL(string) string { return "" }
func (c opClient) AccessTokenType() op.AccessTokenType {
	if c.c.Opaque {
		return op.AccessTokenTypeBearer
	}
	return op.AccessTokenTypeJWT
}
func (c opClient) IDTokenLifetime() time.Duration { return time.Hour }
func (c opClient) DevMode() bool                  { return true }
func (c opClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c opClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c opClient) IsScopeAllowed(string) bool           { return true }
func (c opClient) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c opClient) ClockSkew() time.Duration             { return 0 }
