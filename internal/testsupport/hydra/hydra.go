// Package hydra runs Ory Hydra (built by scripts/hydra.sh into
// .cache/hydra) as a real OAuth 2.0 / OpenID Connect server for tests,
// with a login and consent app of our own: the test picks the subject a
// browser signs in as, and every consent is granted.
//
// Under -short the tests that need it skip; in full mode a missing
// binary is a failure that says how to build it.
package hydra

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// Version is the Hydra release scripts/hydra.sh builds.
const Version = "v2.3.0"

// SubjectCookie is the prefix of the cookie, on the login app's origin,
// that names the subject a browser signs in as: a scripted browser sets
// it in its jar (SetSubject), so two browsers are two users. Cookies do
// not tell ports apart, so each server's cookie has its own name.
const SubjectCookie = "test_subject_"

// Options tune one Hydra.
type Options struct {
	// AccessTokenTTL is the access tokens' lifetime (default 1h).
	AccessTokenTTL time.Duration
	// Opaque issues opaque access tokens instead of JWTs.
	Opaque bool
}

// Server is a running Hydra with its login and consent app.
type Server struct {
	// Issuer is the public URL with a trailing slash, as Hydra names
	// itself in tokens and metadata.
	Issuer string
	// Public and Admin are the base URLs of the two ports.
	Public, Admin string
	// LoginApp is the login and consent app's base URL.
	LoginApp string

	cmd     *exec.Cmd
	cookie  string
	out     *bytes.Buffer
	mu      sync.Mutex
	tokens  *tokenIssuer
	tokenMu sync.Mutex
}

// Binary returns the path of the Hydra binary, skipping t under -short
// and failing it when the binary is missing.
func Binary(t testing.TB) string {
	t.Helper()
	testsupport.SkipShort(t)
	dir := os.Getenv("MCPGW_HYDRA_CACHE")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "..", "..", ".cache", "hydra")
	}
	bin := filepath.Join(dir, "hydra-"+Version)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("hydra: %s not found: run ./scripts/hydra.sh (make test does) to build Ory Hydra %s", bin, Version)
	}
	return bin
}

// Start runs a Hydra on free ports with an in-memory database and its
// login and consent app; both stop when t ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	bin := Binary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := &loginApp{cookie: SubjectCookie + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}
	appSrv := &http.Server{Handler: app, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = appSrv.Serve(ln) }()
	t.Cleanup(func() { _ = appSrv.Close() })

	pub, adm := testsupport.FreePort(t), testsupport.FreePort(t)
	s := &Server{
		Issuer:   fmt.Sprintf("http://127.0.0.1:%d/", pub),
		Public:   fmt.Sprintf("http://127.0.0.1:%d", pub),
		Admin:    fmt.Sprintf("http://127.0.0.1:%d", adm),
		LoginApp: "http://" + ln.Addr().String(),
		out:      &bytes.Buffer{},
	}
	app.admin = s.Admin
	s.cookie = app.cookie
	ttl := o.AccessTokenTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	strategy := "jwt"
	if o.Opaque {
		strategy = "opaque"
	}
	cmd := exec.Command(bin, "serve", "all", "--dev", "--sqa-opt-out")
	dieWithParent(cmd)
	cmd.Env = append(os.Environ(),
		"DSN=memory",
		"SERVE_PUBLIC_HOST=127.0.0.1", "SERVE_PUBLIC_PORT="+strconv.Itoa(pub),
		"SERVE_ADMIN_HOST=127.0.0.1", "SERVE_ADMIN_PORT="+strconv.Itoa(adm),
		"URLS_SELF_ISSUER="+s.Issuer,
		"URLS_LOGIN="+s.LoginApp+"/login",
		"URLS_CONSENT="+s.LoginApp+"/consent",
		"STRATEGIES_ACCESS_TOKEN="+strategy,
		"TTL_ACCESS_TOKEN="+ttl.String(),
		"OAUTH2_PKCE_ENFORCED=true",
		"LOG_LEVEL=warn",
		"SECRETS_SYSTEM=this-is-a-test-only-system-secret-32b",
	)
	cmd.Stdout, cmd.Stderr = &lockedWriter{s: s}, &lockedWriter{s: s}
	if err := cmd.Start(); err != nil {
		t.Fatalf("hydra: start: %v", err)
	}
	s.cmd = cmd
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("hydra %s output:\n%s", s.Issuer, s.Output())
		}
	})
	// Hydra gives no sign it is ready but answering its health check.
	if !testsupport.Eventually(t, 30*time.Second, func() bool {
		select {
		case <-done:
			return true
		default:
		}
		return s.healthy(s.Public) && s.healthy(s.Admin)
	}) {
		t.Fatalf("hydra did not become ready within 30s:\n%s", s.Output())
	}
	select {
	case <-done:
		t.Fatalf("hydra exited at start:\n%s", s.Output())
	default:
	}
	return s
}

func (s *Server) healthy(base string) bool {
	resp, err := http.Get(base + "/health/ready")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Output is what Hydra printed so far.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

type lockedWriter struct{ s *Server }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.out.Write(p)
}

// Client is an OAuth client to create.
type Client struct {
	ID, Secret   string
	RedirectURIs []string
	Scopes       []string
	// AuthMethod is client_secret_basic (default) or client_secret_post.
	AuthMethod string
	// GrantTypes default to authorization_code and refresh_token.
	GrantTypes []string
	// Audience, optional, is the audiences the client may ask for.
	Audience []string
}

// CreateClient registers c through the admin API.
func (s *Server) CreateClient(t testing.TB, c Client) {
	t.Helper()
	if c.AuthMethod == "" {
		c.AuthMethod = "client_secret_basic"
	}
	if c.GrantTypes == nil {
		c.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	body := map[string]any{
		"client_id": c.ID, "client_secret": c.Secret,
		"redirect_uris": c.RedirectURIs, "grant_types": c.GrantTypes,
		"response_types": []string{"code"}, "scope": strings.Join(c.Scopes, " "),
		"token_endpoint_auth_method": c.AuthMethod, "audience": c.Audience,
	}
	if err := adminJSON(context.Background(), http.MethodPost, s.Admin+"/admin/clients", body, nil); err != nil {
		t.Fatalf("hydra: create client %s: %v", c.ID, err)
	}
}

// Introspect asks Hydra whether token is active (RFC 7662 on the admin
// port), returning its subject when it is.
func (s *Server) Introspect(ctx context.Context, token string) (active bool, sub string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Admin+"/admin/oauth2/introspect",
		strings.NewReader(url.Values{"token": {token}}.Encode()))
	if err != nil {
		return false, "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, "", err
	}
	defer resp.Body.Close()
	var v struct {
		Active bool   `json:"active"`
		Sub    string `json:"sub"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return false, "", err
	}
	return v.Active, v.Sub, nil
}

// SetGroups makes the ID tokens s issues to the browser whose jar this is
// carry a groups claim (names without dots).
func (s *Server) SetGroups(jar http.CookieJar, groups ...string) {
	u, _ := url.Parse(s.LoginApp)
	jar.SetCookies(u, []*http.Cookie{{Name: s.cookie + "_groups", Value: strings.Join(groups, "."), Path: "/"}})
}

// SetSubject makes the browser whose jar this is sign in at s as sub.
func (s *Server) SetSubject(jar http.CookieJar, sub string) {
	u, _ := url.Parse(s.LoginApp)
	jar.SetCookies(u, []*http.Cookie{{Name: s.cookie, Value: sub, Path: "/"}})
}

func adminJSON(ctx context.Context, method, u string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
