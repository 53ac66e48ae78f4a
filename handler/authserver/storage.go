package authserver

import (
	"context"
	"errors"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the OpenID provider's op.Storage over the store: every
// method reads or writes sealed records (records.go), nothing stays in
// the process but the signing keys' cache.
type storage struct{ s *Server }

var (
	_ op.Storage                        = (*storage)(nil)
	_ op.CanGetPrivateClaimsFromRequest = (*storage)(nil)
)

// authRequest is an authorization request in flight: what the client
// asked, then who signed in upstream and whether they approved.
type authRequest struct {
	ID            string         `json:"id"`
	ClientID      string         `json:"c"`
	RedirectURI   string         `json:"r"`
	State         string         `json:"st,omitempty"`
	Nonce         string         `json:"n,omitempty"`
	Scopes        []string       `json:"sc,omitempty"`
	ResponseMode  string         `json:"rm,omitempty"`
	Challenge     string         `json:"pc"`
	Resource      string         `json:"res"`
	Browser       string         `json:"b,omitempty"` // keyed digest of the flow cookie
	Subject       string         `json:"sub,omitempty"`
	Claims        map[string]any `json:"cl,omitempty"`
	AuthTime      time.Time      `json:"at,omitzero"`
	Authenticated bool           `json:"au,omitempty"`
	Approved      bool           `json:"ap,omitempty"`
	Exp           time.Time      `json:"x"`
}

func (a *authRequest) GetID() string         { return a.ID }
func (a *authRequest) GetACR() string        { return "" }
func (a *authRequest) GetAMR() []string      { return nil }
func (a *authRequest) GetAudience() []string { return []string{a.Resource} }
func (a *authRequest) GetAuthTime() time.Time {
	return a.AuthTime
}
func (a *authRequest) GetClientID() string { return a.ClientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	return &oidc.CodeChallenge{Challenge: a.Challenge, Method: oidc.CodeChallengeMethodS256}
}
func (a *authRequest) GetNonce() string                   { return a.Nonce }
func (a *authRequest) GetRedirectURI() string             { return a.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return oidc.ResponseTypeCode }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return oidc.ResponseMode(a.ResponseMode) }
func (a *authRequest) GetScopes() []string                { return a.Scopes }
func (a *authRequest) GetState() string                   { return a.State }
func (a *authRequest) GetSubject() string                 { return a.Subject }
func (a *authRequest) Done() bool                         { return a.Authenticated && a.Approved }

type resourceKey struct{}

// CreateAuthRequest stores a validated request (authorize.go checked it
// and put its resource in the context).
func (st *storage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	resource, _ := ctx.Value(resourceKey{}).(string)
	if resource == "" {
		return nil, oidc.ErrInvalidTarget().WithDescription("resource is required")
	}
	a := &authRequest{ID: randomID(), ClientID: req.ClientID, RedirectURI: req.RedirectURI, State: req.State, Nonce: req.Nonce,
		Scopes: req.Scopes, ResponseMode: string(req.ResponseMode), Challenge: req.CodeChallenge, Resource: resource,
		Exp: time.Now().Add(authRequestLife)}
	if err := st.s.rec.put(ctx, kindRequest, a.ID, a, authRequestLife); err != nil {
		return nil, err
	}
	return a, nil
}

func (st *storage) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	return st.s.authRequest(ctx, id)
}

// authRequest reads a request in flight.
func (s *Server) authRequest(ctx context.Context, id string) (*authRequest, error) {
	if id == "" || len(id) > 64 {
		return nil, errNotFound
	}
	var a authRequest
	if _, err := s.rec.get(ctx, kindRequest, id, &a); err != nil {
		return nil, err
	}
	if a.ID != id || !time.Now().Before(a.Exp) {
		return nil, errNotFound
	}
	return &a, nil
}

// AuthRequestByCode redeems a code, once: a second redemption finds the
// code used, and revokes what the first one got (RFC 6749 §4.1.2, OAuth
// 2.1 §4.1.3).
func (st *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s := st.s
	key := s.rec.digest("code", code)
	var id string
	if err := s.rec.take(ctx, kindCode, key, &id); err != nil {
		var family string
		if errors.Is(err, errNotFound) {
			if _, uerr := s.rec.get(ctx, kindUsed, key, &family); uerr == nil && family != "" {
				_ = s.o.Store.DeleteOAuthRecord(ctx, kindGrant, family)
				s.o.Log.Warn("authorization server: an authorization code was presented twice: its grant is revoked")
			}
		}
		return nil, err
	}
	_ = s.rec.put(ctx, kindUsed, key, id, authRequestLife)
	a, err := s.authRequest(ctx, id)
	if err != nil {
		return nil, err
	}
	if !a.Done() {
		return nil, errNotFound
	}
	return a, nil
}

func (st *storage) SaveAuthCode(ctx context.Context, id, code string) error {
	return st.s.rec.put(ctx, kindCode, st.s.rec.digest("code", code), id, codeLife)
}

func (st *storage) DeleteAuthRequest(ctx context.Context, id string) error {
	return st.s.o.Store.DeleteOAuthRecord(ctx, kindRequest, id)
}

// CreateAccessToken names an access token of a client without refresh
// tokens.
func (st *storage) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	st.touchClient(ctx, req)
	return "at." + randomID(), time.Now().Add(st.s.o.Settings.AccessTokenTTL), nil
}

// CreateAccessAndRefreshTokens starts a grant (a code redeemed) or
// rotates its refresh token (grants.go).
func (st *storage) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, _ string) (string, string, time.Time, error) {
	st.touchClient(ctx, req)
	exp := time.Now().Add(st.s.o.Settings.AccessTokenTTL)
	switch r := req.(type) {
	case *authRequest:
		rt, err := st.s.startGrant(ctx, r)
		if err != nil {
			return "", "", time.Time{}, err
		}
		return r.ID + "." + randomID(), rt, exp, nil
	case *refreshRequest:
		rt, err := st.s.rotate(ctx, r)
		if err != nil {
			return "", "", time.Time{}, err
		}
		return r.family + "." + randomID(), rt, exp, nil
	}
	return "", "", time.Time{}, oidc.ErrUnsupportedGrantType()
}

func (st *storage) touchClient(ctx context.Context, req op.TokenRequest) {
	id := ""
	switch r := req.(type) {
	case *authRequest:
		id = r.ClientID
	case *refreshRequest:
		id = r.g.ClientID
	}
	if c, err := st.s.lookupClient(ctx, id); err == nil {
		st.s.used(ctx, c)
	}
}

func (st *storage) TokenRequestByRefreshToken(ctx context.Context, rt string) (op.RefreshTokenRequest, error) {
	return st.s.refreshRequest(ctx, rt)
}

func (st *storage) TerminateSession(context.Context, string, string) error { return nil }

// RevokeToken ends a grant (RFC 7009): named by a refresh token's family
// (GetRefreshTokenInfo found it) or an access token's id. Access tokens
// already issued stay valid until they expire (a JWT is checked without
// the store). A token of another client, or none known, is no error.
func (st *storage) RevokeToken(ctx context.Context, tokenOrID, userID, clientID string) *oidc.Error {
	if userID == "" {
		return nil // not a token of this server's
	}
	family, _, _ := strings.Cut(tokenOrID, ".")
	var g grant
	if _, err := st.s.rec.get(ctx, kindGrant, family, &g); err != nil || g.ClientID != clientID || g.Subject != userID {
		return nil
	}
	if err := st.s.o.Store.DeleteOAuthRecord(ctx, kindGrant, family); err != nil {
		return oidc.ErrServerError()
	}
	st.s.o.Log.Info("authorization server: grant revoked", "client_id", clientID)
	return nil
}

func (st *storage) GetRefreshTokenInfo(ctx context.Context, clientID, token string) (string, string, error) {
	r, err := st.s.refreshRequest(ctx, token)
	if err != nil || r.g.ClientID != clientID {
		return "", "", op.ErrInvalidRefreshToken
	}
	return r.g.Subject, r.family, nil
}

func (st *storage) SigningKey(ctx context.Context) (op.SigningKey, error) {
	return st.s.keys.signing(ctx)
}

func (st *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.ES256}, nil
}

func (st *storage) KeySet(ctx context.Context) ([]op.Key, error) { return st.s.keys.set(ctx) }

func (st *storage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := st.s.lookupClient(ctx, id)
	if err != nil {
		return nil, errors.New("unknown client")
	}
	return c, nil
}

func (st *storage) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	c, err := st.s.lookupClient(ctx, id)
	if err != nil || !c.secretOK(secret) {
		return errors.New("client authentication failed")
	}
	return nil
}

func (st *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}
func (st *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return nil
}
func (st *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return nil
}
func (st *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

// GetPrivateClaimsFromRequest are an access token's own claims: the
// upstream claims the config copies, and the granted scopes.
func (st *storage) GetPrivateClaimsFromRequest(_ context.Context, req op.TokenRequest, _ []string) (map[string]any, error) {
	var claims map[string]any
	switch r := req.(type) {
	case *authRequest:
		claims = r.Claims
	case *refreshRequest:
		claims = r.g.Claims
	}
	out := make(map[string]any, len(claims)+1)
	for k, v := range claims {
		out[k] = v
	}
	var scopes []string
	for _, sc := range req.GetScopes() {
		if sc != oidc.ScopeOfflineAccess && sc != oidc.ScopeOpenID {
			scopes = append(scopes, sc)
		}
	}
	out["scope"] = strings.Join(scopes, " ")
	return out, nil
}

func (st *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("not supported")
}
func (st *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("not supported")
}
func (st *storage) Health(context.Context) error { return nil }
