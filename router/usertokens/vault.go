package usertokens

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/store"
)

// Lifetimes.
const (
	// LinkLifetime bounds a connect link, and the flow it starts.
	LinkLifetime = 10 * time.Minute
	// refreshSkew: a token this close to its expiry is refreshed first.
	refreshSkew = 5 * time.Second
	// keepWithRefresh is how long a token with a refresh token is kept
	// (the provider decides when the refresh token dies; a refused
	// refresh leads back to sign-in).
	keepWithRefresh = 90 * 24 * time.Hour
	// lockTTL bounds one refresh: a holder that dies frees the lock then.
	lockTTL = 15 * time.Second
	// waitPoll is how often an instance that did not get the refresh lock
	// looks for the refreshed token (the store has no signal for it).
	waitPoll = 50 * time.Millisecond
)

// Vault is the user_oauth token source: credentials.UserTokenSource.
type Vault struct {
	Store     store.UserTokens
	Sealer    *Sealer
	PublicURL string // no trailing slash
	Log       *slog.Logger
	// HTTP is the client for token and revocation endpoints (redirects
	// not followed: they would resend the client secret).
	HTTP *http.Client
	// Now is the clock (tests move it to expire tokens early).
	Now  func() time.Time
	prov providers
}

// NewVault builds a vault.
func NewVault(st store.UserTokens, s *Sealer, publicURL string, log *slog.Logger) *Vault {
	if log == nil {
		log = slog.Default()
	}
	hc := &http.Client{Timeout: 15 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Vault{Store: st, Sealer: s, PublicURL: strings.TrimRight(publicURL, "/"), Log: log, HTTP: hc, prov: providers{hc: hc}, Now: time.Now}
}

// Token is what is sealed per user and backend.
type Token struct {
	Access  string    `json:"a"`
	Refresh string    `json:"r,omitempty"`
	Type    string    `json:"t,omitempty"`
	Expiry  time.Time `json:"e,omitzero"`
	// RefreshAt is when the token is refreshed: shortly before Expiry (a
	// quarter of its lifetime, at most refreshSkew), set by Put.
	RefreshAt time.Time `json:"f,omitzero"`
}

// Name is a token's name in its owner's group: vhost and backend.
func Name(vhost, backend string) string { return vhost + "/" + backend }

// Endpoints returns a backend's authorization server endpoints.
func (v *Vault) Endpoints(ctx context.Context, s *credentials.Settings) (Endpoints, error) {
	return v.prov.endpoints(ctx, s)
}

// RedirectURL is the one redirect URI of every flow.
func (v *Vault) RedirectURL() string { return v.PublicURL + "/oauth/callback" }

// ctx is ctx with the vault's HTTP client, which x/oauth2 takes from the
// context only (oauth2.HTTPClient).
func (v *Vault) ctx(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, v.HTTP)
}

// Link is what a connect link holds, sealed: who may use it, for what,
// until when.
type Link struct {
	ID        string    `json:"i"`
	Principal string    `json:"p"`
	VHost     string    `json:"v"`
	Backend   string    `json:"b"`
	Exp       time.Time `json:"x"`
}

// ConnectURL mints a connect link for principal and backend: sealed,
// short-lived, single-use (handler/connect consumes it).
func (v *Vault) ConnectURL(principal, vhost, backend string) (link Link, u string) {
	link = Link{ID: RandomID(), Principal: principal, VHost: vhost, Backend: backend, Exp: v.Now().Add(LinkLifetime).Truncate(time.Second)}
	b, _ := json.Marshal(link)
	return link, v.PublicURL + "/oauth/connect?l=" + v.Sealer.SealString("link", "", b)
}

// OpenLink opens a connect link's sealed value; an expired or tampered
// one is refused. It does not consume it.
func (v *Vault) OpenLink(sealed string) (Link, error) {
	var l Link
	b, err := v.Sealer.OpenString("link", "", sealed)
	if err != nil {
		return l, err
	}
	if err := json.Unmarshal(b, &l); err != nil || l.ID == "" {
		return l, errSealed
	}
	if !v.Now().Before(l.Exp) {
		return l, errors.New("usertokens: the link has expired")
	}
	return l, nil
}

// Put seals tok and stores it for principal and backend.
func (v *Vault) Put(ctx context.Context, principal, vhost, backend string, tok Token) error {
	owner, name := v.Sealer.Owner(principal), Name(vhost, backend)
	if tok.RefreshAt.IsZero() && !tok.Expiry.IsZero() {
		tok.RefreshAt = tok.Expiry.Add(-min(refreshSkew, max(0, tok.Expiry.Sub(v.Now()))/4))
	}
	b, err := json.Marshal(tok)
	if err != nil {
		return err
	}
	ttl := keepWithRefresh
	if tok.Refresh == "" {
		if tok.Expiry.IsZero() {
			ttl = time.Hour
		} else {
			ttl = max(time.Second, tok.Expiry.Sub(v.Now()))
		}
	}
	return v.Store.PutUserToken(ctx, owner, name, v.Sealer.Seal("token", owner+"/"+name, b), ttl)
}

// Get reads principal's token at a backend; ok is false when there is none.
func (v *Vault) Get(ctx context.Context, principal, vhost, backend string) (Token, bool, error) {
	var tok Token
	owner, name := v.Sealer.Owner(principal), Name(vhost, backend)
	blob, ok, err := v.Store.UserToken(ctx, owner, name)
	if err != nil || !ok {
		return tok, false, err
	}
	plain, err := v.Sealer.Open("token", owner+"/"+name, blob)
	if err != nil {
		// Sealed under another key (rotated) or damaged: unusable; the
		// user signs in again.
		v.Log.Warn("user token cannot be opened: the user must sign in again", "vhost", vhost, "backend", backend, "key_id", v.Sealer.KeyID())
		return tok, false, nil
	}
	if err := json.Unmarshal(plain, &tok); err != nil || tok.Access == "" {
		return tok, false, nil
	}
	return tok, true, nil
}

// Names lists principal's connected backends as "vhost/backend".
func (v *Vault) Names(ctx context.Context, principal string) ([]string, error) {
	return v.Store.UserTokenNames(ctx, v.Sealer.Owner(principal))
}

// Delete forgets principal's token at a backend.
func (v *Vault) Delete(ctx context.Context, principal, vhost, backend string) error {
	return v.Store.DeleteUserToken(ctx, v.Sealer.Owner(principal), Name(vhost, backend))
}

// signIn is the answer when principal has no usable token.
func (v *Vault) signIn(principal string, s *credentials.Settings) error {
	l, u := v.ConnectURL(principal, s.UserOAuth.VHost, s.UserOAuth.Backend)
	return &credentials.SignInRequired{VHost: l.VHost, Backend: l.Backend, URL: u, ID: l.ID}
}

// UserToken implements credentials.UserTokenSource.
func (v *Vault) UserToken(ctx context.Context, principal string, s *credentials.Settings) (string, error) {
	vhost, backend := s.UserOAuth.VHost, s.UserOAuth.Backend
	tok, ok, err := v.Get(ctx, principal, vhost, backend)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", v.signIn(principal, s)
	case v.fresh(tok):
		return tok.Access, nil
	case tok.Refresh == "":
		_ = v.Delete(ctx, principal, vhost, backend)
		return "", v.signIn(principal, s)
	}
	return v.refresh(ctx, principal, s, tok)
}

func (v *Vault) fresh(tok Token) bool {
	switch {
	case !tok.RefreshAt.IsZero():
		return v.Now().Before(tok.RefreshAt)
	case !tok.Expiry.IsZero():
		return v.Now().Add(refreshSkew).Before(tok.Expiry)
	}
	return true
}

// refresh exchanges the refresh token of an expired token, once across
// the fleet: the instance that takes the lock refreshes; the others wait
// for the token it stores. A refused refresh (revoked, expired) deletes
// the token: the user signs in again.
func (v *Vault) refresh(ctx context.Context, principal string, s *credentials.Settings, stale Token) (string, error) {
	vhost, backend := s.UserOAuth.VHost, s.UserOAuth.Backend
	lock, holder := "refresh/"+v.Sealer.Owner(principal)+"/"+Name(vhost, backend), RandomID()
	deadline := v.Now().Add(lockTTL)
	for {
		got, err := v.Store.LockUserToken(ctx, lock, holder, lockTTL)
		if err != nil {
			return "", err
		}
		tok, ok, err := v.Get(ctx, principal, vhost, backend)
		switch {
		case err != nil:
			v.unlock(got, lock, holder)
			return "", err
		case !ok:
			v.unlock(got, lock, holder)
			return "", v.signIn(principal, s)
		case tok.Access != stale.Access && v.fresh(tok):
			v.unlock(got, lock, holder) // another instance refreshed it
			return tok.Access, nil
		case got:
			defer v.unlock(true, lock, holder)
			return v.refreshHeld(ctx, principal, s, tok)
		}
		if !v.Now().Before(deadline) {
			return "", errors.New("usertokens: another instance's token refresh did not finish")
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(waitPoll):
		}
	}
}

func (v *Vault) unlock(held bool, lock, holder string) {
	if held {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = v.Store.UnlockUserToken(ctx, lock, holder)
	}
}

func (v *Vault) refreshHeld(ctx context.Context, principal string, s *credentials.Settings, tok Token) (string, error) {
	vhost, backend := s.UserOAuth.VHost, s.UserOAuth.Backend
	e, err := v.Endpoints(ctx, s)
	if err != nil {
		return "", fmt.Errorf("backend %s: %w", backend, err)
	}
	conf := OAuth2Config(s, e, v.RedirectURL())
	nt, err := conf.TokenSource(v.ctx(ctx), &oauth2.Token{RefreshToken: tok.Refresh, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			// Revoked or expired grant: forget it, ask again. The
			// provider's answer is not quoted (it may echo the token).
			v.Log.Info("user token refresh refused: the user must sign in again", "vhost", vhost, "backend", backend, "status", re.Response.StatusCode, "error_code", re.ErrorCode)
			_ = v.Delete(ctx, principal, vhost, backend)
			return "", v.signIn(principal, s)
		}
		return "", fmt.Errorf("backend %s: token refresh failed: %s", backend, errorClass(err))
	}
	out := Token{Access: nt.AccessToken, Refresh: nt.RefreshToken, Type: nt.TokenType, Expiry: nt.Expiry}
	if out.Refresh == "" {
		out.Refresh = tok.Refresh // a provider that does not rotate refresh tokens
	}
	if err := v.Put(ctx, principal, vhost, backend, out); err != nil {
		return "", err
	}
	v.Log.Debug("user token refreshed", "vhost", vhost, "backend", backend)
	return out.Access, nil
}

// errorClass names an HTTP failure without its URL's query or any body.
func errorClass(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + " failed: " + ue.Err.Error()
	}
	return "unexpected answer"
}

// ForgetUserToken implements credentials.UserTokenSource: the backend
// refused the token (401) before its expiry; it is marked expired so the
// next request refreshes it (or asks again).
func (v *Vault) ForgetUserToken(ctx context.Context, principal string, s *credentials.Settings) {
	vhost, backend := s.UserOAuth.VHost, s.UserOAuth.Backend
	tok, ok, err := v.Get(ctx, principal, vhost, backend)
	if err != nil || !ok {
		return
	}
	if tok.Refresh == "" {
		_ = v.Delete(ctx, principal, vhost, backend)
		return
	}
	tok.Expiry, tok.RefreshAt = time.Unix(1, 0), time.Unix(1, 0)
	_ = v.Put(ctx, principal, vhost, backend, tok)
}

// Revoke revokes tok at the provider (RFC 7009) when it has a
// revocation endpoint: the refresh token (which ends the grant) or else
// the access token.
func (v *Vault) Revoke(ctx context.Context, s *credentials.Settings, tok Token) error {
	e, err := v.Endpoints(ctx, s)
	if err != nil || e.Revocation == "" {
		return err
	}
	form := url.Values{}
	if tok.Refresh != "" {
		form.Set("token", tok.Refresh)
		form.Set("token_type_hint", "refresh_token")
	} else {
		form.Set("token", tok.Access)
		form.Set("token_type_hint", "access_token")
	}
	if s.UserOAuth.TokenEndpointAuth == credentials.AuthClientSecretPost {
		form.Set("client_id", s.ClientID)
		form.Set("client_secret", s.ClientSecret.Reveal())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.Revocation, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if s.UserOAuth.TokenEndpointAuth != credentials.AuthClientSecretPost {
		req.SetBasicAuth(url.QueryEscape(s.ClientID), url.QueryEscape(s.ClientSecret.Reveal()))
	}
	resp, err := v.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("revocation: %s", errorClass(err))
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revocation: %s", resp.Status)
	}
	return nil
}

// CtxClient returns ctx carrying the vault's HTTP client for x/oauth2
// and go-oidc.
func (v *Vault) CtxClient(ctx context.Context) context.Context { return v.ctx(ctx) }
