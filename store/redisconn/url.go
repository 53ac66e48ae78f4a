// Package redisconn turns a Redis URL into a go-redis client for one
// topology (standalone, Cluster, Sentinel) whose every command is bounded
// by a timeout, logs go-redis's own complaints without the password, and
// tells a Redis that will never answer from one that may again. The
// store's Redis implementation is built on it; nothing here knows what is
// stored.
package redisconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Topology names the kind of Redis deployment a URL points at.
type Topology string

const (
	// Standalone is a single Redis server (redis://, rediss://).
	Standalone Topology = "standalone"
	// Cluster is a Redis Cluster reached through seed nodes
	// (redis+cluster://, rediss+cluster://).
	Cluster Topology = "cluster"
	// Sentinel is a Sentinel-managed primary (redis+sentinel://,
	// rediss+sentinel://).
	Sentinel Topology = "sentinel"
)

// Config is a parsed Redis URL: go-redis options for exactly one
// topology. Only the field matching Topology is set. It keeps the native
// go-redis option types (rather than redis.UniversalOptions) so that no URL
// option is lost in translation.
type Config struct {
	Topology Topology
	Single   *redis.Options         // Standalone
	Cluster  *redis.ClusterOptions  // Cluster
	Failover *redis.FailoverOptions // Sentinel
}

// NewClient builds the go-redis client for the configured topology. It does
// not connect; the first command (or Ping) does.
func (c *Config) NewClient() redis.UniversalClient {
	switch c.Topology {
	case Cluster:
		return redis.NewClusterClient(c.Cluster)
	case Sentinel:
		return redis.NewFailoverClient(c.Failover)
	default:
		return redis.NewClient(c.Single)
	}
}

// ParseURL parses the URL forms the gateway accepts for its store:
//
//	redis://[user:pass@]host[:port][/db][?options]            single node
//	rediss://...                                               single node, TLS
//	redis+cluster://[user:pass@]host1[:port],host2[:port][?options]
//	rediss+cluster://...                                       Redis Cluster (TLS)
//	redis+sentinel://[user:pass@]host1[:port],host2[:port]/<master>[/db][?options]
//	rediss+sentinel://...                                      Sentinel (TLS)
//
// Ports default to 6379 (26379 for sentinels). The options are go-redis'
// URL query options for the topology (dial_timeout, pool_size, ...; see
// redis.ParseURL, redis.ParseClusterURL and redis.ParseFailoverURL); unknown
// options are errors. Cluster URLs additionally accept skip_verify; Sentinel
// URLs accept sentinel_username and sentinel_password, because the userinfo
// authenticates to the Redis primary/replicas, while sentinels often run
// without a password (sending one to them would then fail every dial).
//
// With TLS, single-node URLs verify the certificate against the URL's host;
// cluster and sentinel URLs verify every node against its own address,
// because the nodes they discover are different hosts.
//
// The URL carries a password, so no error returned here ever contains it:
// userinfo and password query values are redacted from every message.
func ParseURL(rawURL string) (*Config, error) {
	red := newRedactor(rawURL)
	cfg, err := parseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: redis URL %q: %s", red.url, red.clean(err.Error()))
	}
	return cfg, nil
}

// redisURLParts is the URL split lexically. Comma-separated host lists are
// not valid URL authorities, so net/url cannot parse these URLs whole.
type redisURLParts struct {
	topology Topology
	tls      bool
	user     *url.Userinfo // nil when the URL has none
	hosts    []string      // host:port, defaults applied
	path     string
	query    url.Values
}

func parseURL(raw string) (*Config, error) {
	p, err := splitRedisURL(raw)
	if err != nil {
		return nil, err
	}
	cfg, err := parseParts(p)
	if err != nil {
		return nil, err
	}
	if !p.query.Has("protocol") {
		cfg.setProtocol(2)
	}
	return cfg, nil
}

// setProtocol picks the RESP version of the client's connections. The
// store speaks RESP2 unless the URL asks otherwise (protocol=3): it uses
// nothing of RESP3 (no client-side caching, no push notifications), and
// go-redis on a RESP3 connection peeks at the socket for pending push
// notifications around every command, about 2% of the CPU of a relayed
// 2025-session call (issue 24's cpu-stateless profile).
func (c *Config) setProtocol(v int) {
	c.shared(func(o *sharedOptions) { *o.protocol = v })
}

// sharedOptions points at the options every topology's go-redis options
// have, so that one switch over the topology sets them.
type sharedOptions struct {
	contextTimeout *bool
	protocol       *int
}

func (c *Config) shared(set func(*sharedOptions)) {
	switch c.Topology {
	case Cluster:
		set(&sharedOptions{&c.Cluster.ContextTimeoutEnabled, &c.Cluster.Protocol})
	case Sentinel:
		set(&sharedOptions{&c.Failover.ContextTimeoutEnabled, &c.Failover.Protocol})
	default:
		set(&sharedOptions{&c.Single.ContextTimeoutEnabled, &c.Single.Protocol})
	}
}

// parseParts builds the topology's go-redis options from the URL's parts.
func parseParts(p *redisURLParts) (*Config, error) {
	base := "redis"
	if p.tls {
		base = "rediss"
	}
	switch p.topology {
	case Standalone:
		if len(p.hosts) != 1 {
			return nil, fmt.Errorf("%s:// takes one host, got %d (use %s+cluster:// or %s+sentinel://)", base, len(p.hosts), base, base)
		}
		u := url.URL{Scheme: base, User: p.user, Host: p.hosts[0], Path: p.path, RawQuery: p.query.Encode()}
		o, err := redis.ParseURL(u.String())
		if err != nil {
			return nil, err
		}
		return &Config{Topology: Standalone, Single: o}, nil

	case Cluster:
		if db := strings.Trim(p.path, "/"); db != "" && db != "0" {
			return nil, fmt.Errorf("redis cluster has only database 0, got path %q", p.path)
		}
		skip, err := takeBool(p.query, "skip_verify")
		if err != nil {
			return nil, err
		}
		addHosts(p.query, p.hosts[1:])
		u := url.URL{Scheme: base, User: p.user, Host: p.hosts[0], RawQuery: p.query.Encode()}
		o, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, err
		}
		if o.TLSConfig != nil {
			o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: skip}
		}
		return &Config{Topology: Cluster, Cluster: o}, nil

	default: // Sentinel
		segs := strings.FieldsFunc(p.path, func(r rune) bool { return r == '/' })
		if len(segs) == 0 || len(segs) > 2 {
			return nil, fmt.Errorf("sentinel URL path must be /<master>[/db], got %q", p.path)
		}
		if p.query.Has("master_name") {
			return nil, errors.New("sentinel master name goes in the path, not master_name=")
		}
		sentinelUser, sentinelPass := p.query.Get("sentinel_username"), p.query.Get("sentinel_password")
		p.query.Del("sentinel_username")
		p.query.Del("sentinel_password")
		p.query.Set("master_name", segs[0])
		addHosts(p.query, p.hosts[1:])
		u := url.URL{Scheme: base, Host: p.hosts[0], RawQuery: p.query.Encode()}
		if len(segs) == 2 {
			u.Path = "/" + segs[1]
		}
		o, err := redis.ParseFailoverURL(u.String())
		if err != nil {
			return nil, err
		}
		o.SentinelUsername, o.SentinelPassword = sentinelUser, sentinelPass
		if p.user != nil {
			o.Username = p.user.Username()
			o.Password, _ = p.user.Password()
		}
		if o.TLSConfig != nil {
			o.TLSConfig.ServerName = "" // verify each node by its own address
		}
		return &Config{Topology: Sentinel, Failover: o}, nil
	}
}

// splitRedisURL splits raw into scheme, userinfo, hosts, path and query.
func splitRedisURL(raw string) (*redisURLParts, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, errors.New("missing scheme (want redis://, redis+cluster:// or redis+sentinel://)")
	}
	p := &redisURLParts{}
	defaultPort := "6379"
	switch strings.ToLower(scheme) {
	case "redis", "rediss":
		p.topology = Standalone
	case "redis+cluster", "rediss+cluster":
		p.topology = Cluster
	case "redis+sentinel", "rediss+sentinel":
		p.topology, defaultPort = Sentinel, "26379"
	default:
		return nil, fmt.Errorf("unsupported scheme %q (want redis, rediss, redis+cluster, rediss+cluster, redis+sentinel or rediss+sentinel)", scheme)
	}
	p.tls = strings.HasPrefix(strings.ToLower(scheme), "rediss")

	if q := strings.IndexAny(rest, "?#"); q >= 0 && strings.Contains(rest[q:], "@") {
		// Most likely a password holding an unescaped '?' or '#': guessing
		// would connect to the wrong host or echo part of the password.
		return nil, errors.New("'@' after '?' or '#' (percent-encode '?', '#' and '@' in passwords as %3F, %23 and %40)")
	}
	rest, _, _ = strings.Cut(rest, "#")
	rest, rawQuery, _ := strings.Cut(rest, "?")
	// The last '@' ends the userinfo, so an unescaped '/' or '@' in a
	// password still lands in the userinfo (and is redacted) rather than
	// being mistaken for a host or path.
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		user, err := parseUserinfo(rest[:at])
		if err != nil {
			return nil, err
		}
		p.user, rest = user, rest[at+1:]
	}
	authority := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, p.path = rest[:i], rest[i:]
	}
	for i, h := range strings.Split(authority, ",") {
		hp, err := normalizeHostPort(strings.TrimSpace(h), defaultPort)
		if err != nil {
			// No host text in the message: on a malformed URL it may be
			// a fragment of the password.
			return nil, fmt.Errorf("host %d: %w", i+1, err)
		}
		p.hosts = append(p.hosts, hp)
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, fmt.Errorf("invalid query string: %w", err)
	}
	p.query = q
	return p, nil
}

func parseUserinfo(s string) (*url.Userinfo, error) {
	rawUser, rawPass, hasPass := strings.Cut(s, ":")
	user, err1 := url.PathUnescape(rawUser)
	pass, err2 := url.PathUnescape(rawPass)
	if err1 != nil || err2 != nil {
		// The url.EscapeError would quote part of the password.
		return nil, errors.New("invalid percent-escape in userinfo")
	}
	if !hasPass {
		return url.User(user), nil
	}
	return url.UserPassword(user, pass), nil
}

// normalizeHostPort validates one host[:port] and applies the default port.
// Its errors never quote the input (see splitRedisURL).
func normalizeHostPort(h, defaultPort string) (string, error) {
	if h == "" {
		return "", errors.New("empty host")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		// No port: a bare name, an IPv4 address or a bracketed IPv6 literal.
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), defaultPort
		bracketed := strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]")
		if strings.ContainsAny(host, "[]") || (strings.Contains(host, ":") && !bracketed) {
			return "", errors.New("invalid host")
		}
	}
	if host == "" {
		return "", errors.New("empty host")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", errors.New("invalid port")
	}
	return net.JoinHostPort(host, port), nil
}

// addHosts passes extra seed hosts the way go-redis' parsers take them.
func addHosts(q url.Values, hosts []string) {
	for _, h := range hosts {
		q.Add("addr", h)
	}
}

func takeBool(q url.Values, name string) (bool, error) {
	if !q.Has(name) {
		return false, nil
	}
	v := q.Get(name)
	q.Del(name)
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("invalid %s boolean %q", name, v)
	}
	return b, nil
}

// redactor removes a URL's secrets from text destined for error messages.
// It works lexically on the raw string so it still redacts URLs that fail
// to parse.
type redactor struct {
	url     string   // raw URL with userinfo and password values replaced
	secrets []string // raw and decoded secret values, longest first
}

const redacted = "xxxxx"

func newRedactor(raw string) redactor {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		scheme, rest = "", raw
	}
	var r redactor
	// Same userinfo rule as splitRedisURL; if an '@' follows '?' or '#'
	// (which splitRedisURL rejects) everything up to the last '@' is secret.
	cut := len(rest)
	if q := strings.IndexAny(rest, "?#"); q >= 0 && !strings.Contains(rest[q:], "@") {
		cut = q
	}
	if at := strings.LastIndex(rest[:cut], "@"); at >= 0 {
		userinfo := rest[:at]
		// With no ':' go-redis reads the whole userinfo as a user name,
		// but it is often a misplaced password: treat it all as secret.
		secret := userinfo
		if _, pass, found := strings.Cut(userinfo, ":"); found {
			secret = pass
		}
		r.addSecret(secret)
		rest = redacted + "@" + rest[at+1:]
	}
	if beforeQuery, query, found := strings.Cut(rest, "?"); found {
		parts := strings.FieldsFunc(query, func(c rune) bool { return c == '&' || c == ';' })
		for i, kv := range parts {
			if k, v, _ := strings.Cut(kv, "="); strings.Contains(strings.ToLower(k), "password") {
				r.addSecret(v)
				parts[i] = k + "=" + redacted
			}
		}
		rest = beforeQuery + "?" + strings.Join(parts, "&")
	}
	if ok {
		rest = scheme + "://" + rest
	}
	r.url = r.clean(rest)
	return r
}

func (r *redactor) addSecret(s string) {
	if s == "" {
		return
	}
	r.secrets = append(r.secrets, s)
	if d, err := url.PathUnescape(s); err == nil && d != s {
		r.secrets = append(r.secrets, d)
	}
	if d, err := url.QueryUnescape(s); err == nil && d != s {
		r.secrets = append(r.secrets, d)
	}
	// Longest first, so a secret that contains another is replaced whole.
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
}

// clean replaces every secret in msg. Belt and braces: the parsers above
// never echo the password, but go-redis error texts are not under our control.
func (r *redactor) clean(msg string) string {
	for _, s := range r.secrets {
		msg = strings.ReplaceAll(msg, s, redacted)
	}
	return msg
}
