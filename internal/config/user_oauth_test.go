package config

import (
	"bytes"
	"encoding/base64"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/router/credentials"
)

const (
	testUserTokenKeyB64 = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // "0123456789abcdef0123456789abcdef"
	testLoginSecret     = "login-secret-value-never-shown"
	testGHSecret        = "gh-client-secret-never-shown"
)

func setUserOAuthSecrets(t *testing.T) {
	t.Helper()
	t.Setenv("MCPGW_TEST_UT_KEY", testUserTokenKeyB64)
	t.Setenv("MCPGW_TEST_LOGIN_SECRET", testLoginSecret)
	t.Setenv("MCPGW_TEST_GH_SECRET", testGHSecret)
}

// userOAuthConfig is a valid user_oauth config; top and grant replace
// its top-level extras and its user_oauth block.
func userOAuthConfig(top, grant string) string {
	return top + `
auth:
  mode: jwt
  jwt: {issuer: "https://idp.example.com/", audience: mcpgw}
  login:
    client_id: mcpgw-login
    client_secret_env: MCPGW_TEST_LOGIN_SECRET
    scopes: [openid, profile]
virtual_hosts:
  v:
    backends:
      gh:
        url: https://api.example.com/mcp
        credentials:
          user_oauth:
` + indent(grant, "            ")
}

const (
	fullTop   = "public_url: https://mcp.example.com/\nuser_tokens: {key_env: MCPGW_TEST_UT_KEY}\n"
	fullGrant = "issuer: https://github.example/\nclient_id: mcpgw\nclient_secret_env: MCPGW_TEST_GH_SECRET\nscopes: [repo]\n"
)

func TestConfig_UserOAuthIsParsed(t *testing.T) {
	setUserOAuthSecrets(t)
	cfg := mustParse(t, userOAuthConfig(fullTop, fullGrant))
	if cfg.PublicURL != "https://mcp.example.com" {
		t.Errorf("public_url = %q, want without the trailing slash", cfg.PublicURL)
	}
	if rm := cfg.Auth.ResourceMetadata; rm == nil || rm.PublicURL != cfg.PublicURL {
		t.Errorf("resource metadata public_url = %+v, want public_url by default", rm)
	}
	if cfg.UserTokens == nil || !bytes.Equal([]byte(cfg.UserTokens.Key.Reveal()), []byte("0123456789abcdef0123456789abcdef")) {
		t.Errorf("user_tokens key not decoded")
	}
	if l := cfg.Auth.Login; l == nil || l.ClientID != "mcpgw-login" || l.ClientSecret.Reveal() != testLoginSecret || !reflect.DeepEqual(l.Scopes, []string{"openid", "profile"}) {
		t.Errorf("login = %+v", l)
	}
	got := cfg.VirtualHosts["v"].Backends["gh"].Credentials
	want := &credentials.Settings{
		Grant: credentials.GrantUserOAuth, ClientID: "mcpgw", ClientSecret: testGHSecret, SecretEnv: "MCPGW_TEST_GH_SECRET",
		Scopes: []string{"repo"}, Timeout: DefaultTokenTimeout, MaxEntries: DefaultTokenCacheSize,
		UserOAuth: &credentials.UserOAuth{Issuer: "https://github.example/", TokenEndpointAuth: credentials.AuthClientSecretBasic, VHost: "v", Backend: "gh"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("credentials = %+v / %+v\nwant %+v / %+v", got, got.UserOAuth, want, want.UserOAuth)
	}
	explicit := "authorization_url: https://auth.example/authorize\ntoken_url: https://auth.example/token\nrevocation_url: https://auth.example/revoke\n" +
		"client_id: c\nclient_secret_env: MCPGW_TEST_GH_SECRET\ntoken_endpoint_auth: client_secret_post\n"
	got = mustParse(t, userOAuthConfig(fullTop, explicit)).VirtualHosts["v"].Backends["gh"].Credentials
	if got.TokenURL != "https://auth.example/token" || got.UserOAuth.AuthorizationURL != "https://auth.example/authorize" ||
		got.UserOAuth.RevocationURL != "https://auth.example/revoke" || got.UserOAuth.TokenEndpointAuth != credentials.AuthClientSecretPost {
		t.Errorf("explicit endpoints = %+v / %+v", got, got.UserOAuth)
	}
}

func TestConfig_UserOAuthRefusalsNameTheField(t *testing.T) {
	setUserOAuthSecrets(t)
	const p = "virtual_hosts.v.backends.gh.credentials.user_oauth"
	for _, tc := range []struct {
		name, y string
		want    []string
	}{
		{"mode none", strings.Replace(userOAuthConfig(fullTop, fullGrant), "mode: jwt", "mode: none", 1),
			[]string{p + ": needs auth.mode jwt", "verified person"}},
		{"no public_url", userOAuthConfig("user_tokens: {key_env: MCPGW_TEST_UT_KEY}\n", fullGrant),
			[]string{p + ": needs public_url"}},
		{"no user_tokens", userOAuthConfig("public_url: https://mcp.example.com\n", fullGrant),
			[]string{p + ": needs user_tokens.key_env"}},
		{"no login", strings.Replace(userOAuthConfig(fullTop, fullGrant),
			"  login:\n    client_id: mcpgw-login\n    client_secret_env: MCPGW_TEST_LOGIN_SECRET\n    scopes: [openid, profile]\n", "", 1),
			[]string{p + ": needs auth.login"}},
		{"short key", strings.Replace(userOAuthConfig(fullTop, fullGrant), "MCPGW_TEST_UT_KEY", "MCPGW_TEST_LOGIN_SECRET", 1),
			[]string{"user_tokens.key_env: environment variable MCPGW_TEST_LOGIN_SECRET must hold 32 bytes"}},
		{"both endpoints kinds", userOAuthConfig(fullTop, fullGrant+"token_url: https://x.example/t\n"),
			[]string{p + ".issuer: set issuer"}},
		{"no endpoints", userOAuthConfig(fullTop, "client_id: c\nclient_secret_env: MCPGW_TEST_GH_SECRET\n"),
			[]string{p + ": set issuer"}},
		{"http token url", userOAuthConfig(fullTop, "authorization_url: https://a.example/a\ntoken_url: http://a.example/t\nclient_id: c\nclient_secret_env: MCPGW_TEST_GH_SECRET\n"),
			[]string{p + ".token_url: must use https"}},
		{"auth method", userOAuthConfig(fullTop, fullGrant+"token_endpoint_auth: private_key_jwt\n"),
			[]string{p + ".token_endpoint_auth:", "client_secret_post"}},
		{"unset secret", userOAuthConfig(fullTop, strings.Replace(fullGrant, "MCPGW_TEST_GH_SECRET", "MCPGW_TEST_UNSET_GH", 1)),
			[]string{p + ".client_secret_env: environment variable MCPGW_TEST_UNSET_GH is not set"}},
		{"with another grant", strings.Replace(userOAuthConfig(fullTop, fullGrant), "          user_oauth:\n",
			"          client_credentials: {token_url: https://t.example/t, client_id: c, client_secret_env: MCPGW_TEST_GH_SECRET}\n          user_oauth:\n", 1),
			[]string{"credentials: set one of token_exchange, client_credentials and user_oauth"}},
		{"list cache", strings.Replace(userOAuthConfig(fullTop, fullGrant), "        credentials:\n", "        list_cache: 1m\n        credentials:\n", 1),
			[]string{"list_cache: cannot be used with per-caller credentials"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, tc.y, tc.want...)
			if _, err := Parse([]byte(tc.y), src); err != nil {
				for _, s := range []string{testLoginSecret, testGHSecret, testUserTokenKeyB64} {
					if strings.Contains(err.Error(), s) {
						t.Errorf("error leaks a secret: %v", err)
					}
				}
				if !strings.Contains(err.Error(), "(line ") {
					t.Errorf("error names no line: %v", err)
				}
			}
		})
	}
	if _, err := base64.StdEncoding.DecodeString(testUserTokenKeyB64); err != nil {
		t.Fatal(err)
	}
}

// The sign-in guide's two user_oauth examples are configs the gateway takes.
func TestConfig_GuideUserOAuthExamples(t *testing.T) {
	readme, err := os.ReadFile("../../docs/guide/user-signin.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "# Per-user sign-in to third-party backends\n")
	if !ok {
		t.Fatal("docs/guide/user-signin.md has no title")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var blocks []string
	for rest := section; ; {
		var b string
		if _, rest, ok = strings.Cut(rest, "```yaml\n"); !ok {
			break
		}
		b, rest, _ = strings.Cut(rest, "```")
		blocks = append(blocks, b)
	}
	if len(blocks) != 2 {
		t.Fatalf("want the GitHub-like and the Atlassian-like examples, found %d yaml blocks", len(blocks))
	}
	t.Setenv("MCPGW_USER_TOKEN_KEY", testUserTokenKeyB64)
	t.Setenv("MCPGW_LOGIN_SECRET", testLoginSecret)
	t.Setenv("GH_CLIENT_SECRET", testGHSecret)
	t.Setenv("JIRA_CLIENT_SECRET", testGHSecret)
	cfg := mustParse(t, blocks[0]+blocks[1])
	gh, jira := cfg.VirtualHosts["dev"].Backends["gh"].Credentials, cfg.VirtualHosts["dev"].Backends["jira"].Credentials
	if gh == nil || gh.UserOAuth.Issuer == "" || jira == nil || jira.UserOAuth.TokenEndpointAuth != credentials.AuthClientSecretPost {
		t.Fatalf("guide examples: %+v %+v", gh, jira)
	}
}
