package config

// The file format: the raw types the YAML is decoded into, before
// validation. Their field comments are written for the people who write
// the file: internal/config/gen turns them, with the jsonschema tags
// (enums, defaults, bounds), into docs/reference/config.md and
// docs/reference/gateway.schema.json, so a field documented here is
// documented everywhere. Optional scalars are pointers so that an absent
// field can be told apart from a zero value; durations and sizes are
// strings so that errors can name the field. Feature blocks (access,
// plugins, tasks, stdio, openapi, ...) keep their raw types in their own
// files.

type rawConfig struct {
	// How long a session lives without a request; every request extends
	// it (sliding).
	SessionTTL *rawDuration `yaml:"session_ttl" jsonschema:"default=1h"`
	// The Host header allow-list (DNS rebinding protection): host names,
	// with or without a port. Empty allows any Host. Probes (/healthz,
	// /readyz) are not checked.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// Browser origins ("scheme://host[:port]") allowed besides the
	// gateway's own. A request without Origin (a non-browser client)
	// passes; any other Origin gets 403.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// The largest POST body in bytes; a larger one gets 413.
	MaxBodyBytes *int64 `yaml:"max_body_bytes" jsonschema:"default=4194304,minimum=1"`
	// Environment variable holding the pagination-cursor signing key (the
	// same on every instance). Without it a key is generated once and
	// shared through the store.
	CursorSecretEnv string `yaml:"cursor_secret_env"`
	// Notifications and server-to-client traffic (GET streams, sampling,
	// elicitation, roots).
	Streams *rawStreams `yaml:"streams"`
	// The session store (Redis).
	Store *rawStore `yaml:"store"`
	// The plain HTTP server's timeouts (not used on AWS Lambda, where the
	// platform owns the connections).
	Server *rawServer `yaml:"server"`
	// The longest JSON-RPC batch (protocol 2025-03-26); a longer one is
	// refused whole with HTTP 400 and -32600. A batch runs at most 8 calls
	// at once.
	MaxBatch *int64 `yaml:"max_batch" jsonschema:"default=50,minimum=1,maximum=1000"`
	// The items of one list page (tools/list, resources/list, ...),
	// whatever the number of backends.
	MaxPageItems *int64 `yaml:"max_page_items" jsonschema:"default=1000,minimum=1,maximum=100000"`
	// What clients can make one instance hold; every bound has a default.
	Limits *rawLimits `yaml:"limits"`
	// How long a backend's or issuer's discovered metadata is trusted.
	Discovery *rawDiscovery `yaml:"discovery"`
	// OpenTelemetry tracing; off unless an endpoint is set here or in
	// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT.
	Tracing *rawTracing `yaml:"tracing"`
	// The audit trail: one JSON line per routed request and per refusal
	// that names a caller or a target. Off when absent.
	Audit *rawAudit `yaml:"audit"`
	// How clients authenticate to the gateway.
	Auth *rawAuth `yaml:"auth" jsonschema:"required"`
	// The gateway's base URL as a browser reaches it, without a trailing
	// slash. Needed by credentials.user_oauth: every redirect URI is
	// {public_url}/oauth/callback.
	PublicURL string `yaml:"public_url"`
	// Seals users' third-party tokens (credentials.user_oauth) in the
	// store.
	UserTokens *rawUserTokens `yaml:"user_tokens"`
	// The virtual hosts, by name: each is served at /servers/{name}/mcp.
	VirtualHosts map[string]*rawVHost `yaml:"virtual_hosts" jsonschema:"required"`
}

type rawStreams struct {
	// Events kept per session for resumption with Last-Event-ID.
	EventLogSize *int64 `yaml:"event_log_size" jsonschema:"default=1000,minimum=1,maximum=1000000"`
	// How long a dropped GET stream's backend listeners keep running, so a
	// reconnecting client misses nothing.
	Linger *rawDuration `yaml:"linger" jsonschema:"default=30s"`
	// How long a backend's sampling, elicitation or roots request waits
	// for the client (the backend's timeout stops meanwhile).
	ClientRequestTimeout *rawDuration `yaml:"client_request_timeout" jsonschema:"default=5m"`
	// How often an idle SSE stream carries a comment; a call running
	// longer than this is answered as a stream. At least 100ms.
	KeepAlive *rawDuration `yaml:"keep_alive" jsonschema:"default=15s"`
	// How long a call answered as a stream may go without its instance
	// renewing its lease before a resume on another instance ends it with
	// -32603 (the instance is gone). At least 1s.
	CallLease *rawDuration `yaml:"call_lease" jsonschema:"default=10s"`
}

type rawStore struct {
	// Bounds each store operation, connection wait and retries included:
	// past it the request fails with HTTP 503 and -32603. At least 10ms;
	// a change needs a restart.
	Timeout *rawDuration `yaml:"timeout" jsonschema:"default=2s"`
}

type rawServer struct {
	// Bounds reading a request's headers; a connection opened and left
	// silent is closed after it.
	ReadHeaderTimeout *rawDuration `yaml:"read_header_timeout" jsonschema:"default=10s"`
	// Bounds reading a request's body (408 past it). It never cuts a GET
	// stream or a long call answered as a stream.
	ReadTimeout *rawDuration `yaml:"read_timeout" jsonschema:"default=30s"`
	// Closes a keep-alive connection that waits this long for its next
	// request.
	IdleTimeout *rawDuration `yaml:"idle_timeout" jsonschema:"default=2m"`
}

type rawLimits struct {
	// Bytes of backend answers one instance holds at once. A request whose
	// answer does not fit waits for room; one larger than the whole budget
	// fails with -32603 naming the backend. At least 1MiB.
	InflightResponseBytes *rawSize `yaml:"inflight_response_bytes" jsonschema:"default=256MiB"`
	// Open subscriptions/listen streams of one principal on one instance.
	ListensPerPrincipal *int64 `yaml:"listens_per_principal" jsonschema:"default=8,minimum=1,maximum=1000"`
	// Distinct resourceSubscriptions in one subscriptions/listen request.
	ListenURIs *int64 `yaml:"listen_uris" jsonschema:"default=100,minimum=1,maximum=10000"`
	// Calls of one principal parked for client input at once, across
	// every instance.
	ParkedCallsPerPrincipal *int64 `yaml:"parked_calls_per_principal" jsonschema:"default=8,minimum=1,maximum=1000"`
	// Gateway-run tasks of one principal running at once, across every
	// instance.
	TasksPerPrincipal *int64 `yaml:"tasks_per_principal" jsonschema:"default=16,minimum=1,maximum=10000"`
	// What one principal's finished gateway-run tasks hold in the store
	// while they are kept for tasks/get (each charged its record plus 512
	// bytes). At the budget no task starts (429). At least 64KiB.
	FinishedTaskBytes *rawSize `yaml:"finished_task_bytes_per_principal" jsonschema:"default=64MiB"`
	// The longest a backend's tasks.ttl may be. At least 1s.
	TaskTTLMax *rawDuration `yaml:"task_ttl_max" jsonschema:"default=24h"`
}

type rawAuth struct {
	// jwt: every request needs a bearer token of a trusted issuer; none:
	// every caller is principal "anonymous" (local use only).
	Mode string `yaml:"mode" jsonschema:"required,enum=jwt,enum=none"`
	// The one trusted token issuer (or issuers, for several).
	JWT *rawJWT `yaml:"jwt"`
	// Several trusted issuers instead of jwt, each with jwt's fields. A
	// token is matched to its issuer by iss; principals become
	// "{iss}#{sub}".
	Issuers []*rawJWT `yaml:"issuers"`
	// OAuth 2.0 Protected Resource Metadata (RFC 9728), so OAuth-capable
	// MCP clients find where to get a token (jwt mode only).
	ResourceMetadata *rawResourceMetadata `yaml:"resource_metadata"`
	// The gateway as an OIDC client of auth.jwt.issuer, for the per-user
	// sign-in pages of credentials.user_oauth.
	Login *rawLogin `yaml:"login"`
	// Makes the gateway the OAuth 2.1 authorization server MCP clients
	// sign in at (docs/guide/authorization-server.md).
	AuthorizationServer *rawAuthorizationServer `yaml:"authorization_server"`
}

type rawResourceMetadata struct {
	// Issuer URLs of the authorization servers whose tokens the gateway
	// accepts. Default: the configured issuers that are URLs.
	AuthorizationServers []string `yaml:"authorization_servers"`
	// Scopes clients may request; also sent as scope="..." in 401
	// challenges.
	ScopesSupported []string `yaml:"scopes_supported"`
	// The gateway's base URL as clients reach it. Default: the top-level
	// public_url, else each request's scheme and Host.
	PublicURL string `yaml:"public_url"`
}

type rawJWT struct {
	// The issuer: a token's iss must equal it byte for byte, trailing
	// slash included. Required.
	Issuer string `yaml:"issuer"`
	// The audience a token's aud (or audience_claim) must hold: one value
	// or a list. "resource" accepts a token only for the vhost being
	// called (its URL). Required.
	Audience stringList `yaml:"audience"`
	// Environment variable holding the HS256/384/512 secret (at least 32
	// bytes).
	HSSecretEnv string `yaml:"hs_secret_env"`
	// PEM file of the RS*/PS*/ES*/EdDSA public key, relative to the
	// config file.
	PublicKeyFile string `yaml:"public_key_file"`
	// The issuer's JWK Set URL; skips discovery. With no key configured at
	// all, the keys are discovered from the issuer (OpenID Connect, else
	// RFC 8414).
	JWKSURL string `yaml:"jwks_url"`
	// The claim the audience is checked in (client_id for Cognito access
	// tokens).
	AudienceClaim string `yaml:"audience_claim" jsonschema:"default=aud"`
	// Allow-list of JWS algorithms. Default: what the keys verify (never
	// none; never HS* with a JWK Set).
	Algorithms []string `yaml:"algorithms" jsonschema:"enum=HS256,enum=HS384,enum=HS512,enum=RS256,enum=RS384,enum=RS512,enum=PS256,enum=PS384,enum=PS512,enum=ES256,enum=ES384,enum=ES512,enum=EdDSA"`
	// Clock skew allowed on exp and nbf.
	Leeway *rawDuration `yaml:"leeway" jsonschema:"default=30s"`
	// Checks opaque (non-JWT) access tokens with RFC 7662 token
	// introspection; at most one issuer may have it.
	Introspection *rawIntrospection `yaml:"introspection"`
}

type rawIntrospection struct {
	// The introspection endpoint: https (http only on a loopback host).
	URL string `yaml:"url"`
	// Client the gateway authenticates as (HTTP Basic); leave out for an
	// endpoint that takes unauthenticated requests.
	ClientID string `yaml:"client_id"`
	// Environment variable holding the client secret.
	ClientSecretEnv string `yaml:"client_secret_env"`
	// How long an active answer is trusted, never past the token's exp;
	// 0 asks every time. At most 1h.
	Cache *rawDuration `yaml:"cache" jsonschema:"default=30s"`
}

type rawVHost struct {
	// The upstream MCP servers, by key. On a vhost with several backends
	// the key prefixes each backend's tool, prompt and resource names
	// ("{key}-{name}").
	Backends map[string]*rawBackend `yaml:"backends"`
	// Access rules, tried in order; once set, what no rule allows is
	// denied.
	Access []*rawAccessRule `yaml:"access"`
	// Plugins run around tools/call, prompts/get and resources/read, in
	// this order.
	Plugins []*rawPlugin `yaml:"plugins"`
	// Rate limits on tools/call, counted in the store and shared by every
	// instance.
	RateLimits []*rawRateLimit `yaml:"rate_limits"`
	// The vhost's Server Card (SEP-2127): a mapping, true for the
	// defaults, or false for no card and no catalog entry.
	Card *rawCard `yaml:"card"`
	// Tool search: tools/list shows search_tools and call_tool (and the
	// tools in always) instead of every tool.
	ToolSearch *rawToolSearch `yaml:"tool_search"`
}

type rawBackend struct {
	// The backend's MCP endpoint (http or https); not with transport
	// stdio or openapi.
	URL string `yaml:"url"`
	// streamable-http (MCP Streamable HTTP), sse (the legacy HTTP+SSE
	// transport) or stdio (a local program: command).
	Transport string `yaml:"transport" jsonschema:"enum=streamable-http,enum=sse,enum=stdio,default=streamable-http"`
	// Bounds each request to the backend.
	Timeout *rawDuration `yaml:"timeout" jsonschema:"default=30s"`
	// Request headers copied from the client's request to the backend
	// (never Authorization or Cookie).
	PassthroughHeaders []string `yaml:"passthrough_headers"`
	// Headers added to every backend request; ${ENV} is expanded at
	// start-up, ${claims.NAME} per request.
	AddHeaders map[string]string `yaml:"add_headers"`
	// Headers removed from backend requests, last: remove wins over add
	// and passthrough.
	RemoveHeaders []string `yaml:"remove_headers"`
	// Extra published names for the backend's tools: alias -> the
	// backend's tool name.
	ToolNameAliases map[string]string `yaml:"tool_name_aliases"`
	// Who the backend's own MCP sessions belong to: auto (one per gateway
	// session for a backend that hands out session ids), per-request,
	// reuse or per-principal (docs/guide/backend-sessions.md).
	Session string `yaml:"session" jsonschema:"enum=auto,enum=per-request,enum=reuse,enum=per-principal,default=auto"`
	// Caches this backend's list pages per instance for this long; 0 is
	// off.
	ListCache *rawDuration `yaml:"list_cache" jsonschema:"default=0s"`
	// How the gateway gets the backend's bearer token: one of
	// token_exchange, client_credentials and user_oauth.
	Credentials *rawCredentials `yaml:"credentials"`
	// Tools the gateway runs as tasks (SEP-2663) for a backend without
	// them.
	Tasks *rawTasks `yaml:"tasks"`
	// transport stdio: the program to run, a name in PATH or a path
	// (relative to the config file).
	Command string `yaml:"command"`
	// transport stdio: the program's arguments.
	Args []string `yaml:"args"`
	// transport stdio: environment variables added to a minimal base
	// (PATH, HOME, USER, LANG, TZ, TMPDIR...); ${ENV} is expanded.
	// Nothing else is inherited.
	Env map[string]string `yaml:"env"`
	// transport stdio: the working directory (relative to the config
	// file). Default: the gateway's.
	Cwd string `yaml:"cwd"`
	// transport stdio: the processes each instance runs.
	Pool *rawPool `yaml:"pool"`
	// A REST API described by OpenAPI, whose operations become tools
	// (docs/guide/openapi.md); instead of url and transport.
	OpenAPI *rawOpenAPI `yaml:"openapi"`
}

// rawCredentials is a backend's outbound credentials: one grant.
type rawCredentials struct {
	// OAuth 2.0 Token Exchange (RFC 8693): a token per caller, for the
	// caller's own token.
	TokenExchange *rawTokenGrant `yaml:"token_exchange"`
	// The client credentials grant: one token for the gateway itself.
	ClientCredentials *rawTokenGrant `yaml:"client_credentials"`
	// Each user's own token at a third party, obtained by authorization
	// code with PKCE through a sign-in link.
	UserOAuth *rawUserOAuth `yaml:"user_oauth"`
}

// rawTokenGrant is the token endpoint and client of either grant.
type rawTokenGrant struct {
	// The token endpoint: https (http only on a loopback host).
	TokenURL string `yaml:"token_url"`
	// The gateway's client id at the token endpoint.
	ClientID string `yaml:"client_id"`
	// Environment variable holding the client secret; must be set.
	ClientSecretEnv string `yaml:"client_secret_env"`
	// The audience parameter of the token request.
	Audience string `yaml:"audience"`
	// The resource parameter (RFC 8707).
	Resource string `yaml:"resource"`
	// Scopes asked for.
	Scopes []string `yaml:"scopes"`
	// token_exchange only: the caller's token type, access_token or jwt.
	SubjectTokenType string `yaml:"subject_token_type" jsonschema:"enum=access_token,enum=jwt,default=access_token"`
	// Bounds one token request.
	Timeout *rawDuration `yaml:"timeout" jsonschema:"default=10s"`
	// Tokens kept per backend.
	CacheSize *int64 `yaml:"cache_size" jsonschema:"default=10000,minimum=1,maximum=1000000"`
}
