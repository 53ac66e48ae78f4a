package config

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/upstream"
)

const src = "config.yaml"

// Distinctive secret values: no error message may ever contain them.
const (
	testJWTSecret    = "jwt-secret-value-0123456789abcdef-XYZZY"
	testCursorSecret = "cursor-secret-value-0123456789abcdef-PLUGH"
	testBackendToken = "backend-token-value-FROBOZZ"
)

func setSecrets(t *testing.T) {
	t.Helper()
	t.Setenv("MCPGW_TEST_JWT_SECRET", testJWTSecret)
	t.Setenv("MCPGW_TEST_CURSOR_SECRET", testCursorSecret)
	t.Setenv("MCPGW_TEST_BACKEND_ONE_TOKEN", testBackendToken)
}

// minimal is a valid config; cases append or replace parts of it.
const minimal = `
auth:
  mode: none
virtual_hosts:
  demo:
    backends:
      one:
        url: http://127.0.0.1:9001/mcp
`

// withBackend builds a config whose single vhost "demo" has the given
// backends block (indented under "backends:").
func withBackends(backends string) string {
	return "auth:\n  mode: none\nvirtual_hosts:\n  demo:\n    backends:\n" + indent(backends, "      ")
}

// withJWT builds a config with the given auth.jwt block.
func withJWT(jwt string) string {
	return "auth:\n  mode: jwt\n  jwt:\n" + indent(jwt, "    ") +
		"virtual_hosts:\n  demo:\n    backends:\n      one:\n        url: http://127.0.0.1:9001/mcp\n"
}

func indent(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.Trim(s, "\n"), "\n") {
		b.WriteString(prefix + l + "\n")
	}
	return b.String()
}

func mustParse(t *testing.T, y string) *Config {
	t.Helper()
	cfg, err := Parse([]byte(y), src)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, y)
	}
	return cfg
}

// checkErr asserts Parse fails with a message naming the file and each want
// fragment (the field path among them), and that every line is one error.
func checkErr(t *testing.T, y string, want ...string) {
	t.Helper()
	_, err := Parse([]byte(y), src)
	if err == nil {
		t.Fatalf("Parse succeeded, want error containing %q\n%s", want, y)
	}
	msg := err.Error()
	for _, line := range strings.Split(msg, "\n") {
		if !strings.HasPrefix(line, src+": ") {
			t.Errorf("error line %q does not start with the file name", line)
		}
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not contain %q", msg, w)
		}
	}
	for _, secret := range []string{testJWTSecret, testCursorSecret, testBackendToken} {
		if strings.Contains(msg, secret) {
			t.Errorf("error %q leaks a secret", msg)
		}
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Errorf("error %T is not a *config.Error", err)
	}
}

func TestConfig_FullExampleParsesWithDefaults(t *testing.T) {
	setSecrets(t)
	cfg, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Source != "testdata/full.yaml" || cfg.SessionTTL != time.Hour || cfg.MaxBodyBytes != 4194304 {
		t.Errorf("top level: %+v", cfg)
	}
	if !reflect.DeepEqual(cfg.AllowedHosts, []string{"localhost", "127.0.0.1"}) || len(cfg.AllowedOrigins) != 0 {
		t.Errorf("hosts %q origins %q", cfg.AllowedHosts, cfg.AllowedOrigins)
	}
	if string(cfg.CursorSecret) != testCursorSecret {
		t.Errorf("cursor secret not loaded")
	}
	j := cfg.Auth.JWT
	if cfg.Auth.Mode != ModeJWT || j == nil {
		t.Fatalf("auth: %+v", cfg.Auth)
	}
	if j.Issuer != "mcpgateway" || j.Audience != "mcpgateway-api" || string(j.HMACSecret) != testJWTSecret || j.Leeway != 30*time.Second {
		t.Errorf("jwt settings: issuer %q audience %q leeway %s", j.Issuer, j.Audience, j.Leeway)
	}
	if _, ok := j.PublicKey.(*rsa.PublicKey); !ok {
		t.Errorf("public key %T, want *rsa.PublicKey", j.PublicKey)
	}
	wantAlgs := []string{"HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	if !reflect.DeepEqual(j.Algorithms, wantAlgs) {
		t.Errorf("algorithms %q, want %q", j.Algorithms, wantAlgs)
	}

	if len(cfg.VirtualHosts) != 2 {
		t.Fatalf("vhosts: %v", cfg.VirtualHosts)
	}
	demo := cfg.VirtualHosts["demo"]
	want := &router.VirtualHost{Name: "demo", Backends: map[string]*router.Backend{
		"gateway-one": {
			Config: upstream.Config{
				Key: "gateway-one", URL: "http://127.0.0.1:9001/mcp", Transport: upstream.TransportStreamableHTTP,
				Timeout: 30 * time.Second, PassthroughHeaders: []string{"X-Tenant"},
				AddHeaders: map[string]string{"Authorization": "Bearer " + testBackendToken}, RemoveHeaders: []string{},
			},
			ToolNameAliases: map[string]string{"Public.Tool": "get_stats"}, Session: router.SessionPerRequest,
		},
		"gateway-two": {
			Config: upstream.Config{
				Key: "gateway-two", URL: "http://127.0.0.1:9002/mcp", Transport: upstream.TransportStreamableHTTP,
				Timeout: DefaultTimeout, PassthroughHeaders: []string{}, AddHeaders: map[string]string{}, RemoveHeaders: []string{},
			},
			ToolNameAliases: map[string]string{}, Session: router.SessionAuto,
		},
	}}
	if !reflect.DeepEqual(demo, want) {
		t.Errorf("demo vhost:\n got %+v\nwant %+v", *demo.Backends["gateway-one"], *want.Backends["gateway-one"])
	}
	old := cfg.VirtualHosts["legacy"].Backends["old"]
	if old.Transport != upstream.TransportSSE || old.Session != router.SessionReuse || old.Timeout != 5*time.Second ||
		old.ListCacheTTL != 30*time.Second ||
		!reflect.DeepEqual(old.RemoveHeaders, []string{"User-Agent"}) {
		t.Errorf("legacy backend: %+v", *old)
	}
}

func TestConfig_AppliesDefaults(t *testing.T) {
	cfg := mustParse(t, minimal)
	b := cfg.VirtualHosts["demo"].Backends["one"]
	switch {
	case cfg.SessionTTL != DefaultSessionTTL, cfg.MaxBodyBytes != DefaultMaxBodyBytes, cfg.CursorSecret != nil,
		len(cfg.AllowedHosts) != 0, len(cfg.AllowedOrigins) != 0, cfg.Auth.Mode != ModeNone, cfg.Auth.JWT != nil:
		t.Errorf("top-level defaults: %+v", cfg)
	case b.Key != "one", b.Transport != upstream.TransportStreamableHTTP, b.Session != router.SessionAuto,
		b.Timeout != DefaultTimeout, b.AddHeaders == nil, b.ToolNameAliases == nil, b.ListCacheTTL != 0:
		t.Errorf("backend defaults: %+v", *b)
	}
	if cfg.VirtualHosts["demo"].Name != "demo" {
		t.Errorf("vhost name not filled")
	}
}

func TestConfig_NormalisesHeadersHostsAndOrigins(t *testing.T) {
	t.Setenv("MCPGW_TEST_TENANT", "acme")
	cfg := mustParse(t, `
allowed_hosts: [LocalHost, "gw.example.com:8443", localhost]
allowed_origins: ["HTTPS://App.Example.com", "http://localhost:3000/"]
auth: {mode: none}
virtual_hosts:
  demo:
    backends:
      one:
        url: http://127.0.0.1:9001/mcp
        passthrough_headers: [x-tenant, X-TENANT, x-request-id]
        add_headers: {x-api-key: "k-${MCPGW_TEST_TENANT}-$x"}
        remove_headers: [user-agent]
`)
	if want := []string{"localhost", "gw.example.com:8443"}; !reflect.DeepEqual(cfg.AllowedHosts, want) {
		t.Errorf("hosts %q, want %q", cfg.AllowedHosts, want)
	}
	if want := []string{"https://app.example.com", "http://localhost:3000"}; !reflect.DeepEqual(cfg.AllowedOrigins, want) {
		t.Errorf("origins %q, want %q", cfg.AllowedOrigins, want)
	}
	b := cfg.VirtualHosts["demo"].Backends["one"]
	if want := []string{"X-Tenant", "X-Request-Id"}; !reflect.DeepEqual(b.PassthroughHeaders, want) {
		t.Errorf("passthrough %q, want %q", b.PassthroughHeaders, want)
	}
	if want := map[string]string{"X-Api-Key": "k-acme-$x"}; !reflect.DeepEqual(b.AddHeaders, want) {
		t.Errorf("add_headers %q, want %q", b.AddHeaders, want)
	}
	if want := []string{"User-Agent"}; !reflect.DeepEqual(b.RemoveHeaders, want) {
		t.Errorf("remove %q, want %q", b.RemoveHeaders, want)
	}
}

func TestConfig_ExpandsEnvOnlyInAddHeaderValues(t *testing.T) {
	t.Setenv("MCPGW_TEST_A", "alpha")
	t.Setenv("MCPGW_TEST_EMPTY", "")
	cfg := mustParse(t, `
auth:
  mode: none
virtual_hosts:
  demo:
    backends:
      one:
        url: http://127.0.0.1:9001/mcp?x=${MCPGW_TEST_A}
        add_headers:
          X-One: "${MCPGW_TEST_A}"
          X-Two: "pre ${MCPGW_TEST_A}/${MCPGW_TEST_A} post"
          X-Empty: "${MCPGW_TEST_EMPTY}"
          X-Plain: "no $MCPGW_TEST_A braces"
        tool_name_aliases: {"${MCPGW_TEST_A}": "${MCPGW_TEST_A}"}
`)
	b := cfg.VirtualHosts["demo"].Backends["one"]
	want := map[string]string{"X-One": "alpha", "X-Two": "pre alpha/alpha post", "X-Empty": "", "X-Plain": "no $MCPGW_TEST_A braces"}
	if !reflect.DeepEqual(b.AddHeaders, want) {
		t.Errorf("add_headers %q, want %q", b.AddHeaders, want)
	}
	if b.URL != "http://127.0.0.1:9001/mcp?x=${MCPGW_TEST_A}" {
		t.Errorf("url was expanded: %q", b.URL)
	}
	if b.ToolNameAliases["${MCPGW_TEST_A}"] != "${MCPGW_TEST_A}" {
		t.Errorf("aliases were expanded: %q", b.ToolNameAliases)
	}
}

func TestConfig_UnsetEnvErrorsWithoutLeaking(t *testing.T) {
	os.Unsetenv("MCPGW_TEST_UNSET") //nolint:errcheck // make sure
	t.Setenv("MCPGW_TEST_BACKEND_ONE_TOKEN", testBackendToken)
	y := withBackends(`
one:
  url: http://127.0.0.1:9001/mcp
  add_headers: {Authorization: "Bearer ` + testBackendToken + ` ${MCPGW_TEST_UNSET}"}
`)
	checkErr(t, y, "virtual_hosts.demo.backends.one.add_headers.Authorization", "MCPGW_TEST_UNSET", "not set")

	// Set to a value with a newline: rejected without printing the value.
	t.Setenv("MCPGW_TEST_NEWLINE", testBackendToken+"\r\nX-Evil: 1")
	checkErr(t, withBackends(`
one:
  url: http://127.0.0.1:9001/mcp
  add_headers: {X-Key: "${MCPGW_TEST_NEWLINE}"}
`), "add_headers.X-Key", "control character")

	for name, value := range map[string]string{"unterminated": "a ${MCPGW_TEST_BACKEND_ONE_TOKEN", "bad name": "${1X}"} {
		t.Run(name, func(t *testing.T) {
			checkErr(t, withBackends("one:\n  url: http://h/mcp\n  add_headers: {X-Key: \""+value+"\"}\n"), "add_headers.X-Key")
		})
	}
}

func TestConfig_RejectsUnknownFields(t *testing.T) {
	cases := map[string]struct{ yaml, path string }{
		"top level":        {"sesion_ttl: 1h\n" + minimal, "sesion_ttl: unknown field"},
		"auth":             {"auth:\n  mode: none\n  modes: x\nvirtual_hosts: {}\n", "auth.modes: unknown field"},
		"jwt":              {withJWT("issuer: i\naudience: a\nhs_secret: x\n"), "auth.jwt.hs_secret: unknown field"},
		"vhost":            {"auth: {mode: none}\nvirtual_hosts:\n  demo:\n    backend: {}\n", "virtual_hosts.demo.backend: unknown field"},
		"backend":          {withBackends("one:\n  url: http://h/mcp\n  tiemout: 3s\n"), "virtual_hosts.demo.backends.one.tiemout: unknown field"},
		"duplicate":        {withBackends("one:\n  url: http://h/mcp\n  url: http://h/mcp\n"), "virtual_hosts.demo.backends.one.url: duplicate key"},
		"wrong shape list": {"allowed_hosts: localhost\n" + minimal, "allowed_hosts: must be a list"},
		"wrong shape map":  {withBackends("one:\n  url: http://h/mcp\n  add_headers: [X-A]\n"), "backends.one.add_headers: must be a mapping"},
		"wrong shape int":  {"max_body_bytes: lots\n" + minimal, "max_body_bytes: must be an integer"},
		"wrong shape str":  {withBackends("one:\n  url: {a: b}\n"), "backends.one.url: must be a string"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml, c.path, "(line ") })
	}
}

func TestConfig_RejectsMalformedDocuments(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"empty":      {"", "empty configuration"},
		"syntax":     {"auth: [\n", "invalid YAML"},
		"two docs":   {minimal + "---\n" + minimal, "more than one YAML document"},
		"not a map":  {"- a\n- b\n", "must be a mapping"},
		"no vhosts":  {"auth: {mode: none}\n", "virtual_hosts: at least one virtual host is required"},
		"no backend": {"auth: {mode: none}\nvirtual_hosts:\n  demo: {}\n", "virtual_hosts.demo.backends: at least one backend is required"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml, c.want) })
	}
}

func TestConfig_RejectsBadURLs(t *testing.T) {
	const path = "virtual_hosts.demo.backends.one.url: "
	cases := map[string]struct{ url, want string }{
		"missing":      {`""`, path + "required"},
		"ftp":          {"ftp://x", path + `"ftp://x" is not an http(s) URL`},
		"relative":     {"/mcp", path + `"/mcp" is not an http(s) URL`},
		"no host":      {"http:///mcp", path + `"http:///mcp" is not an http(s) URL`},
		"opaque":       {"http:foo", "is not an http(s) URL"},
		"unparsable":   {`"http://[::1"`, path + `"http://[::1" is not a valid URL`},
		"control char": {`"http://h/\u0001"`, path + `"http://h/\x01" is not a valid URL`},
		"no scheme":    {"127.0.0.1:9001/mcp", path + `"127.0.0.1:9001/mcp" is not a valid URL (missing scheme? write "http://127.0.0.1:9001/mcp")`},
		"host:port":    {"localhost:9001", path + `"localhost:9001" is not an http(s) URL (missing scheme? write "http://localhost:9001")`},
		"mangled":      {"https//h/mcp", path + `"https//h/mcp" is not an http(s) URL (missing scheme? write "https://h/mcp")`},
		"host only":    {"backend/mcp", path + `"backend/mcp" is not an http(s) URL (missing scheme? write "http://backend/mcp")`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { checkErr(t, withBackends("one:\n  url: "+c.url+"\n"), c.want) })
	}
	// Credentials in a URL are redacted in messages.
	for _, u := range []string{"ftp://user:hunter2@h/x", "h:1/x?key=hunter2", "user:hunter2@h:1/mcp", `"http://u:hunter2@[::1"`} {
		_, err := Parse([]byte(withBackends("one:\n  url: "+u+"\n")), src)
		if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "xxxxx") {
			t.Errorf("%s: URL secret leaked, not shown redacted, or not rejected: %v", u, err)
		}
	}
}

func TestConfig_RejectsBadEnumsAndDurations(t *testing.T) {
	b := func(field string) string { return withBackends("one:\n  url: http://h/mcp\n  " + field + "\n") }
	cases := map[string]struct{ yaml, want string }{
		"transport":       {b("transport: websocket"), `virtual_hosts.demo.backends.one.transport: "websocket" is not a transport`},
		"session":         {b("session: sticky"), `virtual_hosts.demo.backends.one.session: "sticky" is not a session mode (want one of auto, per-request, reuse, per-principal)`},
		"timeout syntax":  {b("timeout: 30"), `virtual_hosts.demo.backends.one.timeout: "30" is not a duration`},
		"timeout zero":    {b("timeout: 0s"), "virtual_hosts.demo.backends.one.timeout: must be positive"},
		"timeout neg":     {b("timeout: -1s"), "virtual_hosts.demo.backends.one.timeout: must be positive"},
		"list cache neg":  {b("list_cache: -5s"), "virtual_hosts.demo.backends.one.list_cache: must not be negative"},
		"list cache unit": {b("list_cache: 30"), `virtual_hosts.demo.backends.one.list_cache: "30" is not a duration`},
		"ttl syntax":      {"session_ttl: forever\n" + minimal, `session_ttl: "forever" is not a duration`},
		"ttl zero":        {"session_ttl: 0s\n" + minimal, "session_ttl: must be positive"},
		"ttl under 1s":    {"session_ttl: 500ms\n" + minimal, "session_ttl: must be at least 1s"},
		"max body zero":   {"max_body_bytes: 0\n" + minimal, "max_body_bytes: must be positive"},
		"max body neg":    {"max_body_bytes: -5\n" + minimal, "max_body_bytes: must be positive"},
		"leeway negative": {withJWT("issuer: i\naudience: a\nleeway: -1s\npublic_key_file: testdata/keys/jwt.pem\n"), "auth.jwt.leeway: must not be negative"},
		"leeway syntax":   {withJWT("issuer: i\naudience: a\nleeway: soon\npublic_key_file: testdata/keys/jwt.pem\n"), `auth.jwt.leeway: "soon" is not a duration`},
		"host empty":      {"allowed_hosts: [\"\"]\n" + minimal, "allowed_hosts[0]: empty host"},
		"host url":        {"allowed_hosts: [localhost, \"http://x\"]\n" + minimal, "allowed_hosts[1]: "},
		"host star":       {"allowed_hosts: [\"*\"]\n" + minimal, "allowed_hosts[0]: "},
		"origin path":     {"allowed_origins: [\"https://a.example/x\"]\n" + minimal, "allowed_origins[0]: "},
		"origin bare":     {"allowed_origins: [a.example]\n" + minimal, "allowed_origins[0]: "},
		"origin star":     {"allowed_origins: [\"*\"]\n" + minimal, "allowed_origins[0]: "},
		"discovery min":   {"discovery: {min_ttl: 10ms}\n" + minimal, "discovery.min_ttl: must be at least 1s"},
		"discovery max":   {"discovery: {min_ttl: 1m, max_ttl: 30s}\n" + minimal, "discovery.max_ttl: must be at least 1m0s"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml, c.want) })
	}
}

func TestConfig_RejectsBadNames(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"vhost slash":  {"auth: {mode: none}\nvirtual_hosts:\n  a/b:\n    backends: {one: {url: http://h}}\n", `virtual_hosts["a/b"]: virtual host names may only hold`},
		"vhost space":  {"auth: {mode: none}\nvirtual_hosts:\n  a b:\n    backends: {one: {url: http://h}}\n", `virtual_hosts["a b"]: `},
		"vhost dotdot": {"auth: {mode: none}\nvirtual_hosts:\n  ..:\n    backends: {one: {url: http://h}}\n", `virtual_hosts[".."]: ".." cannot be a virtual host name`},
		"vhost empty":  {"auth: {mode: none}\nvirtual_hosts:\n  \"\":\n    backends: {one: {url: http://h}}\n", `virtual_hosts[""]: `},
		"key slash":    {withBackends("a/b: {url: http://h}\n"), `virtual_hosts.demo.backends["a/b"]: backend keys may only hold`},
		"key empty":    {withBackends("\"\": {url: http://h}\n"), `virtual_hosts.demo.backends[""]: backend keys may only hold`},
		"key unicode":  {withBackends("é: {url: http://h}\n"), `backend keys may only hold`},
		"backend null": {withBackends("one:\n"), "virtual_hosts.demo.backends.one.url: required"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml, c.want) })
	}
	// Dots, underscores and dashes are fine.
	mustParse(t, "auth: {mode: none}\nvirtual_hosts:\n  my.v_h-1:\n    backends: {b.k_1-x: {url: http://h}}\n")
}

func TestConfig_RejectsAmbiguousBackendKeys(t *testing.T) {
	cases := map[string]struct{ backends, want string }{
		"dash prefix":   {"gateway: {url: http://h/1}\ngateway-one: {url: http://h/2}\n", `backend keys "gateway" and "gateway-one" are ambiguous`},
		"deeper prefix": {"a-b: {url: http://h/1}\na-b-c: {url: http://h/2}\n", `backend keys "a-b" and "a-b-c" are ambiguous`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			checkErr(t, withBackends(c.backends), "virtual_hosts.demo.backends.", c.want)
		})
	}
	// A plain prefix without the dash is not ambiguous: the splitter needs the dash.
	mustParse(t, withBackends("gateway: {url: http://h/1}\ngatewayone: {url: http://h/2}\n"))
	mustParse(t, withBackends("one: {url: http://h/1}\none_two: {url: http://h/2}\n"))
}

func TestConfig_RejectsBadAliases(t *testing.T) {
	cases := map[string]struct{ backends, want string }{
		"used by two backends": {
			"one: {url: http://h/1, tool_name_aliases: {Public.Tool: a}}\ntwo: {url: http://h/2, tool_name_aliases: {Public.Tool: b}}\n",
			`virtual_hosts.demo.backends.two.tool_name_aliases["Public.Tool"]: alias "Public.Tool" is used by backends "one" and "two"`,
		},
		"empty alias":  {"one: {url: http://h/1, tool_name_aliases: {\"\": a}}\n", `tool_name_aliases[""]: empty alias`},
		"empty target": {"one: {url: http://h/1, tool_name_aliases: {x: \"\"}}\n", `virtual_hosts.demo.backends.one.tool_name_aliases.x: alias "x" has an empty target`},
		"null target":  {"one: {url: http://h/1, tool_name_aliases: {x: }}\n", `tool_name_aliases.x: alias "x" has an empty target`},
		"space":        {"one: {url: http://h/1, tool_name_aliases: {\"a b\": x}}\n", `tool_name_aliases["a b"]: alias "a b" may not hold spaces`},
		"shadows prefix": {
			"one: {url: http://h/1, tool_name_aliases: {two-x: y}}\ntwo: {url: http://h/2}\n",
			`alias "two-x" would shadow the prefixed tool names of backend "two"`,
		},
		"duplicate in one backend": {"one: {url: http://h/1, tool_name_aliases: {x: a, x: b}}\n", "tool_name_aliases.x: duplicate key"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { checkErr(t, withBackends(c.backends), c.want) })
	}
	// On a single-backend vhost no prefix exists, so any alias is fine; two
	// aliases may share a target.
	mustParse(t, withBackends("one: {url: http://h/1, tool_name_aliases: {one-x: y, A: y}}\n"))
}

func TestConfig_RejectsProtectedHeaders(t *testing.T) {
	protected := []string{"Host", "content-length", "Content-Type", "ACCEPT", "Connection", "Keep-Alive",
		"Proxy-Authenticate", "Proxy-Authorization", "TE", "Trailer", "Transfer-Encoding", "Upgrade",
		"Mcp-Session-Id", "MCP-Protocol-Version", "Last-Event-ID",
		// The upstream client drops these too: config must refuse them
		// rather than accept and silently ignore them.
		"Accept-Encoding", "Mcp-Method", "Mcp-Name", "Mcp-Param-Region"}
	for _, h := range protected {
		t.Run(h, func(t *testing.T) {
			canon := strings.ToLower(h)
			checkErr(t, withBackends("one:\n  url: http://h\n  add_headers: {"+h+": x}\n"), "backends.one.add_headers."+h+": ", "protected header")
			checkErr(t, withBackends("one:\n  url: http://h\n  passthrough_headers: ["+h+"]\n"), "backends.one.passthrough_headers[0]: ", "protected header")
			checkErr(t, withBackends("one:\n  url: http://h\n  remove_headers: [x-ok, "+h+"]\n"), "backends.one.remove_headers[1]: ", "protected header")
			if !ProtectedHeader(h) || !ProtectedHeader(canon) {
				t.Errorf("ProtectedHeader(%q) = false", h)
			}
		})
	}
	for _, h := range []string{"Authorization", "authorization", "Cookie"} {
		t.Run("passthrough "+h, func(t *testing.T) {
			checkErr(t, withBackends("one:\n  url: http://h\n  passthrough_headers: [X-Tenant, "+h+"]\n"),
				"backends.one.passthrough_headers[1]: ", "never passed through")
		})
	}
	for _, h := range []string{"Authorization", "X-Tenant", "Cookie", "User-Agent"} {
		if ProtectedHeader(h) {
			t.Errorf("ProtectedHeader(%q) = true", h)
		}
	}
	// Authorization may carry a backend credential.
	cfg := mustParse(t, withBackends("one:\n  url: http://h\n  add_headers: {authorization: Bearer b}\n"))
	if got := cfg.VirtualHosts["demo"].Backends["one"].AddHeaders["Authorization"]; got != "Bearer b" {
		t.Errorf("Authorization add_header = %q", got)
	}
}

func TestConfig_RejectsConflictingHeaders(t *testing.T) {
	cases := map[string]struct{ backend, want string }{
		"bad name":             {"add_headers: {\"X Y\": v}", `add_headers["X Y"]: "X Y" is not a valid header name`},
		"bad passthrough name": {"passthrough_headers: [\"a:b\"]", `passthrough_headers[0]: "a:b" is not a valid header name`},
		"case duplicate":       {"add_headers: {X-A: v, x-a: w}", "header X-A is set twice"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			checkErr(t, withBackends("one:\n  url: http://h\n  "+c.backend+"\n"), "virtual_hosts.demo.backends.one.", c.want)
		})
	}
}

// A header may be passed through and added (add overrides) or also
// removed (remove wins: removed last), the precedence docs/guide/backends.md
// states; router/upstream applies it at request time.
func TestConfig_AllowsOverlappingHeaderRulesWithPrecedence(t *testing.T) {
	cfg, err := Parse([]byte(withBackends("one:\n  url: http://h\n  add_headers: {X-A: v}\n  passthrough_headers: [x-a, X-B]\n  remove_headers: [x-b]\n")), src)
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.VirtualHosts["demo"].Backends["one"]
	if b.AddHeaders["X-A"] != "v" || len(b.PassthroughHeaders) != 2 || b.RemoveHeaders[0] != "X-B" {
		t.Fatalf("header rules not kept: %+v", b)
	}
}

func TestConfig_ReportsEveryProblemOnItsOwnLine(t *testing.T) {
	_, err := Parse([]byte(withBackends("one:\n  url: ftp://x\n  transport: ws\n  session: s\n")), src)
	if err == nil {
		t.Fatal("want errors")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines, got %q", lines)
	}
	want := `config.yaml: virtual_hosts.demo.backends.one.url: "ftp://x" is not an http(s) URL (line 7)`
	if lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
}

func TestConfig_SecretsNeverAppearInErrors(t *testing.T) {
	setSecrets(t)
	t.Setenv("MCPGW_TEST_CTRL", testBackendToken+"\x01")
	// Every one of these fails; checkErr rejects any message holding a secret.
	configs := []string{
		withJWT("issuer: i\naudience: a\nhs_secret_env: MCPGW_TEST_JWT_SECRET\nalgorithms: [ES256]\n"),
		withJWT("issuer: i\nhs_secret_env: MCPGW_TEST_JWT_SECRET\n"),
		"cursor_secret_env: MCPGW_TEST_CURSOR_SECRET\nsession_ttl: 0s\n" + minimal,
		withBackends("one:\n  url: http://h\n  add_headers: {Authorization: \"" + testBackendToken + "\", X-B: \"${MCPGW_TEST_CTRL}\"}\n"),
		withBackends("one:\n  url: http://h\n  add_headers: {Host: \"" + testBackendToken + "\"}\n"),
		withBackends("one:\n  url: http://h\n  add_headers: {X-A: [\"" + testBackendToken + "\"]}\n"),
		withBackends("one:\n  url: http://h\n  add_headers: {X-A: {k: \"" + testBackendToken + "\"}}\n"),
		withBackends("one:\n  url: http://h\n  add_headers: {X-A: \"" + testBackendToken + "\", X-A: \"" + testBackendToken + "\"}\n"),
		withBackends("one:\n  url: http://h\n  add_headers: {X-A: \"" + testBackendToken + "${\"}\n"),
	}
	for i, y := range configs {
		t.Run(string(rune('a'+i)), func(t *testing.T) { checkErr(t, y) })
	}
}

func TestConfig_StreamsSection(t *testing.T) {
	cfg, err := Parse([]byte("streams:\n  event_log_size: 50\n  linger: 10s\n  client_request_timeout: 2m\n  keep_alive: 20s\n  call_lease: 4s\n"+minimal), src)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Streams.EventLogSize != 50 || cfg.Streams.Linger != 10*time.Second || cfg.Streams.ClientRequestTimeout != 2*time.Minute ||
		cfg.Streams.KeepAlive != 20*time.Second || cfg.Streams.CallLease != 4*time.Second {
		t.Fatalf("streams = %+v", cfg.Streams)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"streams:\n  event_log_size: 0\n", "streams.event_log_size"},
		{"streams:\n  linger: soon\n", "streams.linger"},
		{"streams:\n  client_request_timeout: 0s\n", "streams.client_request_timeout"},
		{"streams:\n  keep_alive: 10ms\n", "streams.keep_alive: must be at least 100ms"},
		{"streams:\n  call_lease: 500ms\n", "streams.call_lease: must be at least 1s"},
		{"streams:\n  bogus: 1\n", "bogus"},
	} {
		checkErr(t, bad.yaml+minimal, bad.want)
	}
}

func TestConfig_ResourceMetadata(t *testing.T) {
	withPRM := func(prm string) string {
		return "auth:\n  mode: jwt\n  jwt:\n    issuer: i\n    audience: a\n    public_key_file: testdata/keys/jwt.pem\n" +
			"  resource_metadata:\n" + indent(prm, "    ") +
			"virtual_hosts:\n  demo:\n    backends:\n      one:\n        url: http://127.0.0.1:9001/mcp\n"
	}
	cfg := mustParse(t, withPRM("authorization_servers: [https://auth.example/realms/mcp]\nscopes_supported: [mcp]\npublic_url: https://gw.example.com/prod/\n"))
	rm := cfg.Auth.ResourceMetadata
	if rm == nil || !reflect.DeepEqual(rm.AuthorizationServers, []string{"https://auth.example/realms/mcp"}) ||
		!reflect.DeepEqual(rm.ScopesSupported, []string{"mcp"}) || rm.PublicURL != "https://gw.example.com/prod" {
		t.Fatalf("resource metadata %+v", rm)
	}
	if cfg := mustParse(t, withJWT("issuer: i\naudience: a\npublic_key_file: testdata/keys/jwt.pem\n")); cfg.Auth.ResourceMetadata != nil {
		t.Fatal("resource metadata without the section")
	}
	for name, c := range map[string]struct{ yaml, want string }{
		"no servers":   {withPRM("scopes_supported: [mcp]\n"), "auth.resource_metadata.authorization_servers: at least one"},
		"bad server":   {withPRM("authorization_servers: [auth.example]\n"), "auth.resource_metadata.authorization_servers[0]"},
		"bad scope":    {withPRM("authorization_servers: [https://a.example]\nscopes_supported: [\"a b\"]\n"), "auth.resource_metadata.scopes_supported[0]"},
		"query in url": {withPRM("authorization_servers: [https://a.example]\npublic_url: https://gw.example?x=1\n"), "auth.resource_metadata.public_url: must not have a query"},
		"auth none":    {"auth:\n  mode: none\n  resource_metadata:\n    authorization_servers: [https://a.example]\n" + minimal[strings.Index(minimal, "virtual_hosts:"):], "auth.resource_metadata: needs auth.mode jwt"},
	} {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml, c.want) })
	}
}

// A YAML mistake is reported at its own line, not at the line where the
// construct around it begins (which the YAML library reports, sometimes
// minus one).
func TestConfig_YAMLErrorsNameTheLineOfTheMistake(t *testing.T) {
	cases := map[string]struct {
		yaml string
		line int
	}{
		"tab in indentation":      {"auth:\n  mode: none\n\tbad: 1\n", 3},
		"key indented too little": {"auth: {mode: none}\nvirtual_hosts:\n  d:\n    backends:\n      a:\n        url: http://x\n       timeout: 3s\n", 7},
		"missing colon":           {"auth: {mode: none}\nvirtual_hosts\n  d: 1\n", 2},
		"unclosed flow map":       {"auth: {mode: none}\nvirtual_hosts:\n  d:\n    backends:\n      a: {url: http://x\n", 5},
		"list item in a map":      {"auth: {mode: none}\nallowed_hosts:\n  - a\n  b: 2\n", 4},
		"unclosed quote":          {"auth: {mode: none}\nvirtual_hosts:\n  d:\n    backends:\n      a:\n        url: 'http://x\n", 6},
		"stray indented line":     {"auth: {mode: none}\n session_ttl: 1h\n", 2},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml), "gateway.yaml")
			var ce *Error
			if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "invalid YAML") || ce.Line != c.line {
				t.Fatalf("got %v, want an invalid YAML error at line %d", err, c.line)
			}
			if want := fmt.Sprintf("(line %d)", c.line); !strings.HasSuffix(err.Error(), want) {
				t.Fatalf("message %q does not end with %q", err, want)
			}
		})
	}
}

// Every session mode reads back; discovery bounds default and parse.
func TestConfig_SessionModesAndDiscovery(t *testing.T) {
	for _, m := range router.SessionModes {
		cfg := mustParse(t, withBackends("one:\n  url: http://h/mcp\n  session: "+string(m)+"\n"))
		if got := cfg.VirtualHosts["demo"].Backends["one"].Session; got != m {
			t.Errorf("session: %s read as %q", m, got)
		}
	}
	if d := mustParse(t, minimal).Discovery; d.MinTTL != DefaultDiscoveryMinTTL || d.MaxTTL != DefaultDiscoveryMaxTTL {
		t.Errorf("discovery defaults %+v", d)
	}
	if d := mustParse(t, "discovery: {min_ttl: 2s, max_ttl: 5s}\n"+minimal).Discovery; d.MinTTL != 2*time.Second || d.MaxTTL != 5*time.Second {
		t.Errorf("discovery %+v, want 2s and 5s", d)
	}
}
