package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Keys from identity providers: discovery, jwks_url, several issuers,
// introspection, audience_claim.

const vhostsTail = "virtual_hosts:\n  demo:\n    backends:\n      one:\n        url: http://127.0.0.1:9001/mcp\n"

func TestConfig_IssuerWithoutKeyIsDiscovered(t *testing.T) {
	cfg := mustParse(t, withJWT("issuer: https://idp.example.com/realms/mcp\naudience: mcpgw\n"))
	j := cfg.Auth.JWT
	if j == nil || !j.Discover || j.JWKSURL != "" || !j.RemoteKeys() || len(cfg.Auth.Issuers) != 1 || cfg.Auth.QualifiedPrincipals {
		t.Fatalf("auth %+v, jwt %+v", cfg.Auth, j)
	}
	if !reflect.DeepEqual(j.Algorithms, asymmetricAlgorithms) {
		t.Errorf("algorithms %v", j.Algorithms)
	}
	// A real provider: its RFC 9728 metadata names it, with no section.
	if rm := cfg.Auth.ResourceMetadata; rm == nil || !reflect.DeepEqual(rm.AuthorizationServers, []string{"https://idp.example.com/realms/mcp"}) {
		t.Errorf("resource metadata %+v", rm)
	}
	// A static key keeps today's behaviour: no metadata without the section.
	if cfg := mustParse(t, withJWT("issuer: https://idp.example.com/\naudience: a\npublic_key_file: testdata/keys/jwt.pem\n")); cfg.Auth.ResourceMetadata != nil {
		t.Errorf("metadata for a static key: %+v", cfg.Auth.ResourceMetadata)
	}
	// The section without servers takes the issuers.
	y := "auth:\n  mode: jwt\n  jwt: {issuer: \"https://idp.example.com/\", audience: a}\n  resource_metadata: {scopes_supported: [mcp]}\n" + vhostsTail
	if rm := mustParse(t, y).Auth.ResourceMetadata; rm == nil || !reflect.DeepEqual(rm.AuthorizationServers, []string{"https://idp.example.com/"}) {
		t.Errorf("resource metadata %+v", rm)
	}
}

func TestConfig_JWKSURLAndAudienceClaim(t *testing.T) {
	cfg := mustParse(t, withJWT("issuer: https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc\naudience: client123\naudience_claim: client_id\n"+
		"jwks_url: https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc/.well-known/jwks.json\nalgorithms: [RS256]\n"))
	j := cfg.Auth.JWT
	if j.Discover || j.JWKSURL == "" || j.AudienceClaim != "client_id" || !reflect.DeepEqual(j.Algorithms, []string{"RS256"}) {
		t.Fatalf("jwt %+v", j)
	}
}

func TestConfig_SeveralIssuers(t *testing.T) {
	t.Setenv("MCPGW_TEST_INTROSPECT", "introspection-secret-XYZZY")
	y := "auth:\n  mode: jwt\n  issuers:\n" +
		"    - {issuer: \"https://idp-a.example.com/\", audience: mcpgw}\n" +
		"    - issuer: https://login.microsoftonline.com/tenant/v2.0\n      audience: api://mcpgw\n" +
		"    - issuer: https://hydra.example.com/\n      audience: mcpgw\n      introspection:\n" +
		"        url: https://hydra.example.com/admin/oauth2/introspect\n        client_id: mcpgw\n        client_secret_env: MCPGW_TEST_INTROSPECT\n        cache: 10s\n" + vhostsTail
	cfg := mustParse(t, y)
	a := cfg.Auth
	if a.JWT != nil || len(a.Issuers) != 3 || !a.QualifiedPrincipals {
		t.Fatalf("auth %+v", a)
	}
	in := a.Issuers[2].Introspection
	if in == nil || in.ClientID != "mcpgw" || in.ClientSecret.Reveal() != "introspection-secret-XYZZY" || in.Cache != 10*time.Second {
		t.Fatalf("introspection %+v", in)
	}
	if rm := a.ResourceMetadata; rm == nil || len(rm.AuthorizationServers) != 3 {
		t.Errorf("resource metadata %+v", rm)
	}
	if d := mustParse(t, withJWT("issuer: https://i.example/\naudience: a\nintrospection: {url: \"https://i.example/introspect\"}\n")).Auth.JWT.Introspection; d.Cache != DefaultIntrospectionCache {
		t.Errorf("default cache %v", d.Cache)
	}
}

func TestConfig_RejectsBadIssuers(t *testing.T) {
	setSecrets(t)
	t.Setenv("MCPGW_TEST_INTROSPECT", "introspection-secret-XYZZY")
	t.Setenv("MCPGW_TEST_EMPTY", "")
	iss := func(entries ...string) string {
		return "auth:\n  mode: jwt\n  issuers:\n" + indent(strings.Join(entries, ""), "    ") + vhostsTail
	}
	const intro = "  introspection: {url: \"https://a.example/introspect\"}\n"
	cases := map[string]struct{ yaml, want string }{
		"jwt and issuers": {"auth:\n  mode: jwt\n  jwt: {issuer: \"https://a.example/\", audience: a}\n  issuers:\n    - {issuer: \"https://b.example/\", audience: a}\n" + vhostsTail,
			"auth.issuers: set auth.jwt (one issuer) or auth.issuers (several), not both"},
		"hash in issuer":   {iss("- {issuer: \"rt3-x\", audience: a, hs_secret_env: MCPGW_TEST_INTROSPECT}\n", "- {issuer: \"rt3-x#a\", audience: a, hs_secret_env: MCPGW_TEST_INTROSPECT}\n"), `auth.issuers[1].issuer: issuer "rt3-x#a" holds a '#'`},
		"duplicate":        {iss("- {issuer: \"https://a.example/\", audience: a}\n", "- {issuer: \"https://a.example/\", audience: b}\n"), `auth.issuers[1].issuer: issuer "https://a.example/" is listed twice (line 5)`},
		"two introspect":   {iss("- issuer: https://a.example/\n  audience: a\n"+intro, "- issuer: https://b.example/\n  audience: a\n"+intro), "auth.issuers[1].introspection: only one issuer may configure introspection (auth.issuers[0] already does) (line 9)"},
		"no audience":      {iss("- {issuer: \"https://a.example/\"}\n"), "auth.issuers[0].audience: required"},
		"not a url":        {withJWT("issuer: idp.example.com\naudience: a\n"), "auth.jwt: needs a key: set hs_secret_env, public_key_file or jwks_url, or make issuer the provider's issuer URL to discover its keys (issuer not an absolute http(s) URL)"},
		"http issuer":      {withJWT("issuer: http://idp.example.com/\naudience: a\n"), "auth.jwt: needs a key"},
		"http jwks":        {withJWT("issuer: i\naudience: a\njwks_url: http://idp.example.com/keys\n"), "auth.jwt.jwks_url: must use https"},
		"jwks and pem":     {withJWT("issuer: i\naudience: a\njwks_url: https://idp.example.com/keys\npublic_key_file: testdata/keys/jwt.pem\n"), "auth.jwt.jwks_url: set jwks_url or hs_secret_env/public_key_file, not both"},
		"hs with jwks":     {withJWT("issuer: i\naudience: a\njwks_url: https://idp.example.com/keys\nalgorithms: [HS256]\n"), `auth.jwt.algorithms[0]: "HS256" cannot be verified with keys from a JWK Set`},
		"none with jwks":   {withJWT("issuer: i\naudience: a\njwks_url: https://idp.example.com/keys\nalgorithms: [none]\n"), `"none" is never accepted`},
		"bad claim":        {withJWT("issuer: https://i.example/\naudience: a\naudience_claim: \"a b\"\n"), `auth.jwt.audience_claim: "a b" is not a claim name`},
		"intro http":       {withJWT("issuer: https://i.example/\naudience: a\nintrospection: {url: \"http://i.example/introspect\"}\n"), "auth.jwt.introspection.url: must use https (every caller's token is sent to it)"},
		"intro no url":     {withJWT("issuer: https://i.example/\naudience: a\nintrospection: {client_id: x}\n"), "auth.jwt.introspection.url: required"},
		"intro secret":     {withJWT("issuer: https://i.example/\naudience: a\nintrospection: {url: \"https://i.example/in\", client_secret_env: MCPGW_TEST_INTROSPECT}\n"), "auth.jwt.introspection.client_id: required with client_secret_env"},
		"intro unset":      {withJWT("issuer: https://i.example/\naudience: a\nintrospection: {url: \"https://i.example/in\", client_id: c, client_secret_env: MCPGW_TEST_UNSET}\n"), "auth.jwt.introspection.client_secret_env: environment variable MCPGW_TEST_UNSET is not set"},
		"intro empty":      {withJWT("issuer: https://i.example/\naudience: a\nintrospection: {url: \"https://i.example/in\", client_id: c, client_secret_env: MCPGW_TEST_EMPTY}\n"), "environment variable MCPGW_TEST_EMPTY is empty"},
		"intro cache":      {withJWT("issuer: https://i.example/\naudience: a\nintrospection: {url: \"https://i.example/in\", cache: 2h}\n"), "auth.jwt.introspection.cache: must be at most 1h0m0s"},
		"intro field":      {withJWT("issuer: https://i.example/\naudience: a\nintrospection: {url: \"https://i.example/in\", client_secret: x}\n"), "auth.jwt.introspection.client_secret: unknown field"},
		"no jwt or issuer": {"auth: {mode: jwt}\n" + vhostsTail, "auth.jwt: required when auth.mode is jwt (or auth.issuers, for several issuers)"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			checkErr(t, c.yaml, c.want)
			if _, err := Parse([]byte(c.yaml), src); err != nil && strings.Contains(err.Error(), "XYZZY") {
				t.Errorf("secret leaked: %v", err)
			}
		})
	}
}

// The auth guide's shortest identity-provider config is one the gateway takes,
// with its keys discovered, and each recipe's lines are a valid jwt block.
func TestConfig_GuideIdentityProviderExamples(t *testing.T) {
	readme, err := os.ReadFile("../../docs/guide/auth.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Tokens from an identity provider\n")
	if !ok {
		t.Fatal("docs/guide/auth.md has no identity provider section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "```yaml\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the guide's identity provider section has no yaml example")
	}
	if j := mustParse(t, block+vhostsTail).Auth.JWT; j == nil || !j.Discover {
		t.Fatalf("shortest config: %+v", j)
	}
	// | provider | `issuer: ...`, `audience: ...`[, `audience_claim: ...`] | ... |
	fill := strings.NewReplacer("<region>", "eu-west-1", "<user-pool-id>", "eu-west-1_abc", "<app-client-id>", "app",
		"<tenant-id>", "tenant", "<the API's application (client) id>", "api-id", "<org>", "acme",
		"<tenant-domain>", "acme.eu.auth0.com", "<the API identifier>", "https://api.example.com", "<host>", "kc.example.com", "<realm>", "mcp")
	recipes := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 3 || !strings.Contains(cells[1], "`issuer: ") {
			continue
		}
		recipes++
		var fields []string
		for _, part := range strings.Split(cells[1], "`")[1:] {
			if k, _, ok := strings.Cut(part, ": "); ok && (k == "issuer" || k == "audience" || k == "audience_claim") {
				fields = append(fields, fill.Replace(part))
			}
		}
		y := withJWT(strings.Join(fields[:min(len(fields), 3)], "\n") + "\n")
		if _, err := Parse([]byte(y), src); err != nil {
			t.Errorf("recipe %s: %v\n%s", cells[0], err, y)
		}
	}
	if recipes != 5 {
		t.Errorf("%d recipes, want 5 (Cognito, Entra ID, Okta, Auth0, Keycloak)", recipes)
	}
}

// auth.jwt.audience: one string, a list, or "resource" (issue 41).
func TestConfig_AudienceListAndResource(t *testing.T) {
	j := mustParse(t, withJWT("issuer: https://i.example/\naudience: [api-one, api-two]\n")).Auth.JWT
	if j.Audience != "api-one" || !reflect.DeepEqual(j.Audiences, []string{"api-one", "api-two"}) {
		t.Fatalf("list: %q %v", j.Audience, j.Audiences)
	}
	j = mustParse(t, withJWT("issuer: https://i.example/\naudience: mcpgw\n")).Auth.JWT
	if j.Audience != "mcpgw" || !reflect.DeepEqual(j.Audiences, []string{"mcpgw"}) {
		t.Fatalf("string: %q %v", j.Audience, j.Audiences)
	}
	cfg := mustParse(t, "public_url: https://gw.example/\n"+withJWT("issuer: https://i.example/\naudience: resource\n"))
	if j := cfg.Auth.JWT; j.Audience != AudienceResource || len(j.Audiences) != 0 || cfg.Auth.ResourceBaseURL(cfg.PublicURL) != "https://gw.example" {
		t.Fatalf("resource: %q %v %q", j.Audience, j.Audiences, cfg.Auth.ResourceBaseURL(cfg.PublicURL))
	}
	for name, c := range map[string]struct{ yaml, want string }{
		"resource without public_url": {withJWT("issuer: https://i.example/\naudience: resource\n"), `auth.jwt.audience: "resource" needs public_url`},
		"resource in a list":          {withJWT("issuer: https://i.example/\naudience: [a, resource]\n"), `auth.jwt.audience[1]: "resource" stands alone`},
		"twice":                       {withJWT("issuer: https://i.example/\naudience: [a, a]\n"), `auth.jwt.audience[1]: audience "a" is listed twice`},
		"empty list":                  {withJWT("issuer: https://i.example/\naudience: []\n"), "auth.jwt.audience: required"},
		"a mapping":                   {withJWT("issuer: https://i.example/\naudience: {a: b}\n"), "auth.jwt.audience: must be a list"},
	} {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml, c.want) })
	}
}

// auth.authorization_server: defaults, the vhosts' metadata naming the
// gateway, and what it needs.
func TestConfig_AuthorizationServer(t *testing.T) {
	t.Setenv("MCPGW_TEST_AS_KEY", "c2VhbGluZy1rZXktZm9yLXRoZS1lMmUtdGVzdHMtMzI=")
	t.Setenv("MCPGW_TEST_AS_LOGIN", "login-secret")
	head := "public_url: https://gw.example\nuser_tokens: {key_env: MCPGW_TEST_AS_KEY}\nauth:\n  mode: jwt\n" +
		"  jwt: {issuer: \"https://idp.example/\", audience: mcpgw}\n  login: {client_id: gw, client_secret_env: MCPGW_TEST_AS_LOGIN}\n"
	cfg := mustParse(t, head+"  authorization_server: {enabled: true, claims: [groups, email]}\n"+vhostsTail)
	as := cfg.Auth.AuthorizationServer
	if as == nil || as.AccessTokenTTL != DefaultAccessTokenTTL || as.RefreshTokenTTL != DefaultRefreshTokenTTL ||
		!as.DynamicRegistration || !as.ClientIDMetadataDocuments || !reflect.DeepEqual(as.Claims, []string{"groups", "email"}) {
		t.Fatalf("authorization server %+v", as)
	}
	if rm := cfg.Auth.ResourceMetadata; rm == nil || !reflect.DeepEqual(rm.AuthorizationServers, []string{"https://gw.example"}) {
		t.Fatalf("the vhosts' metadata does not name the gateway: %+v", rm)
	}
	if cfg := mustParse(t, head+"  authorization_server: {enabled: false}\n"+vhostsTail); cfg.Auth.AuthorizationServer != nil {
		t.Fatal("off is on")
	}
	for name, c := range map[string]struct{ yaml, want string }{
		"no login": {"public_url: https://gw.example\nuser_tokens: {key_env: MCPGW_TEST_AS_KEY}\nauth:\n  mode: jwt\n  jwt: {issuer: \"https://idp.example/\", audience: a}\n" +
			"  authorization_server: {enabled: true}\n" + vhostsTail, "auth.authorization_server: needs auth.login"},
		"reserved claim": {head + "  authorization_server: {enabled: true, claims: [sub]}\n" + vhostsTail, `auth.authorization_server.claims[0]: "sub" is the gateway's own claim`},
		"ttl":            {head + "  authorization_server: {enabled: true, access_token_ttl: 48h}\n" + vhostsTail, "auth.authorization_server.access_token_ttl: must be at most 24h0m0s"},
		"no registration": {head + "  authorization_server: {enabled: true, registration: {dynamic: false, client_id_metadata_documents: false}}\n" + vhostsTail,
			"auth.authorization_server.registration: turns off both"},
		"mode none": {"auth:\n  mode: none\n  authorization_server: {enabled: true}\n" + vhostsTail, "auth.authorization_server: needs auth.mode jwt"},
	} {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml, c.want) })
	}
}
