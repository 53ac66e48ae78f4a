package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpgw/gateway/store/redisconn"
	"github.com/redis/go-redis/v9"
)

// DefaultTimeout bounds each Redis operation when RedisOptions.Timeout is
// zero (config: store.timeout; why: redisconn/timeout.go).
const DefaultTimeout = 2 * time.Second

// RedisOptions tunes a Redis store.
type RedisOptions struct {
	// KeyPrefix starts every key, so several gateways (or other software)
	// can share a Redis. Default "mcpgw". It must not contain '{' or '}',
	// which would move the Redis Cluster hash tag.
	KeyPrefix string
	// Timeout bounds every Redis command and pipeline the store sends,
	// connection wait, dial and retries included (see redisconn/timeout.go);
	// past it the operation fails. Default DefaultTimeout.
	Timeout time.Duration
}

// DefaultKeyPrefix is the key prefix used when RedisOptions.KeyPrefix is empty.
const DefaultKeyPrefix = "mcpgw"

// Redis is a Store on Redis (single node, Cluster or Sentinel). A session is
// one hash, so every session read and write touches a single key and expiry
// covers the whole record at once. Its event log (a stream) and GET-stream
// claim are two more keys in the same {sid} hash tag, so every command on a
// session stays within one Redis Cluster slot. Instances talk to each other
// over one pub/sub channel, <prefix>:bus (see Publish). Its methods are in
// redis_<role>.go, one file per role of Store.
type Redis struct {
	client     redis.UniversalClient
	prefix     string
	instanceID string
	bus        redisBus
	plaintext  bool     // the URL asked for no TLS: a closed connection may mean a TLS-only server
	hosts      []string // the host names dialled (redisconn.Config.Hosts), for Ping
	// snapshots are the backend snapshots this instance decoded, by
	// their stored text (redis_sessions.go).
	snapshots snapshotCache

	closeOnce sync.Once
	closeErr  error
}

var _ Store = (*Redis)(nil)

// NewRedis returns a Redis store for rawURL, one of (details, options and
// defaults at redisconn.ParseURL):
//
//	redis://[user:pass@]host:port[/db][?options]                   single node
//	rediss://...                                                    single node over TLS
//	redis+cluster://[user:pass@]host1:port,host2:port[?options]    Redis Cluster
//	rediss+cluster://...                                            Redis Cluster over TLS
//	redis+sentinel://[user:pass@]host1:26379,host2:26379/<master>[/db]
//	rediss+sentinel://...                                           Sentinel failover (TLS)
//
// Errors never contain the URL's password. NewRedis does not connect:
// call Ping to check the server is reachable.
func NewRedis(rawURL string, opts RedisOptions) (*Redis, error) {
	prefix := opts.KeyPrefix
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	if strings.ContainsAny(prefix, "{}") {
		return nil, fmt.Errorf("store: key prefix %q must not contain '{' or '}'", prefix)
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if timeout < 0 {
		return nil, fmt.Errorf("store: timeout %v must not be negative", timeout)
	}
	cfg, err := redisconn.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg.BoundByContext()
	client := cfg.NewClient()
	client.AddHook(redisconn.NewTimeoutHook(timeout))
	return &Redis{client: client, prefix: prefix, instanceID: newInstanceID(), hosts: cfg.Hosts(),
		plaintext: strings.HasPrefix(rawURL, "redis://") || strings.HasPrefix(rawURL, "redis+")}, nil
}

// The key layout. Every key of one session carries the {sid} hash tag, so
// every command, MULTI and script on a session stays within one Redis
// Cluster slot; the bus channel and the signing keys belong to no session.

// SessionKey is the Redis key of session sid's hash. The {sid} hash tag
// pins everything of one session to one Redis Cluster slot.
func SessionKey(prefix string, sid SessionID) string {
	return prefix + ":{" + string(sid) + "}:session"
}

// EventsKey is the Redis stream holding session sid's event log.
func EventsKey(prefix string, sid SessionID) string {
	return prefix + ":{" + string(sid) + "}:events"
}

// StreamKey is the Redis key naming the holder of session sid's GET stream.
func StreamKey(prefix string, sid SessionID) string {
	return prefix + ":{" + string(sid) + "}:stream"
}

// CallLeaseKey is the key whose life is the lease of the instance running
// call stream `stream` of session sid; its value is "1".
func CallLeaseKey(prefix string, sid SessionID, stream CallStreamID) string {
	return prefix + ":{" + string(sid) + "}:lease:" + string(stream)
}

// BusChannel is the pub/sub channel every instance sharing prefix listens on.
func BusChannel(prefix string) string {
	return prefix + ":bus"
}

// SigningKeyKey is the Redis key holding the signing key called name.
func SigningKeyKey(prefix, name string) string {
	return prefix + ":signing-key:" + name
}

// Hash fields of a session. The b: and s: prefixes keep backend keys and
// URIs from colliding with each other or with the fixed fields.
const (
	fieldMeta     = "meta"
	fieldLogLevel = "loglevel" // overrides meta's logLevel; see SetLogLevel
	prefixBackend = "b:"
	prefixSub     = "s:"
	prefixCancel  = "c:" // c:<reqID> = the mark's expiry (Unix µs), see MarkCancelled
	prefixPending = "p:" // p:<requestID> = instance id, see AddPending
	prefixAnswer  = "a:" // a:<requestID> = the client's answer, see PostAnswer
)

// Ping checks that Redis answers. When it did not answer in time, a host
// name that does not resolve is reported as such (redisconn.Unusable).
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.client.Ping(ctx).Err(); err != nil {
		if ctx.Err() != nil && len(r.hosts) > 0 {
			if dnsErr := redisconn.UnresolvedHosts(r.hosts); dnsErr != nil {
				return fmt.Errorf("store: ping redis: %w", dnsErr)
			}
		}
		if r.plaintext && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			return fmt.Errorf("store: ping redis: %w (the server closed the connection: if it only speaks TLS, use a rediss:// URL)", err)
		}
		return fmt.Errorf("store: ping redis: %w", err)
	}
	return nil
}

// Close stops the bus (closing its pub/sub connection and waiting for the
// dispatcher goroutine to return), then closes the connection pools. It is
// safe to call more than once, but not from a bus callback.
func (r *Redis) Close() error {
	r.closeOnce.Do(func() {
		r.bus.close()
		r.closeErr = r.client.Close()
	})
	return r.closeErr
}

// The conditional writes run as scripts so that checking the session exists
// and writing to it are atomic: a plain HSET after a DeleteSession (or
// expiry) would resurrect a session holding nothing but that one field.
// KEYS[1] is the session hash, ARGV[1] the TTL in ms, the rest are fields.
// hsetIfExists serves the sessions and the marks alike, through update; the
// other scripts live beside the methods that run them.
var hsetIfExists = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if #ARGV > 1 then redis.call('HSET', KEYS[1], unpack(ARGV, 2)) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`)

// update runs one of the conditional scripts and maps "absent" to ErrNotFound.
func (r *Redis) update(ctx context.Context, op string, script *redis.Script, id SessionID, ttl time.Duration, fields ...any) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	args := append([]any{ttl.Milliseconds()}, fields...)
	ok, err := script.Run(ctx, r.client, []string{SessionKey(r.prefix, id)}, args...).Int()
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	if ok == 0 {
		return ErrNotFound
	}
	return nil
}
