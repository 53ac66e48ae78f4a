package config

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/router/credentials"
)

const testClientSecret = "client-secret-value-XYZZY-42"

// withJWTBackend builds a jwt-mode config whose vhost "demo" has one
// backend "one" with the given fields (indented under the backend).
func withJWTBackend(fields string) string {
	return "auth:\n  mode: jwt\n  jwt:\n    issuer: i\n    audience: a\n    hs_secret_env: MCPGW_TEST_JWT_SECRET\n" +
		"virtual_hosts:\n  demo:\n    backends:\n      one:\n        url: http://127.0.0.1:9001/mcp\n" + indent(fields, "        ")
}

func TestConfig_CredentialsAreParsed(t *testing.T) {
	setSecrets(t)
	t.Setenv("MCPGW_TEST_STS_SECRET", testClientSecret)
	for _, tc := range []struct {
		name, fields string
		want         credentials.Settings
	}{
		{"token exchange", `
credentials:
  token_exchange:
    token_url: https://sts.example.com/oauth/token
    client_id: mcpgw
    client_secret_env: MCPGW_TEST_STS_SECRET
    audience: gateway-one
    scopes: [tools, read]
    subject_token_type: jwt
    timeout: 3s
    cache_size: 50
`, credentials.Settings{Grant: credentials.GrantTokenExchange, TokenURL: "https://sts.example.com/oauth/token",
			ClientID: "mcpgw", ClientSecret: testClientSecret, SecretEnv: "MCPGW_TEST_STS_SECRET", Audience: "gateway-one",
			Scopes: []string{"tools", "read"}, SubjectTokenType: credentials.TokenTypeJWT, Timeout: 3 * time.Second, MaxEntries: 50}},
		{"client credentials on loopback http, defaults", `
credentials:
  client_credentials:
    token_url: http://127.0.0.1:8999/token
    client_id: mcpgw
    client_secret_env: MCPGW_TEST_STS_SECRET
`, credentials.Settings{Grant: credentials.GrantClientCredentials, TokenURL: "http://127.0.0.1:8999/token",
			ClientID: "mcpgw", ClientSecret: testClientSecret, SecretEnv: "MCPGW_TEST_STS_SECRET",
			SubjectTokenType: credentials.TokenTypeAccessToken, Timeout: DefaultTokenTimeout, MaxEntries: DefaultTokenCacheSize}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := mustParse(t, withJWTBackend(tc.fields)).VirtualHosts["demo"].Backends["one"]
			if b.Credentials == nil || !reflect.DeepEqual(*b.Credentials, tc.want) {
				t.Fatalf("credentials = %#v, want %#v", b.Credentials, tc.want)
			}
		})
	}
}

// A secret never shows in fmt or slog output of the settings.
func TestConfig_CredentialsSecretIsNeverPrinted(t *testing.T) {
	s := credentials.Settings{ClientSecret: testClientSecret}
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s), fmt.Sprintf("%v", &s)} {
		if strings.Contains(out, testClientSecret) {
			t.Fatalf("printed settings hold the secret: %s", out)
		}
	}
}

func TestConfig_ClaimTemplatesAreParsed(t *testing.T) {
	setSecrets(t)
	t.Setenv("MCPGW_TEST_TENANT", "acme")
	b := mustParse(t, withJWTBackend(`
add_headers:
  X-User: "${claims.sub}"
  X-Org: "${MCPGW_TEST_TENANT}/${claims.org.id}"
  X-Groups: "${claims.groups[*]}"
  X-Static: "v-${MCPGW_TEST_TENANT}"
`)).VirtualHosts["demo"].Backends["one"]
	if got := b.AddHeaders; !reflect.DeepEqual(got, map[string]string{"X-Static": "v-acme"}) {
		t.Fatalf("constant headers = %v", got)
	}
	claims := map[string]any{"sub": "alice", "org": map[string]any{"id": "o-7"}, "groups": []any{"dev", "ops"}}
	for name, want := range map[string]string{"X-User": "alice", "X-Org": "acme/o-7", "X-Groups": "dev,ops"} {
		tpl := b.HeaderTemplates[name]
		if tpl == nil {
			t.Fatalf("no template for %s (templates: %v)", name, b.HeaderTemplates)
		}
		if got, err := tpl.Expand(claims); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
}

// Each problem names the file, the field and its line, and never a secret.
func TestConfig_CredentialErrorsNameTheField(t *testing.T) {
	setSecrets(t)
	t.Setenv("MCPGW_TEST_STS_SECRET", testClientSecret)
	os.Unsetenv("MCPGW_TEST_UNSET_SECRET")
	const te = "credentials:\n  token_exchange:\n"
	for _, tc := range []struct {
		name, fields string
		want         []string
	}{
		{"secret env unset", te + "    token_url: https://sts.example.com/t\n    client_id: c\n    client_secret_env: MCPGW_TEST_UNSET_SECRET\n",
			[]string{"virtual_hosts.demo.backends.one.credentials.token_exchange.client_secret_env: environment variable MCPGW_TEST_UNSET_SECRET is not set", "(line 16)"}},
		{"secret env missing", te + "    token_url: https://sts.example.com/t\n    client_id: c\n",
			[]string{"token_exchange.client_secret_env: required"}},
		{"plain http elsewhere", te + "    token_url: http://sts.example.com/t\n    client_id: c\n    client_secret_env: MCPGW_TEST_STS_SECRET\n",
			[]string{"token_exchange.token_url: must use https", "(line 14)"}},
		{"both grants", "credentials:\n  token_exchange: {token_url: https://a/t, client_id: c, client_secret_env: MCPGW_TEST_STS_SECRET}\n  client_credentials: {token_url: https://a/t, client_id: c, client_secret_env: MCPGW_TEST_STS_SECRET}\n",
			[]string{"one.credentials: set one of token_exchange and client_credentials"}},
		{"no grant", "credentials: {}\n", []string{"one.credentials: set token_exchange, client_credentials or user_oauth"}},
		{"unknown field", te + "    token_uri: https://a/t\n", []string{"token_exchange.token_uri: unknown field"}},
		{"subject type on client credentials", "credentials:\n  client_credentials: {token_url: https://a/t, client_id: c, client_secret_env: MCPGW_TEST_STS_SECRET, subject_token_type: jwt}\n",
			[]string{"client_credentials.subject_token_type: only token_exchange has a subject token"}},
		{"bad subject type", te + "    token_url: https://a/t\n    client_id: c\n    client_secret_env: MCPGW_TEST_STS_SECRET\n    subject_token_type: saml\n",
			[]string{`subject_token_type: "saml" is not a subject token type`}},
		{"scope with a space", te + "    token_url: https://a/t\n    client_id: c\n    client_secret_env: MCPGW_TEST_STS_SECRET\n    scopes: [\"a b\"]\n",
			[]string{"token_exchange.scopes[0]: a scope is a non-empty word"}},
		{"authorization added too", "add_headers: {Authorization: \"Bearer ${MCPGW_TEST_BACKEND_ONE_TOKEN}\"}\n" + te + "    token_url: https://a/t\n    client_id: c\n    client_secret_env: MCPGW_TEST_STS_SECRET\n",
			[]string{"one.add_headers.Authorization: Authorization is set by credentials"}},
		{"authorization removed", "remove_headers: [authorization]\n" + te + "    token_url: https://a/t\n    client_id: c\n    client_secret_env: MCPGW_TEST_STS_SECRET\n",
			[]string{"one.remove_headers[0]: Authorization carries the token of credentials"}},
		{"list cache with exchange", "list_cache: 30s\n" + te + "    token_url: https://a/t\n    client_id: c\n    client_secret_env: MCPGW_TEST_STS_SECRET\n",
			[]string{"one.list_cache: cannot be used with per-caller credentials"}},
		{"list cache with a claim template", "list_cache: 30s\nadd_headers: {X-User: \"${claims.sub}\"}\n",
			[]string{"one.list_cache: cannot be used with per-caller credentials"}},
		{"template unterminated", "add_headers:\n  X-User: \"${claims.sub\"\n",
			[]string{"one.add_headers.X-User: claim template 1: unterminated ${claims...}", "(line 13)"}},
		{"template bad step", "add_headers:\n  X-User: \"${claims.org..id}\"\n",
			[]string{"one.add_headers.X-User: claim template 1: a claim name is expected after '.' at offset 11"}},
		{"template bad index", "add_headers:\n  X-User: \"${claims.groups[x]}\"\n",
			[]string{"one.add_headers.X-User: claim template 1: at offset 13: an array index is a number"}},
		{"template names no claim", "add_headers:\n  X-User: \"${claims}\"\n",
			[]string{"one.add_headers.X-User: claim template 1: ${claims} names no claim"}},
		{"join not last", "add_headers:\n  X-User: \"${claims.orgs[*].id}\"\n",
			[]string{"one.add_headers.X-User: claim template 1: [*] must be the last step"}},
		{"env next to a template unset", "add_headers:\n  X-User: \"${MCPGW_TEST_UNSET_SECRET}-${claims.sub}\"\n",
			[]string{"one.add_headers.X-User: environment variable MCPGW_TEST_UNSET_SECRET is not set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, withJWTBackend(tc.fields), tc.want...)
			_, err := Parse([]byte(withJWTBackend(tc.fields)), src)
			if err != nil && strings.Contains(err.Error(), testClientSecret) {
				t.Fatalf("error leaks the client secret: %v", err)
			}
		})
	}
}

// In auth mode none callers have no claims and no token: templates and
// token exchange are refused at load, not failed on every request.
func TestConfig_CallerCredentialsNeedJWT(t *testing.T) {
	t.Setenv("MCPGW_TEST_STS_SECRET", testClientSecret)
	checkErr(t, withBackends(`
one:
  url: http://127.0.0.1:9001/mcp
  add_headers: {X-User: "${claims.sub}"}
two:
  url: http://127.0.0.1:9002/mcp
  credentials:
    token_exchange: {token_url: https://a/t, client_id: c, client_secret_env: MCPGW_TEST_STS_SECRET}
`), "virtual_hosts.demo.backends.one.add_headers.X-User: claim templates need auth.mode jwt",
		"virtual_hosts.demo.backends.two.credentials.token_exchange: token_exchange needs auth.mode jwt")
	// client_credentials needs no caller.
	mustParse(t, withBackends(`
one:
  url: http://127.0.0.1:9001/mcp
  credentials:
    client_credentials: {token_url: https://a/t, client_id: c, client_secret_env: MCPGW_TEST_STS_SECRET}
`))
}

// The credentials guide's example is a config the gateway takes, and its
// templates fill the headers as the guide says.
func TestConfig_GuideCredentialsExampleParses(t *testing.T) {
	readme, err := os.ReadFile("../../docs/guide/backend-credentials.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "# Backend credentials per caller\n")
	if !ok {
		t.Fatal("docs/guide/backend-credentials.md has no title")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the credentials guide has no yaml example")
	}
	t.Setenv("MCPGW_JWT_SECRET", testJWTSecret)
	t.Setenv("STS_CLIENT_SECRET", testClientSecret)
	t.Setenv("TENANT", "eu")
	vh := mustParse(t, block).VirtualHosts["demo"]
	one, two := vh.Backends["gateway-one"], vh.Backends["gateway-two"]
	if one.Credentials == nil || one.Credentials.Grant != credentials.GrantTokenExchange ||
		two.Credentials == nil || two.Credentials.Grant != credentials.GrantClientCredentials {
		t.Fatalf("grants: %#v / %#v", one.Credentials, two.Credentials)
	}
	claims := map[string]any{"sub": "alice", "org": map[string]any{"id": "o-1"}, "groups": []any{"dev", "ops"},
		"https://example.com/roles": []any{"reader", "writer"}, "tenant": "t9"}
	for name, want := range map[string]string{"X-User": "alice", "X-Org": "o-1", "X-Primary-Group": "dev",
		"X-Groups": "dev,ops", "X-Roles": "reader,writer", "X-Tenant": "eu-t9"} {
		if got, err := one.HeaderTemplates[name].Expand(claims); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
}
