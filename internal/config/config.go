// Package config loads and validates the gateway's YAML configuration file.
//
// Parsing is strict: unknown fields, bad durations, URLs, algorithms,
// ambiguous backend keys, duplicate aliases and protected headers are all
// rejected with one-line errors that name the file and the field path.
// Secret values (environment variables, header values) never appear in an
// error message.
package config

import (
	"bytes"
	"crypto"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/credentials"
)

// Defaults applied when a field is absent.
const (
	DefaultSessionTTL   = time.Hour
	DefaultMaxBodyBytes = 4 << 20
	DefaultTimeout      = 30 * time.Second
	DefaultLeeway       = 30 * time.Second
	DefaultStoreTimeout = 2 * time.Second
	DefaultMaxBatch     = 50
	DefaultMaxPageItems = 1000

	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute

	DefaultInflightResponseBytes = 256 << 20

	DefaultListensPerPrincipal     = 8
	DefaultListenURIs              = 100
	DefaultParkedCallsPerPrincipal = 8
)

// Auth modes.
const (
	ModeJWT  = "jwt"
	ModeNone = "none"
)

// Config is a loaded and validated configuration.
type Config struct {
	// Source names where the configuration came from (file path or env var).
	Source     string
	SessionTTL time.Duration
	// AllowedHosts is the Host allow-list (lower-cased); empty allows any Host.
	AllowedHosts []string
	// AllowedOrigins lists the browser origins, each "scheme://host[:port]"
	// lower-cased, allowed besides the request's own origin. Empty does not
	// turn the Origin check off: a request without Origin (a non-browser
	// client) or from the gateway's own origin passes, any other Origin
	// gets 403.
	AllowedOrigins []string
	MaxBodyBytes   int64
	// CursorSecret is the pagination cursor signing key taken from
	// cursor_secret_env; nil when that field is absent. Never log it.
	CursorSecret []byte
	Auth         Auth
	// Streams tunes notifications and server-to-client traffic.
	Streams Streams
	// Store tunes the session store.
	Store Store
	// Server bounds how long the plain HTTP server waits for clients.
	Server Server
	// MaxBatch (max_batch) bounds the length of a JSON-RPC batch
	// (protocol 2025-03-26): a longer one is refused whole with HTTP 400
	// and -32600, before any of it runs. Default 50; 1 to 1000.
	MaxBatch int
	// Limits bound what clients can make one instance hold.
	Limits Limits
	// Discovery bounds how long a backend's discovery is trusted
	// (discovery.go).
	Discovery Discovery
	// BackendTasks are the backends' `tasks:` blocks (tasks.go), by vhost
	// and backend key; a backend without one is absent. Each is also its
	// router.Backend's Tasks.
	BackendTasks map[string]map[string]*BackendTasks
	// MaxPageItems (max_page_items) bounds the items of one gateway list
	// page, whatever the number of backends. Default 1000; 1 to 100000.
	MaxPageItems int
	// Tracing turns on OpenTelemetry tracing (tracing.go); off when its
	// endpoint is empty and no OTEL_EXPORTER_OTLP_* variable names one.
	Tracing Tracing
	// Audit turns on the audit trail (audit.go); off when absent.
	Audit Audit
	// PublicURL (public_url) is the gateway's base URL as a browser
	// reaches it, without a trailing slash; every redirect URI the
	// gateway uses is {PublicURL}/oauth/callback (user_oauth.go).
	PublicURL string
	// UserTokens (user_tokens) seals users' third-party tokens; nil when
	// absent.
	UserTokens *UserTokens
	// VirtualHosts is keyed by vhost name: Backend.Key filled, defaults
	// applied, header names canonicalised.
	VirtualHosts map[string]*router.VirtualHost

	// lambdaRefusals are the errors CheckLambda returns.
	lambdaRefusals []error
}

// Streams tunes GET streams and server-to-client requests. Zero values
// mean the router's defaults.
type Streams struct {
	// EventLogSize bounds each session's event log (resumable events).
	EventLogSize int
	// Linger keeps a dropped GET stream's backend listeners running.
	Linger time.Duration
	// ClientRequestTimeout bounds how long a backend's sampling,
	// elicitation or roots request waits for the client.
	ClientRequestTimeout time.Duration
	// CallLease is how long a call answered as an event stream may go
	// without its instance renewing its lease before a resume on another
	// instance ends the stream with an error (the instance is gone).
	CallLease time.Duration
	// KeepAlive is how often an idle SSE stream (GET, or a running call's
	// answer) carries a comment.
	KeepAlive time.Duration
}

// Store tunes the session store (Redis).
type Store struct {
	// Timeout bounds each store operation, connection wait and retries
	// included: past it the request fails (HTTP 503, JSON-RPC -32603).
	Timeout time.Duration
}

// Server bounds how long the plain HTTP server (cmd/gateway) waits for a
// client, so idle or slow connections cannot pile up. On Lambda the
// platform owns the connections and these do not apply. A zero field
// means its default.
type Server struct {
	// ReadHeaderTimeout (server.read_header_timeout) bounds reading a
	// request's headers, from the moment the connection can take a
	// request; a connection opened and left silent is closed after it.
	// Default 10s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout (server.read_timeout) bounds reading a request's body,
	// from the end of its headers; a body still arriving then gets 408.
	// It never cuts a GET stream or a long call answered as a stream: the
	// deadline is lifted once the body has been read. Default 30s.
	ReadTimeout time.Duration
	// IdleTimeout (server.idle_timeout) closes a keep-alive connection
	// that waits this long for its next request. Default 2m.
	IdleTimeout time.Duration
}

// Limits bound what clients can make one instance hold in memory.
type Limits struct {
	// InflightResponseBytes (limits.inflight_response_bytes) bounds the
	// bytes of backend answers one instance holds at once, from the moment
	// they are read off the backend connection until the client's answer
	// has been written. A request whose answer does not fit waits for room
	// (bounded by the backend's timeout and the client's cancellation);
	// one larger than the whole budget fails with -32603 naming the
	// backend. Bytes (268435456) or with a unit (256MiB, 1GiB, 500MB).
	// Default 256MiB; at least 1MiB.
	InflightResponseBytes int64
	// ListensPerPrincipal (limits.listens_per_principal) bounds the
	// subscriptions/listen streams one principal holds open on one
	// instance at once (each holds a stream per backend). Default 8.
	ListensPerPrincipal int
	// ListenURIs (limits.listen_uris) bounds the resourceSubscriptions of
	// one subscriptions/listen request. Default 100, like a session's
	// subscriptions.
	ListenURIs int
	// ParkedCallsPerPrincipal (limits.parked_calls_per_principal) bounds
	// the calls of one principal parked for client input at once, across
	// every instance (counted in the store). Default 8.
	ParkedCallsPerPrincipal int
	// TasksPerPrincipal (limits.tasks_per_principal) bounds the
	// gateway-run tasks one principal has running at once, across every
	// instance (counted in the store). Default 16.
	TasksPerPrincipal int
	// FinishedTaskBytesPerPrincipal
	// (limits.finished_task_bytes_per_principal) bounds what one
	// principal's finished gateway-run tasks hold in the store while they
	// are kept for tasks/get (their ttl), across every instance: each is
	// charged its record (result included) plus 512 bytes. At the budget
	// no task starts (429); a result that would take the principal past
	// it fails its task, saying so. Parked calls' answers waiting for
	// their retry have a budget of the same size of their own. Bytes or
	// with a unit (64MiB). Default 64MiB; at least 64KiB.
	FinishedTaskBytesPerPrincipal int64
	// TaskTTLMax (limits.task_ttl_max) caps a backend's tasks.ttl.
	// Default 24h.
	TaskTTLMax time.Duration
}

// Auth is the downstream authentication setting.
type Auth struct {
	// Mode is ModeJWT or ModeNone.
	Mode string
	// JWT is the one trusted issuer of auth.jwt; nil with auth.issuers and
	// in ModeNone.
	JWT *JWTSettings
	// Issuers are every trusted issuer in ModeJWT: JWT alone, or the
	// entries of auth.issuers. Code that builds an Auth by hand may leave
	// it empty and set JWT.
	Issuers []*JWTSettings
	// QualifiedPrincipals (auth.issuers) spells principals "{iss}#{sub}",
	// so equal subjects of two issuers are different callers; with one
	// issuer the principal stays "sub".
	QualifiedPrincipals bool
	// ResourceMetadata, when set (ModeJWT only), is published as OAuth 2.0
	// Protected Resource Metadata (RFC 9728), as the MCP authorization
	// spec asks, and named in every 401's challenge.
	ResourceMetadata *ResourceMetadata
	// Login (auth.login) is the gateway's OIDC client at its own issuer,
	// for the per-user sign-in pages; nil when absent.
	Login *Login
	// AuthorizationServer (auth.authorization_server) makes the gateway
	// the OAuth 2.1 authorization server MCP clients sign in at; nil when
	// off (authorization_server.go).
	AuthorizationServer *AuthorizationServer
}

// ResourceMetadata tells OAuth clients where to get tokens for the gateway.
type ResourceMetadata struct {
	// AuthorizationServers are the issuer URLs of the authorization
	// servers whose tokens the gateway accepts (at least one).
	AuthorizationServers []string
	// ScopesSupported, optional, lists the scopes clients may request.
	ScopesSupported []string
	// PublicURL, optional, is the gateway's base URL as clients reach it
	// (scheme, host and any path prefix a proxy adds); without it the
	// base URL is taken from each request.
	PublicURL string
}

// AudienceResource is the audience value that accepts a token only for
// the resource being called: the canonical URL of the vhost
// ({public_url}/servers/{vhost}/mcp), as its RFC 9728 document names it.
const AudienceResource = "resource"

// JWTSettings configure bearer-token verification.
type JWTSettings struct {
	Issuer string
	// Audience is the configured audience (auth.jwt.audience; with a
	// list, its first entry), or AudienceResource. A token is accepted
	// when its aud (or AudienceClaim) holds one of Audiences or, where
	// the gateway knows its public URL, the URL of the vhost being
	// called; with AudienceResource only the latter. Code that builds
	// settings by hand may set Audience alone.
	Audience string
	// Audiences are every configured audience (one string or a list);
	// empty when Audience is AudienceResource.
	Audiences []string
	// HMACSecret verifies HS256/384/512 tokens; nil when not configured. Never log it.
	HMACSecret []byte
	// PublicKey (*rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey)
	// verifies RS*/PS*, ES* or EdDSA tokens; nil when not configured.
	PublicKey crypto.PublicKey
	// JWKSURL (jwks_url) is where the issuer publishes its keys (a JWK
	// Set); empty otherwise.
	JWKSURL string
	// Discover is set when no key is configured: the JWK Set's URL comes
	// from the issuer's metadata (OpenID Connect discovery, else RFC 8414).
	Discover bool
	// AudienceClaim (audience_claim) is the claim Audience is checked in;
	// empty means "aud". Cognito access tokens carry "client_id" instead.
	AudienceClaim string
	// Introspection, when set, checks opaque access tokens with RFC 7662.
	Introspection *Introspection
	// Algorithms is the allow-list of JWS "alg" values; never empty after
	// validation and never containing "none".
	Algorithms []string
	Leeway     time.Duration
}

// RemoteKeys reports whether the issuer's keys are fetched from it (a
// jwks_url, or discovered) rather than configured.
func (s *JWTSettings) RemoteKeys() bool { return s.JWKSURL != "" || s.Discover }

// Introspection configures RFC 7662 token introspection at one issuer.
type Introspection struct {
	URL string
	// ClientID and ClientSecret authenticate the gateway (HTTP Basic);
	// both empty when the endpoint takes unauthenticated requests.
	ClientID     string
	ClientSecret credentials.Secret
	// SecretEnv names the variable ClientSecret came from (for messages).
	SecretEnv string
	// Cache is how long an active answer is trusted (never past the
	// token's exp); 0 asks the endpoint every time.
	Cache time.Duration
}

// Error is one configuration problem. Its message is a single line naming
// the source file and the field path; it never holds a secret value.
type Error struct {
	Source string
	// Path is the field path, e.g. "virtual_hosts.demo.backends.one.url";
	// empty for whole-file problems.
	Path string
	// Line is the 1-based line in the source, 0 when unknown.
	Line int
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	return oneLine(b.String())
}

// Load reads and validates the configuration file at path. Relative paths
// inside it (auth.jwt.public_key_file) are resolved against the file's
// directory.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{Source: path, Msg: "cannot read config: " + errMsg(err)}
	}
	return parse(data, path, filepath.Dir(path))
}

// Parse validates configuration data. source names the data in error
// messages (a file name, or e.g. "MCPGW_CONFIG_YAML" for inline config);
// relative paths inside it are resolved against filepath.Dir(source), which
// is the working directory when source has no directory part.
func Parse(data []byte, source string) (*Config, error) {
	return parse(data, source, filepath.Dir(source))
}

func parse(data []byte, source, baseDir string) (*Config, error) {
	if source == "" {
		source = "config"
	}
	fail := func(msg string) error { return &Error{Source: source, Msg: msg} }

	// First pass: the node tree, for a schema check that reports unknown
	// fields and wrong shapes by field path, and for line numbers.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fail("empty configuration")
		}
		return nil, syntaxError(source, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, fail(yamlMsg(err))
		}
		return nil, fail("more than one YAML document")
	}
	v := &validator{source: source, lines: map[string]int{}}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	v.checkShape(root, rawConfigType, "", 0)
	if err := v.err(); err != nil {
		return nil, err
	}

	// Second pass: typed decoding, still strict.
	var raw rawConfig
	dec = yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil {
		return nil, fail(yamlMsg(err))
	}

	cfg := v.build(&raw, baseDir)
	if err := v.err(); err != nil {
		return nil, err
	}
	cfg.Source = source
	return cfg, nil
}

// yamlMsg flattens a yaml error to one line, dropping the "yaml: " prefix.
func yamlMsg(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return "invalid YAML: " + strings.Join(te.Errors, "; ")
	}
	return "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")
}

// errMsg is err's message on one line.
func errMsg(err error) string { return oneLine(err.Error()) }

func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(strings.NewReplacer("\r", " ", "\n", "; ").Replace(s)), " ")
}

// joinPath appends a map key to a field path, quoting keys that are not
// plain identifiers (e.g. `tool_name_aliases["Public.Tool"]`).
func joinPath(parent, key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	switch {
	case !plain:
		return parent + "[" + strconv.Quote(key) + "]"
	case parent == "":
		return key
	default:
		return parent + "." + key
	}
}

func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}
