package authserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/mcpgw/gateway/router/credentials"
)

// The user signs in at the upstream identity provider through the
// gateway's own client there (auth.login: OIDC code flow with PKCE and a
// nonce). The authorization request is bound to the browser that starts
// the sign-in (a cookie whose keyed digest the request keeps), and the
// upstream state is sealed and used once, so a state carried to another
// browser, replayed or forged is refused before any code is exchanged.

const (
	flowCookie = "mcpgw_as_flow"
	cookiePath = "/oauth2"
)

// upstream is the identity provider and the gateway's client there.
type upstream struct {
	issuer, clientID, redirect string
	secret                     credentials.Secret
	scopes                     []string

	mu       sync.Mutex
	provider *oidc.Provider // discovered at the first sign-in
}

var upstreamHTTP = &http.Client{Timeout: 15 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (u *upstream) config(ctx context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	u.mu.Lock()
	p := u.provider
	u.mu.Unlock()
	if p == nil {
		var err error
		if p, err = oidc.NewProvider(oidc.ClientContext(context.WithoutCancel(ctx), upstreamHTTP), u.issuer); err != nil {
			return nil, nil, err
		}
		u.mu.Lock()
		u.provider = p
		u.mu.Unlock()
	}
	conf := &oauth2.Config{ClientID: u.clientID, ClientSecret: u.secret.Reveal(), RedirectURL: u.redirect,
		Endpoint: p.Endpoint(), Scopes: u.scopes}
	return conf, p.Verifier(&oidc.Config{ClientID: u.clientID}), nil
}

// upstreamState travels sealed through the identity provider.
type upstreamState struct {
	ID       string    `json:"i"`
	Request  string    `json:"r"` // the authorization request
	Browser  string    `json:"w"`
	Nonce    string    `json:"n"`
	Verifier string    `json:"k"`
	Exp      time.Time `json:"x"`
}

// login starts the upstream sign-in of an authorization request (the
// client's LoginURL).
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	a, err := s.authRequest(r.Context(), r.URL.Query().Get("id"))
	if err != nil || a.Authenticated {
		s.page(w, http.StatusBadRequest, "This sign-in cannot continue", "It expired or was already used. Start again from your MCP client.")
		return
	}
	conf, _, err := s.up.config(r.Context())
	if err != nil {
		s.o.Log.Warn("authorization server: the identity provider cannot be reached", "error", err)
		s.page(w, http.StatusBadGateway, "Sign-in is unavailable", "The gateway cannot reach its identity provider. Try again later.")
		return
	}
	browser := randomID()
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: browser, Path: cookiePath, HttpOnly: true, Secure: s.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(authRequestLife / time.Second)})
	a.Browser = s.rec.digest("browser", browser)
	if err := s.rec.put(r.Context(), kindRequest, a.ID, a, time.Until(a.Exp)); err != nil {
		s.unavailable(w, err)
		return
	}
	st := upstreamState{ID: randomID(), Request: a.ID, Browser: a.Browser, Nonce: randomID(), Verifier: oauth2.GenerateVerifier(), Exp: a.Exp}
	b, _ := json.Marshal(st)
	sealed := s.o.Sealer.SealString("as-upstream-state", "", b)
	http.Redirect(w, r, conf.AuthCodeURL(sealed, oidc.Nonce(st.Nonce), oauth2.S256ChallengeOption(st.Verifier)), http.StatusFound)
}

// callback finishes the upstream sign-in: the state is checked (sealed,
// unexpired, this browser's, used once) before the code is exchanged;
// the ID token is verified (signature, issuer, audience, expiry, nonce).
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	st, a, msg := s.openUpstreamState(r)
	if msg != "" {
		s.page(w, http.StatusBadRequest, "Sign-in failed", msg)
		return
	}
	// RFC 9207: a provider that names itself must name the one asked.
	if iss := q.Get("iss"); iss != "" && iss != s.up.issuer {
		s.page(w, http.StatusBadRequest, "Sign-in failed", "The answer came from another identity provider than the gateway's.")
		return
	}
	if e := q.Get("error"); e != "" {
		s.o.Log.Info("authorization server: the identity provider refused the sign-in", "error", truncate(e, 64),
			"error_description", truncate(q.Get("error_description"), 200))
		s.deny(w, r, a, "access_denied")
		return
	}
	conf, verifier, err := s.up.config(r.Context())
	if err != nil {
		s.page(w, http.StatusBadGateway, "Sign-in is unavailable", "The gateway cannot reach its identity provider. Try again later.")
		return
	}
	tok, err := conf.Exchange(oidc.ClientContext(r.Context(), upstreamHTTP), q.Get("code"), oauth2.VerifierOption(st.Verifier))
	if err != nil {
		s.o.Log.Info("authorization server: the identity provider refused the sign-in code")
		s.page(w, http.StatusBadGateway, "Sign-in failed", "The identity provider refused the sign-in.")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := verifier.Verify(r.Context(), raw)
	if err != nil || idt.Nonce != st.Nonce {
		s.page(w, http.StatusForbidden, "Sign-in failed", "The identity provider's answer could not be verified.")
		return
	}
	var all map[string]any
	_ = idt.Claims(&all)
	a.Subject, a.AuthTime, a.Authenticated = idt.Subject, time.Now(), true
	a.Claims = map[string]any{}
	for _, name := range s.o.Settings.Claims {
		if v, ok := all[name]; ok {
			a.Claims[name] = v
		}
	}
	s.afterSignIn(w, r, a)
}

// openUpstreamState checks a callback's state; msg says why it is
// refused.
func (s *Server) openUpstreamState(r *http.Request) (upstreamState, *authRequest, string) {
	var st upstreamState
	b, err := s.o.Sealer.OpenString("as-upstream-state", "", r.URL.Query().Get("state"))
	if err != nil || json.Unmarshal(b, &st) != nil || st.ID == "" {
		return st, nil, "The sign-in's state is not valid."
	}
	if !time.Now().Before(st.Exp) {
		return st, nil, "The sign-in took too long. Start again from your MCP client."
	}
	c, err := r.Cookie(flowCookie)
	if err != nil || s.rec.digest("browser", c.Value) != st.Browser {
		return st, nil, "This sign-in was started in another browser."
	}
	first, err := s.rec.once(r.Context(), "upstream/"+st.ID, time.Until(st.Exp)+time.Second)
	if err != nil || !first {
		return st, nil, "This sign-in step was already completed."
	}
	a, err := s.authRequest(r.Context(), st.Request)
	if err != nil || a.Browser != st.Browser || a.Authenticated {
		return st, nil, "This sign-in expired. Start again from your MCP client."
	}
	return st, a, ""
}

// deny ends an authorization request with an error for the client, at
// its (checked) redirect URI.
func (s *Server) deny(w http.ResponseWriter, r *http.Request, a *authRequest, code string) {
	_ = s.o.Store.DeleteOAuthRecord(r.Context(), kindRequest, a.ID)
	u, err := url.Parse(a.RedirectURI)
	if err != nil {
		s.page(w, http.StatusBadRequest, "Sign-in failed", "The client's redirect URI is not valid.")
		return
	}
	q := u.Query()
	q.Set("error", code)
	if a.State != "" {
		q.Set("state", a.State)
	}
	q.Set("iss", s.o.Issuer)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (s *Server) unavailable(w http.ResponseWriter, err error) {
	s.o.Log.Warn("authorization server: store unavailable", "error", err)
	s.page(w, http.StatusServiceUnavailable, "Sign-in is unavailable", "The gateway cannot complete sign-ins right now. Try again later.")
}
