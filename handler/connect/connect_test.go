package connect_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/handler/connect"
	"github.com/mcpgw/gateway/internal/testsupport/hydra"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/usertokens"
	"github.com/mcpgw/gateway/store"
)

// rig is two Ory Hydras (the gateway's own issuer and a third party)
// and two gateway "instances" (two handlers, two vaults) on one store:
// every step of a flow may land on either.
type rig struct {
	idp, third *hydra.Server
	settings   *credentials.Settings
	vaults     [2]*usertokens.Vault
	public     string
	store      store.Store
	log        *strings.Builder
}

const (
	loginSecret = "login-secret-0123456789"
	thirdSecret = "third-secret-0123456789"
)

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{log: &strings.Builder{}}
	r.idp = hydra.Start(t, hydra.Options{})
	r.third = hydra.Start(t, hydra.Options{AccessTokenTTL: time.Hour, Opaque: true})
	r.store = store.NewMemory()
	t.Cleanup(func() { r.store.Close() })
	sealer, err := usertokens.NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, r.log}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r.settings = &credentials.Settings{Grant: credentials.GrantUserOAuth, ClientID: "mcpgw", ClientSecret: thirdSecret,
		Scopes:    []string{"offline_access", "repo"},
		UserOAuth: &credentials.UserOAuth{Issuer: r.third.Issuer, TokenEndpointAuth: credentials.AuthClientSecretBasic, VHost: "v", Backend: "gh"}}
	var instances [2]http.Handler
	for i := range 2 {
		mux := http.NewServeMux()
		instances[i] = mux
		r.vaults[i] = usertokens.NewVault(r.store, sealer, "", log)
		h := connect.New(connect.Options{
			Vault: r.vaults[i], Issuer: r.idp.Issuer, ClientID: "mcpgw-login", ClientSecret: loginSecret, Scopes: []string{"openid"},
			Backend: func(vh, b string) *credentials.Settings {
				if vh == "v" && b == "gh" {
					return r.settings
				}
				return nil
			},
			Backends: func() [][2]string { return [][2]string{{"v", "gh"}} },
			Log:      log,
		})
		h.Register(mux)
	}
	var n int
	var nmu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		nmu.Lock()
		i := n % 2 // round robin: consecutive steps land on the other instance
		n++
		nmu.Unlock()
		instances[i].ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.public = srv.URL
	for _, v := range r.vaults {
		v.PublicURL = srv.URL
	}
	r.idp.CreateClient(t, hydra.Client{ID: "mcpgw-login", Secret: loginSecret, RedirectURIs: []string{srv.URL + "/oauth/callback"}, Scopes: []string{"openid"}})
	r.third.CreateClient(t, hydra.Client{ID: "mcpgw", Secret: thirdSecret, RedirectURIs: []string{srv.URL + "/oauth/callback"}, Scopes: []string{"offline_access", "repo"}})
	return r
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// browser is a scripted browser: a cookie jar, following redirects,
// signed in at the gateway's issuer as idpSub and at the third party as
// thirdSub.
func (r *rig) browser(idpSub, thirdSub string) *http.Client {
	jar, _ := cookiejar.New(nil)
	r.idp.SetSubject(jar, idpSub)
	r.third.SetSubject(jar, thirdSub)
	return &http.Client{Jar: jar, CheckRedirect: func(_ *http.Request, via []*http.Request) error {
		if len(via) >= 30 {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

func get(t *testing.T, c *http.Client, u string) (int, string, *url.URL) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Request.URL
}

func TestConnect_FlowAcrossInstancesStoresTheUsersOwnToken(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()

	// No token: the source asks for a sign-in with a link on public_url.
	_, err := r.vaults[0].UserToken(ctx, "alice", r.settings)
	sr, ok := err.(*credentials.SignInRequired)
	if !ok || !strings.HasPrefix(sr.URL, r.public+"/oauth/connect?l=") {
		t.Fatalf("without a token: %v, want SignInRequired with a link", err)
	}

	// Another user's browser opening alice's link is refused before the
	// third party: nothing stored, and the link is spent.
	_, err = r.vaults[1].UserToken(ctx, "alice", r.settings)
	wrong := err.(*credentials.SignInRequired)
	status, body, at := get(t, r.browser("mallory", "mallory-gh"), wrong.URL)
	if status != http.StatusForbidden || !strings.Contains(body, "another user") || at.Host != strings.TrimPrefix(r.public, "http://") {
		t.Fatalf("wrong user: %d at %s\n%s", status, at, body)
	}
	if names, _ := r.vaults[0].Names(ctx, "alice"); len(names) != 0 {
		t.Fatalf("a wrong user's sign-in stored %v", names)
	}

	// Tampered link.
	tampered := sr.URL[:len(sr.URL)-3] + "AAA"
	if status, _, _ := get(t, r.browser("alice", "alice-gh"), tampered); status != http.StatusBadRequest {
		t.Fatalf("tampered link: %d, want 400", status)
	}

	// alice connects.
	alice := r.browser("alice", "alice-gh")
	status, body, _ = get(t, alice, sr.URL)
	if status != http.StatusOK || !strings.Contains(body, "Connected") {
		t.Fatalf("connect: %d\n%s", status, body)
	}
	tok, err := r.vaults[1].UserToken(ctx, "alice", r.settings)
	if err != nil {
		t.Fatalf("after connecting: %v", err)
	}
	if active, sub, err := r.third.Introspect(ctx, tok); err != nil || !active || sub != "alice-gh" {
		t.Fatalf("the stored token: active %v sub %q (%v), want alice-gh's", active, sub, err)
	}
	if _, err := r.vaults[0].UserToken(ctx, "bob", r.settings); err == nil {
		t.Fatal("bob uses alice's token")
	}

	// The link is single-use.
	if status, _, _ := get(t, alice, sr.URL); status != http.StatusGone {
		t.Fatalf("reused link: %d, want 410", status)
	}

	// Refresh: the token is marked expired (as after a backend's 401);
	// both instances, concurrently, refresh it. The refresh token is
	// presented once (Hydra would revoke the grant on a second use), and
	// everyone gets the one new token.
	r.vaults[0].ForgetUserToken(ctx, "alice", r.settings)
	var wg sync.WaitGroup
	got := make(chan string, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, err := r.vaults[i%2].UserToken(ctx, "alice", r.settings)
			if err != nil {
				t.Errorf("refresh %d: %v", i, err)
			}
			got <- tk
		}()
	}
	wg.Wait()
	close(got)
	var fresh string
	for tk := range got {
		if fresh == "" {
			fresh = tk
		}
		if tk != fresh || tk == tok {
			t.Fatal("concurrent refreshes returned different or stale tokens")
		}
	}
	if active, _, _ := r.third.Introspect(ctx, fresh); !active {
		t.Fatal("the refreshed token is not active: the refresh token was presented twice")
	}
	// A refresh the provider refuses (the grant revoked there) leads
	// back to asking, and the token is gone.
	revokeAll(t, r.third, "alice-gh")
	r.vaults[1].ForgetUserToken(ctx, "alice", r.settings)
	if _, err := r.vaults[0].UserToken(ctx, "alice", r.settings); !errors.As(err, new(*credentials.SignInRequired)) {
		t.Fatalf("after a refused refresh: %v, want SignInRequired", err)
	}
	if names, _ := r.vaults[0].Names(ctx, "alice"); len(names) != 0 {
		t.Fatalf("a refused refresh kept %v", names)
	}
	_, err = r.vaults[0].UserToken(ctx, "alice", r.settings)
	if status, body, _ := get(t, alice, err.(*credentials.SignInRequired).URL); status != http.StatusOK {
		t.Fatalf("connecting again: %d %s", status, body)
	}
	if fresh, err = r.vaults[0].UserToken(ctx, "alice", r.settings); err != nil {
		t.Fatal(err)
	}

	// The connections page: list, disconnect (revoked at the provider).
	status, body, _ = get(t, alice, r.public+"/oauth/connections")
	if status != http.StatusOK || !strings.Contains(body, "v/gh") || !strings.Contains(body, ">connected<") {
		t.Fatalf("connections: %d\n%s", status, body)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if csrf == nil {
		t.Fatalf("no csrf field:\n%s", body)
	}
	if resp, err := alice.PostForm(r.public+"/oauth/connections", url.Values{"backend": {"v/gh"}, "csrf": {"forged"}}); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("forged csrf: %v %v", resp.StatusCode, err)
	}
	resp, err := alice.PostForm(r.public+"/oauth/connections", url.Values{"backend": {"v/gh"}, "csrf": {csrf[1]}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), ">not connected<") {
		t.Fatalf("after disconnect: %d\n%s", resp.StatusCode, b)
	}
	if names, _ := r.vaults[0].Names(ctx, "alice"); len(names) != 0 {
		t.Fatalf("still stored: %v", names)
	}
	if active, _, _ := r.third.Introspect(ctx, fresh); active {
		t.Fatal("disconnect did not revoke the grant at the provider")
	}

	// Nothing secret in the logs or the store.
	for _, secret := range []string{tok, fresh, loginSecret, thirdSecret} {
		if strings.Contains(r.log.String(), secret) {
			t.Fatalf("the log holds a secret")
		}
	}
}

// revokeAll revokes every consent, and so every token, sub has at h.
func revokeAll(t *testing.T, h *hydra.Server, sub string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, h.Admin+"/admin/oauth2/auth/sessions/consent?all=true&subject="+url.QueryEscape(sub), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("revoke %s: %v %v", sub, resp, err)
	}
	resp.Body.Close()
}

// RFC 9207: the third party's answer, carried to the callback with an
// iss naming another server (a mix-up), is refused before its code is
// exchanged; nothing is stored. The same answer with the right issuer
// would have connected.
func TestConnect_IssuerMixUpRefused(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	_, err := r.vaults[0].UserToken(ctx, "alice", r.settings)
	sr := err.(*credentials.SignInRequired)
	alice := r.browser("alice", "alice-gh")
	var answer *url.URL
	alice.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		// Stop at the third party's redirect back to the gateway.
		if req.URL.Path == "/oauth/callback" && len(via) > 0 && strings.HasPrefix(via[len(via)-1].URL.String(), r.third.Public) {
			answer = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}
	get(t, alice, sr.URL)
	if answer == nil {
		t.Fatal("the flow never reached the third party's answer")
	}
	q := answer.Query()
	if iss := q.Get("iss"); iss != "" && iss != r.third.Issuer {
		t.Fatalf("the third party names itself %q, want %q", iss, r.third.Issuer)
	}
	q.Set("iss", "https://evil.example/")
	answer.RawQuery = q.Encode()
	alice.CheckRedirect = nil
	status, body, _ := get(t, alice, answer.String())
	if status != http.StatusBadRequest || !strings.Contains(body, "another authorization server") {
		t.Fatalf("mixed-up answer: %d %s", status, body)
	}
	if names, _ := r.vaults[0].Names(ctx, "alice"); len(names) != 0 {
		t.Fatalf("a mixed-up answer stored %v", names)
	}
}
