package hydra

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"sync"
	"testing"

	"golang.org/x/oauth2"
)

// tokenClient is the client AccessToken uses, created once per server.
const (
	tokenClientID     = "testsupport-tokens"
	tokenClientSecret = "testsupport-tokens-secret"
)

type tokenIssuer struct {
	once     sync.Once
	redirect string
	codes    chan string
}

// AccessToken signs sub in through the authorization code flow (PKCE) of
// a client of its own, asking for audience, and returns the access token:
// what an MCP client would get for that user.
func (s *Server) AccessToken(t testing.TB, sub, audience string) string {
	t.Helper()
	s.mu.Lock()
	if s.tokens == nil {
		s.tokens = &tokenIssuer{codes: make(chan string, 1)}
	}
	ti := s.tokens
	s.mu.Unlock()
	ti.once.Do(func() {
		cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ti.codes <- r.URL.Query().Get("code")
		}))
		t.Cleanup(cb.Close)
		ti.redirect = cb.URL + "/cb"
		s.CreateClient(t, Client{ID: tokenClientID, Secret: tokenClientSecret, RedirectURIs: []string{ti.redirect},
			Scopes: []string{"openid", "offline_access"}, Audience: []string{audience}})
	})
	conf := &oauth2.Config{ClientID: tokenClientID, ClientSecret: tokenClientSecret, RedirectURL: ti.redirect, Scopes: []string{"openid"},
		Endpoint: oauth2.Endpoint{AuthURL: s.Public + "/oauth2/auth", TokenURL: s.Public + "/oauth2/token", AuthStyle: oauth2.AuthStyleInHeader}}
	jar, _ := cookiejar.New(nil)
	s.SetSubject(jar, sub)
	v := oauth2.GenerateVerifier()
	s.tokenMu.Lock() // one flow at a time: the callback has one channel
	defer s.tokenMu.Unlock()
	resp, err := (&http.Client{Jar: jar}).Get(conf.AuthCodeURL("state-for-tests", oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("audience", audience)))
	if err != nil {
		t.Fatalf("hydra: token flow: %v", err)
	}
	resp.Body.Close()
	code := <-ti.codes
	tok, err := conf.Exchange(context.Background(), code, oauth2.VerifierOption(v))
	if err != nil {
		t.Fatalf("hydra: token exchange: %v", err)
	}
	return tok.AccessToken
}
