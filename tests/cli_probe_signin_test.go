package tests

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/hydra"
)

// `gateway check --probe` probes the sign-in upstreams too
// (cmd/gateway/probe_signin.go): the identity provider behind the
// gateway's own authorization server (auth.jwt.issuer with auth.login)
// and a user_oauth backend's authorization server, each a real Hydra;
// then the same config pointed at a port nobody listens on, at a plain
// HTTP server that answers 404, with a wrong client secret, and with the
// secret's variable unset.

const (
	probeLoginSecret = "probe-login-secret-value-789"
	probeThirdSecret = "probe-third-secret-value-012"
)

// signInProbeConfig is a gateway with its authorization server on, signing
// users in at idp, and one user_oauth backend whose credentials are uo
// (YAML, indented under user_oauth:).
func signInProbeConfig(idp, backendURL, uo string) string {
	return fmt.Sprintf(`allowed_hosts: [127.0.0.1, localhost]
public_url: http://127.0.0.1:9
user_tokens: {key_env: PROBE_UO_KEY}
auth:
  mode: jwt
  jwt: {issuer: %q, audience: mcpgw}
  login: {client_id: probe-login, client_secret_env: PROBE_LOGIN_SECRET}
  authorization_server: {enabled: true}
virtual_hosts:
  demo:
    backends:
      gh:
        url: %s
        credentials:
          user_oauth:
%s`, idp, backendURL, uo)
}

func uoIssuer(issuer string) string {
	return fmt.Sprintf("            issuer: %q\n            client_id: probe-third\n            client_secret_env: PROBE_THIRD_SECRET\n            token_endpoint_auth: client_secret_post\n", issuer)
}

func warmJWKS(t *testing.T, u string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("hydra JWKS: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("hydra JWKS: %s", resp.Status)
	}
}

func signInProbeEnv(login, third string) []string {
	return []string{"PROBE_UO_KEY=" + uoKeyB64, "PROBE_LOGIN_SECRET=" + login, "PROBE_THIRD_SECRET=" + third}
}

func TestCheckProbe_SignInUpstreams(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	idp := hydra.Start(t, hydra.Options{})
	idp.CreateClient(t, hydra.Client{ID: "probe-login", Secret: probeLoginSecret, RedirectURIs: []string{"http://127.0.0.1:9/oauth2/callback"}, Scopes: []string{"openid"}})
	idp.CreateClient(t, hydra.Client{ID: "probe-third", Secret: probeThirdSecret, RedirectURIs: []string{"http://127.0.0.1:9/oauth/callback"},
		Scopes: []string{"repo"}, AuthMethod: "client_secret_post"})
	// Hydra makes its signing keys at the first JWKS request, slowly under
	// -race; the probes below would race that against --probe-timeout.
	warmJWKS(t, idp.Issuer+".well-known/jwks.json")
	backend := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "gh"})
	notOAuth := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notOAuth.Close)
	closed := fmt.Sprintf("http://127.0.0.1:%d", testsupport.FreePort(t))

	runWant := func(t *testing.T, want int, cfg string, env []string) (string, string) {
		t.Helper()
		stdout, stderr, code := runBinary(t, bin, env, "check", "--probe", "--probe-timeout", "5s", "--config", writeProbeConfig(t, cfg))
		if code != want {
			t.Fatalf("check --probe: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
		}
		t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
		for _, secret := range []string{probeLoginSecret, probeThirdSecret, "wrong-secret-value-345", uoKeyB64} {
			if strings.Contains(stdout+stderr, secret) {
				t.Errorf("a secret is printed:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
		}
		return stdout, stderr
	}
	run := func(t *testing.T, cfg string, env []string) (string, string) {
		t.Helper()
		return runWant(t, 1, cfg, env) // problems found
	}
	wantLines := func(t *testing.T, stdout string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(stdout, w) {
				t.Errorf("stdout lacks %q:\n%s", w, stdout)
			}
		}
	}

	t.Run("hydra", func(t *testing.T) {
		stdout, _ := runWant(t, 0, signInProbeConfig(idp.Issuer, backend.URL, uoIssuer(idp.Issuer)), signInProbeEnv(probeLoginSecret, probeThirdSecret))
		wantLines(t, stdout,
			"ok   sign-in "+idp.Issuer+" (auth.login, for the authorization server's sign-in and user_oauth connect links): OpenID provider, authorization endpoint "+idp.Issuer+"oauth2/auth, token endpoint "+idp.Issuer+"oauth2/token, JWKS ",
			"token endpoint accepts client probe-login",
			"ok   user_oauth demo/gh: issuer "+idp.Issuer+" discovered, authorization endpoint "+idp.Issuer+"oauth2/auth, token endpoint "+idp.Issuer+"oauth2/token, token endpoint accepts client probe-third",
			"ok   issuer "+idp.Issuer+": ")
		// The backend needs a signed-in caller, which a probe does not
		// have: skipped, not failed, so a sound config exits 0.
		if strings.Contains(stdout, "FAIL") || !strings.Contains(stdout, "skip backend demo/gh: not listed: its requests carry a caller's credentials, and a probe has none (") {
			t.Errorf("want no FAIL, and the backend that needs a signed-in caller skipped:\n%s", stdout)
		}
	})
	t.Run("closed port", func(t *testing.T) {
		stdout, _ := run(t, signInProbeConfig(closed+"/", backend.URL, uoIssuer(closed+"/third")), signInProbeEnv(probeLoginSecret, probeThirdSecret))
		wantLines(t, stdout,
			"FAIL sign-in "+closed+"/ (auth.login, for the authorization server's sign-in and user_oauth connect links): OpenID Connect discovery at "+closed+"/.well-known/openid-configuration: ",
			"FAIL user_oauth demo/gh: discovering "+closed+"/third: ",
			"connection refused")
	})
	t.Run("not an OAuth server", func(t *testing.T) {
		configured := fmt.Sprintf("            authorization_url: %s/authorize\n            token_url: %s/token\n            client_id: probe-third\n            client_secret_env: PROBE_THIRD_SECRET\n", notOAuth.URL, notOAuth.URL)
		stdout, _ := run(t, signInProbeConfig(notOAuth.URL, backend.URL, configured), signInProbeEnv(probeLoginSecret, probeThirdSecret))
		wantLines(t, stdout,
			"FAIL sign-in "+notOAuth.URL+" (auth.login, for the authorization server's sign-in and user_oauth connect links): OpenID Connect discovery at "+notOAuth.URL+"/.well-known/openid-configuration: 404 Not Found",
			"FAIL user_oauth demo/gh: token endpoint "+notOAuth.URL+"/token answered HTTP 404 without an OAuth error: not an OAuth token endpoint?")
	})
	t.Run("wrong secret", func(t *testing.T) {
		stdout, _ := run(t, signInProbeConfig(idp.Issuer, backend.URL, uoIssuer(idp.Issuer)), signInProbeEnv("wrong-secret-value-345", probeThirdSecret))
		wantLines(t, stdout,
			"FAIL sign-in "+idp.Issuer+" (auth.login, for the authorization server's sign-in and user_oauth connect links): token endpoint "+idp.Issuer+"oauth2/token refuses client probe-login (invalid_client",
			"check the client id and the secret in PROBE_LOGIN_SECRET",
			"ok   user_oauth demo/gh: ")
	})
	t.Run("introspection", func(t *testing.T) {
		intro := func(u string) string {
			return fmt.Sprintf("allowed_hosts: [127.0.0.1]\nauth:\n  mode: jwt\n  jwt: {issuer: %q, audience: mcpgw, introspection: {url: %q}}\nvirtual_hosts:\n  demo:\n    backends:\n      gh: {url: %s}\n",
				idp.Issuer, u, backend.URL)
		}
		hydraURL := idp.Admin + "/admin/oauth2/introspect"
		stdout, _ := runWant(t, 0, intro(hydraURL), nil)
		wantLines(t, stdout, "ok   introspection "+hydraURL+" (issuer "+idp.Issuer+"): answers and says a made-up token is not active (no client authentication configured)")
		stdout, _ = run(t, intro(notOAuth.URL+"/introspect"), nil)
		wantLines(t, stdout, "FAIL introspection "+notOAuth.URL+"/introspect (issuer "+idp.Issuer+"): token introspection at issuer \""+idp.Issuer+"\" failed: HTTP 404 (check the issuer's introspection.url)")
	})
	t.Run("unset secret", func(t *testing.T) {
		env := []string{"PROBE_UO_KEY=" + uoKeyB64, "PROBE_LOGIN_SECRET=" + probeLoginSecret}
		stdout, stderr := run(t, signInProbeConfig(idp.Issuer, backend.URL, uoIssuer(idp.Issuer)), env)
		want := "virtual_hosts.demo.backends.gh.credentials.user_oauth.client_secret_env: environment variable PROBE_THIRD_SECRET is not set"
		if !strings.Contains(stderr, want) || stdout != "" {
			t.Errorf("want the unset variable named before anything is probed (%q)\nstdout:\n%s\nstderr:\n%s", want, stdout, stderr)
		}
	})
}
