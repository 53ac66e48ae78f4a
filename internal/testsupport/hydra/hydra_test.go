package hydra_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpgw/gateway/internal/testsupport/hydra"
)

// TestHydra_CodeFlowWithPKCEAsTheChosenSubject checks the fixture: a
// browser signs in as the subject the test names, PKCE is enforced, and
// access tokens expire when configured.
func TestHydra_CodeFlowWithPKCEAsTheChosenSubject(t *testing.T) {
	h := hydra.Start(t, hydra.Options{AccessTokenTTL: 3 * time.Second})
	codes := make(chan string, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		codes <- r.URL.Query().Get("code")
		_, _ = w.Write([]byte("ok"))
	}))
	defer cb.Close()
	h.CreateClient(t, hydra.Client{ID: "c1", Secret: "s1-secret", RedirectURIs: []string{cb.URL + "/cb"}, Scopes: []string{"openid", "offline_access"}})
	conf := &oauth2.Config{ClientID: "c1", ClientSecret: "s1-secret", RedirectURL: cb.URL + "/cb",
		Endpoint: oauth2.Endpoint{AuthURL: h.Public + "/oauth2/auth", TokenURL: h.Public + "/oauth2/token", AuthStyle: oauth2.AuthStyleInHeader},
		Scopes:   []string{"openid", "offline_access"}}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}

	// Without PKCE Hydra refuses.
	resp, err := browser.Get(conf.AuthCodeURL("state-123456"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case c := <-codes:
		if c != "" {
			t.Fatal("a code without PKCE")
		}
	default:
	}

	h.SetSubject(jar, "alice")
	verifier := oauth2.GenerateVerifier()
	resp, err = browser.Get(conf.AuthCodeURL("state-123456", oauth2.S256ChallengeOption(verifier)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	code := <-codes
	tok, err := conf.Exchange(context.Background(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if tok.RefreshToken == "" {
		t.Error("no refresh token for offline_access")
	}
	if d := time.Until(tok.Expiry); d > 4*time.Second {
		t.Errorf("access token lives %v, want about 3s", d)
	}
	active, sub, err := h.Introspect(context.Background(), tok.AccessToken)
	if err != nil || !active || sub != "alice" {
		t.Fatalf("introspect = %v %q %v; want active alice", active, sub, err)
	}
}
