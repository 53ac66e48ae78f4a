package authserver

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// A grant is what a redeemed code leaves: who approved which client for
// which vhost, and the digest of the one refresh token that is current.
// A refresh token is "<grant id>.<secret>"; each use rotates the secret
// with a compare-and-swap on the grant's sealed record, so of two uses
// of one token (stolen and replayed, or raced) only one can succeed, and
// a token that is not the current one revokes the grant: the family
// (every token the grant issued) is refused from then on (OAuth 2.1
// §4.3.1). A grant lives refresh_token_ttl from its last rotation.

type grant struct {
	ClientID string         `json:"c"`
	Subject  string         `json:"sub"`
	Claims   map[string]any `json:"cl,omitempty"`
	Scopes   []string       `json:"sc,omitempty"`
	Resource string         `json:"res"`
	AuthTime time.Time      `json:"at,omitzero"`
	Secret   string         `json:"h"` // SHA-256 of the current refresh token's secret
	Rotated  time.Time      `json:"r"`
}

// refreshRequest is a grant found by its current refresh token.
type refreshRequest struct {
	family string
	g      grant
	blob   []byte // the sealed record, for the swap
	scopes []string
}

func (r *refreshRequest) GetAMR() []string            { return nil }
func (r *refreshRequest) GetAudience() []string       { return []string{r.g.Resource} }
func (r *refreshRequest) GetAuthTime() time.Time      { return r.g.AuthTime }
func (r *refreshRequest) GetClientID() string         { return r.g.ClientID }
func (r *refreshRequest) GetScopes() []string         { return r.scopes }
func (r *refreshRequest) GetSubject() string          { return r.g.Subject }
func (r *refreshRequest) SetCurrentScopes(s []string) { r.scopes = s }

// startGrant records the grant of a redeemed code and returns its first
// refresh token. The grant's id is the authorization request's, so a
// replayed code finds the grant to revoke.
func (s *Server) startGrant(ctx context.Context, a *authRequest) (string, error) {
	secret := randomID() + randomID()
	g := grant{ClientID: a.ClientID, Subject: a.Subject, Claims: a.Claims, Scopes: a.Scopes, Resource: a.Resource,
		AuthTime: a.AuthTime, Secret: hash(secret), Rotated: time.Now()}
	if err := s.rec.put(ctx, kindGrant, a.ID, g, s.o.Settings.RefreshTokenTTL); err != nil {
		return "", err
	}
	return a.ID + "." + secret, nil
}

// refreshRequest finds the grant of a refresh token; a token of the
// grant that is not its current one revokes it.
func (s *Server) refreshRequest(ctx context.Context, rt string) (*refreshRequest, error) {
	family, secret, ok := strings.Cut(rt, ".")
	if !ok || family == "" || secret == "" || len(rt) > 200 {
		return nil, errNotFound
	}
	r := &refreshRequest{family: family}
	blob, err := s.rec.get(ctx, kindGrant, family, &r.g)
	if err != nil {
		return nil, err
	}
	if hash(secret) != r.g.Secret {
		s.revokeFamily(ctx, family, "a refresh token was used again after it was rotated")
		return nil, errNotFound
	}
	r.blob, r.scopes = blob, r.g.Scopes
	return r, nil
}

// rotate replaces the grant's refresh token; a concurrent use of the same
// token loses the swap and revokes the grant.
func (s *Server) rotate(ctx context.Context, r *refreshRequest) (string, error) {
	secret := randomID() + randomID()
	next := r.g
	next.Secret, next.Rotated = hash(secret), time.Now()
	blob, err := s.rec.seal(kindGrant, r.family, next)
	if err != nil {
		return "", err
	}
	won, err := s.o.Store.SwapOAuthRecord(ctx, kindGrant, r.family, r.blob, blob, s.o.Settings.RefreshTokenTTL)
	if err != nil {
		return "", err
	}
	if !won {
		s.revokeFamily(ctx, r.family, "a refresh token was used twice at once")
		return "", oidc.ErrInvalidGrant().WithDescription("the refresh token was already used")
	}
	return r.family + "." + secret, nil
}

func (s *Server) revokeFamily(ctx context.Context, family, why string) {
	if err := s.o.Store.DeleteOAuthRecord(context.WithoutCancel(ctx), kindGrant, family); err != nil && !errors.Is(err, errNotFound) {
		s.o.Log.Warn("authorization server: a grant could not be revoked", "error", err)
		return
	}
	s.o.Log.Warn("authorization server: grant revoked: " + why)
}
