package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/openapi"
	"github.com/mcpgw/gateway/router/upstream"
)

// validator collects every problem of one source, in a stable order.
type validator struct {
	source  string
	lines   map[string]int // field path -> line
	errs    []error
	aliases map[aliasKey]bool // anchors already shape-checked
	baseDir string            // relative paths in the file are taken from here
	// rawAuthServers are auth.resource_metadata.authorization_servers as
	// written (the authorization server keeps an explicit list).
	rawAuthServers []string
	// stdioPaths are the `transport` fields of stdio backends, for
	// Config.CheckLambda.
	stdioPaths []string
	// apis are the OpenAPI descriptions compiled so far, by their options:
	// backends on several vhosts over one API (a tool_search vhost beside
	// a plain one) share one immutable compiled API instead of each
	// reading and compiling it.
	apis map[string]*openapi.API
}

func (v *validator) errf(path, format string, args ...any) {
	v.errs = append(v.errs, &Error{Source: v.source, Path: path, Line: v.line(path), Msg: fmt.Sprintf(format, args...)})
}

// line finds the line of path or of its nearest recorded ancestor.
func (v *validator) line(path string) int {
	for path != "" {
		if l, ok := v.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

// err joins the collected problems, one per line.
func (v *validator) err() error { return errors.Join(v.errs...) }

// nameRE is the character set of vhost names and backend keys: they appear
// in URL paths and in prefixed identifiers.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func (v *validator) build(raw *rawConfig, baseDir string) *Config {
	v.baseDir = baseDir
	cfg := &Config{
		SessionTTL:   v.duration("session_ttl", raw.SessionTTL, DefaultSessionTTL, time.Second),
		MaxBodyBytes: DefaultMaxBodyBytes,
		MaxBatch:     DefaultMaxBatch,
	}
	srv := raw.Server
	if srv == nil {
		srv = &rawServer{}
	}
	cfg.Server = Server{
		ReadHeaderTimeout: v.duration("server.read_header_timeout", srv.ReadHeaderTimeout, DefaultReadHeaderTimeout, time.Millisecond),
		ReadTimeout:       v.duration("server.read_timeout", srv.ReadTimeout, DefaultReadTimeout, time.Millisecond),
		IdleTimeout:       v.duration("server.idle_timeout", srv.IdleTimeout, DefaultIdleTimeout, time.Millisecond),
	}
	if raw.MaxBatch != nil {
		if *raw.MaxBatch < 1 || *raw.MaxBatch > 1000 {
			v.errf("max_batch", "must be between 1 and 1000, not %d", *raw.MaxBatch)
		}
		cfg.MaxBatch = int(*raw.MaxBatch)
	}
	if raw.MaxBodyBytes != nil {
		if *raw.MaxBodyBytes <= 0 {
			v.errf("max_body_bytes", "must be positive, not %d", *raw.MaxBodyBytes)
		}
		cfg.MaxBodyBytes = *raw.MaxBodyBytes
	}
	cfg.Limits, cfg.Discovery = v.limits(raw.Limits), v.discovery(raw.Discovery)
	cfg.MaxPageItems = v.countLimit("max_page_items", raw.MaxPageItems, DefaultMaxPageItems, 100_000)
	cfg.AllowedHosts = v.hosts(raw.AllowedHosts)
	cfg.AllowedOrigins = v.origins(raw.AllowedOrigins)
	if raw.CursorSecretEnv != "" {
		cfg.CursorSecret = v.secretEnv("cursor_secret_env", raw.CursorSecretEnv)
	}
	cfg.Auth = v.auth(raw.Auth, baseDir)
	cfg.PublicURL = v.publicURL(raw.PublicURL)
	cfg.UserTokens = v.userTokens(raw.UserTokens)
	if raw.Auth != nil && cfg.Auth.Mode == ModeJWT {
		cfg.Auth.Login = v.login(raw.Auth.Login)
	} else if raw.Auth != nil && raw.Auth.AuthorizationServer != nil && raw.Auth.AuthorizationServer.Enabled {
		v.errf("auth.authorization_server", "needs auth.mode jwt: the gateway signs users in at auth.jwt's issuer")
	}
	if rm := cfg.Auth.ResourceMetadata; rm != nil && rm.PublicURL == "" {
		rm.PublicURL = cfg.PublicURL
	}
	if raw.Auth != nil && cfg.Auth.Mode == ModeJWT {
		cfg.Auth.AuthorizationServer = v.authorizationServer(raw.Auth.AuthorizationServer, cfg)
	}
	v.resourceAudience(raw.Auth, cfg)
	cfg.Audit = v.audit(raw.Audit, cfg)
	cfg.Streams = v.streams(raw.Streams)

	cfg.Store = v.store(raw.Store)
	cfg.Tracing = v.tracing(raw.Tracing)

	cfg.VirtualHosts = map[string]*router.VirtualHost{}
	if len(raw.VirtualHosts) == 0 {
		v.errf("virtual_hosts", "at least one virtual host is required")
	}
	for _, name := range sortedKeys(raw.VirtualHosts) {
		if vh := v.vhost(name, raw.VirtualHosts[name]); vh != nil {
			cfg.VirtualHosts[name] = vh
		}
	}
	cfg.BackendTasks = v.backendTasks(raw.VirtualHosts, cfg.Limits)
	for vh, backends := range cfg.BackendTasks {
		for key, t := range backends {
			if v := cfg.VirtualHosts[vh]; v != nil && v.Backends[key] != nil {
				v.Backends[key].Tasks = t
			}
		}
	}
	v.callerCredentialsNeedJWT(cfg)
	v.userOAuthNeeds(cfg)
	for _, p := range v.stdioPaths {
		cfg.lambdaRefusals = append(cfg.lambdaRefusals, &Error{Source: v.source, Path: p, Line: v.line(p), Msg: lambdaStdioMsg})
	}
	return cfg
}

// streams validates the streams section; zero values are the defaults.
func (v *validator) streams(st *rawStreams) Streams {
	var out Streams
	if st == nil {
		return out
	}
	if st.EventLogSize != nil {
		if *st.EventLogSize < 1 || *st.EventLogSize > 1_000_000 {
			v.errf("streams.event_log_size", "must be between 1 and 1000000, not %d", *st.EventLogSize)
		}
		out.EventLogSize = int(*st.EventLogSize)
	}
	out.Linger = v.duration("streams.linger", st.Linger, 0, time.Millisecond)
	out.ClientRequestTimeout = v.duration("streams.client_request_timeout", st.ClientRequestTimeout, 0, time.Second)
	out.KeepAlive = v.duration("streams.keep_alive", st.KeepAlive, 0, 100*time.Millisecond)
	out.CallLease = v.duration("streams.call_lease", st.CallLease, 0, time.Second)
	return out
}

// store validates the store section; every field has a default.
func (v *validator) store(raw *rawStore) Store {
	if raw == nil {
		raw = &rawStore{}
	}
	return Store{Timeout: v.duration("store.timeout", raw.Timeout, DefaultStoreTimeout, 10*time.Millisecond)}
}

// duration parses an optional Go duration that must be at least min
// (min 0: non-negative; otherwise positive and >= min).
func (v *validator) duration(path string, s *rawDuration, def, min time.Duration) time.Duration {
	if s == nil {
		return def
	}
	d, err := time.ParseDuration(strings.TrimSpace(string(*s)))
	switch {
	case err != nil:
		v.errf(path, "%q is not a duration (use e.g. 30s, 5m, 1h)", *s)
	case min == 0 && d < 0:
		v.errf(path, "must not be negative, not %s", d)
	case min > 0 && d <= 0:
		v.errf(path, "must be positive, not %s", d)
	case d < min:
		v.errf(path, "must be at least %s, not %s", min, d)
	}
	return d
}

// byteSize parses an optional size in bytes, "268435456" or with a unit
// ("256MiB", "1 GiB", "500MB"), that must be at least min.
func (v *validator) byteSize(path string, s *rawSize, def, min int64) int64 {
	if s == nil {
		return def
	}
	units := [...]struct { // two-letter suffixes before "B"
		suffix string
		bytes  int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, mult := strings.TrimSpace(string(*s)), int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.bytes
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	switch {
	case err != nil:
		v.errf(path, "%q is not a size (use e.g. 268435456, 256MiB, 1GiB)", *s)
		return def
	case n > math.MaxInt64/mult:
		v.errf(path, "%q is too large", *s)
		return def
	case n*mult < min:
		v.errf(path, "must be at least %d bytes, not %d", min, n*mult)
	}
	return n * mult
}

func (v *validator) hosts(list []string) []string {
	out := make([]string, 0, len(list))
	seen := map[string]bool{}
	for i, h := range list {
		p := indexPath("allowed_hosts", i)
		h = strings.ToLower(strings.TrimSpace(h))
		switch {
		case h == "":
			v.errf(p, "empty host")
			continue
		case h == "*":
			v.errf(p, `"*" is not supported: an empty list allows any Host`)
			continue
		case strings.ContainsAny(h, "/?#@ \t") || strings.Contains(h, "://"):
			v.errf(p, "%q is not a host name (give host or host:port, no scheme or path)", h)
			continue
		}
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

func (v *validator) origins(list []string) []string {
	out := make([]string, 0, len(list))
	seen := map[string]bool{}
	for i, o := range list {
		p := indexPath("allowed_origins", i)
		o = strings.TrimSpace(o)
		if o == "*" {
			v.errf(p, `"*" is not supported: list each browser origin to allow (requests without Origin, and same-origin ones, are always allowed)`)
			continue
		}
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			v.errf(p, "%q is not an origin (want scheme://host[:port])", o)
			continue
		}
		norm := strings.ToLower(u.Scheme + "://" + u.Host)
		if !seen[norm] {
			seen[norm] = true
			out = append(out, norm)
		}
	}
	return out
}

func (v *validator) vhost(name string, raw *rawVHost) *router.VirtualHost {
	path := joinPath("virtual_hosts", name)
	switch {
	case !nameRE.MatchString(name):
		v.errf(path, "virtual host names may only hold letters, digits, '.', '_' and '-'")
		return nil
	case name == "." || name == "..":
		v.errf(path, "%q cannot be a virtual host name (it is a path segment)", name)
		return nil
	}
	if raw == nil || len(raw.Backends) == 0 {
		v.errf(joinPath(path, "backends"), "at least one backend is required")
		return nil
	}
	vh := &router.VirtualHost{Name: name, Backends: map[string]*router.Backend{}, Access: v.access(path, raw.Access),
		Hooks: v.plugins(path, raw.Plugins), RateLimits: v.rateLimits(path, raw.RateLimits), Card: v.card(joinPath(path, "card"), raw.Card),
		ToolSearch: v.toolSearch(path, raw.ToolSearch)}
	keys := sortedKeys(raw.Backends)
	bpath := func(key string) string { return joinPath(joinPath(path, "backends"), key) }
	for _, key := range keys {
		if b := v.backend(bpath(key), key, raw.Backends[key]); b != nil {
			vh.Backends[key] = b
		}
	}

	// Identifiers are split on "{key}-", longest key first: a key whose
	// "key-" is a prefix of another key makes identifiers ambiguous.
	for _, a := range keys {
		for _, b := range keys {
			if a != b && strings.HasPrefix(b, a+"-") {
				v.errf(bpath(b), "backend keys %q and %q are ambiguous: %q is a prefix of %q", a, b, a+"-", b)
			}
		}
	}

	// Aliases are looked up before prefixes, across the whole vhost.
	owner := map[string]string{}
	for _, key := range keys {
		b := vh.Backends[key]
		if b == nil {
			continue
		}
		for _, alias := range sortedKeys(b.ToolNameAliases) {
			p := joinPath(joinPath(bpath(key), "tool_name_aliases"), alias)
			if other, dup := owner[alias]; dup {
				v.errf(p, "alias %q is used by backends %q and %q", alias, other, key)
				continue
			}
			owner[alias] = key
			if len(keys) > 1 {
				for _, k := range keys {
					if strings.HasPrefix(alias, k+"-") {
						v.errf(p, "alias %q would shadow the prefixed tool names of backend %q", alias, k)
						break
					}
				}
			}
		}
	}
	return vh
}

func (v *validator) backend(path, key string, raw *rawBackend) *router.Backend {
	if !nameRE.MatchString(key) {
		v.errf(path, "backend keys may only hold letters, digits, '.', '_' and '-'")
		return nil
	}
	if raw == nil {
		v.errf(joinPath(path, "url"), "required")
		return nil
	}
	stdio := raw.Transport == string(upstream.TransportStdio)
	var url string
	if !stdio && raw.OpenAPI == nil {
		url = v.backendURL(joinPath(path, "url"), strings.TrimSpace(raw.URL))
	}
	b := &router.Backend{
		Config: upstream.Config{
			Key:        key,
			URL:        url,
			Transport:  upstream.TransportStreamableHTTP,
			Timeout:    v.duration(joinPath(path, "timeout"), raw.Timeout, DefaultTimeout, time.Nanosecond),
			AddHeaders: map[string]string{},
		},
		Session:         router.SessionAuto,
		ListCacheTTL:    v.duration(joinPath(path, "list_cache"), raw.ListCache, 0, 0),
		ToolNameAliases: map[string]string{},
	}
	switch t := upstream.Transport(raw.Transport); t {
	case "":
	case upstream.TransportStreamableHTTP, upstream.TransportSSE, upstream.TransportStdio:
		b.Transport = t
	default:
		v.errf(joinPath(path, "transport"), "%q is not a transport (want %s, %s or %s)", raw.Transport, upstream.TransportStreamableHTTP, upstream.TransportSSE, upstream.TransportStdio)
	}
	if stdio {
		v.stdio(path, raw, b)
	} else {
		v.stdioOnly(path, raw)
	}
	v.sessionMode(joinPath(path, "session"), raw.Session, b)

	b.PassthroughHeaders = v.headerList(joinPath(path, "passthrough_headers"), raw.PassthroughHeaders, true)
	b.RemoveHeaders = v.headerList(joinPath(path, "remove_headers"), raw.RemoveHeaders, false)
	v.addHeaders(joinPath(path, "add_headers"), raw.AddHeaders, b)
	v.backendCredentials(path, raw, b)
	if raw.OpenAPI != nil {
		v.openAPI(path, raw, b) // openapi.go: after the credentials it is checked against
	}

	// A header may be both passed through and added (add overrides) or
	// removed as well (remove wins: removed last), so none of these
	// overlaps is an error; router/upstream applies that precedence at
	// request time.

	for _, alias := range sortedKeys(raw.ToolNameAliases) {
		p := joinPath(joinPath(path, "tool_name_aliases"), alias)
		target := raw.ToolNameAliases[alias]
		switch {
		case alias == "":
			v.errf(p, "empty alias")
		case !validToolName(alias):
			v.errf(p, "alias %q may not hold spaces or control characters and is at most 128 bytes", alias)
		case strings.TrimSpace(target) == "":
			v.errf(p, "alias %q has an empty target tool name", alias)
		default:
			b.ToolNameAliases[alias] = target
		}
	}
	return b
}

func (v *validator) backendURL(path, s string) string {
	if s == "" {
		v.errf(path, "required")
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		// url errors quote the input, which may hold credentials: the
		// message shows the value with those cut out instead.
		v.errf(path, "%q is not a valid URL%s", displayURL(s), schemeHint(s))
		return s
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		v.errf(path, "%q is not an http(s) URL%s", displayURL(s), schemeHint(s))
	}
	return s
}

// displayURL is s as an error message may show it: user information
// (a password) and the query (an API key) replaced by "xxxxx".
func displayURL(s string) string {
	rest, query, hasQuery := strings.Cut(s, "?")
	if hasQuery {
		query = "xxxxx"
	}
	authStart := 0
	if i := strings.Index(rest, "://"); i >= 0 {
		authStart = i + 3
	}
	authEnd := len(rest)
	if i := strings.IndexByte(rest[authStart:], '/'); i >= 0 {
		authEnd = authStart + i
	}
	if at := strings.LastIndexByte(rest[authStart:authEnd], '@'); at >= 0 {
		rest = rest[:authStart] + "xxxxx" + rest[authStart+at:]
	}
	if hasQuery {
		return rest + "?" + query
	}
	return rest
}

// schemeHint suggests the fix for the most common URL mistake, a value
// without a scheme ("127.0.0.1:9001/mcp", "localhost:9001").
func schemeHint(s string) string {
	if strings.Contains(s, "://") {
		return ""
	}
	scheme, rest := "http://", strings.TrimPrefix(s, "//")
	for _, p := range []string{"https", "http"} { // a mangled scheme: "http//h", "http:/h"
		if r, ok := strings.CutPrefix(s, p); ok && (strings.HasPrefix(r, ":") || strings.HasPrefix(r, "/")) {
			scheme, rest = p+"://", strings.TrimLeft(r, ":/")
			break
		}
	}
	return fmt.Sprintf(" (missing scheme? write %q)", scheme+displayURL(rest))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

// sessionMode reads a backend's session: mode (router.SessionMode; empty:
// auto).
func (v *validator) sessionMode(path, raw string, b *router.Backend) {
	if raw == "" {
		return
	}
	mode := router.SessionMode(raw)
	if !slices.Contains(router.SessionModes, mode) {
		names := make([]string, len(router.SessionModes))
		for i, m := range router.SessionModes {
			names[i] = string(m)
		}
		v.errf(path, "%q is not a session mode (want one of %s)", raw, strings.Join(names, ", "))
		return
	}
	b.Session = mode
}
