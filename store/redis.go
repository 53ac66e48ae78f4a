package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions tunes a Redis store.
type RedisOptions struct {
	// KeyPrefix starts every key, so several gateways (or other software)
	// can share a Redis. Default "mcpgw". It must not contain '{' or '}',
	// which would move the Redis Cluster hash tag.
	KeyPrefix string
	// Timeout bounds every Redis command and pipeline the store sends,
	// connection wait, dial and retries included (see redis_timeout.go);
	// past it the operation fails. Default DefaultTimeout.
	Timeout time.Duration
}

// DefaultKeyPrefix is the key prefix used when RedisOptions.KeyPrefix is empty.
const DefaultKeyPrefix = "mcpgw"

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

// Redis is a Store on Redis (single node, Cluster or Sentinel). A session is
// one hash, so every session read and write touches a single key and expiry
// covers the whole record at once. Its event log (a stream) and GET-stream
// claim are two more keys in the same {sid} hash tag, so every command on a
// session stays within one Redis Cluster slot. Instances talk to each other
// over one pub/sub channel, <prefix>:bus (see Publish).
type Redis struct {
	client     redis.UniversalClient
	prefix     string
	instanceID string
	bus        redisBus
	plaintext  bool // the URL asked for no TLS: a closed connection may mean a TLS-only server

	closeOnce sync.Once
	closeErr  error
}

var _ Store = (*Redis)(nil)

// NewRedis returns a Redis store for rawURL, one of (details, options and
// defaults at ParseRedisURL):
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
	cfg, err := ParseRedisURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg.boundByContext()
	client := cfg.NewClient()
	client.AddHook(timeoutHook{timeout})
	return &Redis{client: client, prefix: prefix, instanceID: newInstanceID(),
		plaintext: strings.HasPrefix(rawURL, "redis://") || strings.HasPrefix(rawURL, "redis+")}, nil
}

// SessionKey is the Redis key of session sid's hash. The {sid} hash tag
// pins everything of one session to one Redis Cluster slot.
func SessionKey(prefix, sid string) string {
	return prefix + ":{" + sid + "}:session"
}

// EventsKey is the Redis stream holding session sid's event log.
func EventsKey(prefix, sid string) string {
	return prefix + ":{" + sid + "}:events"
}

// StreamKey is the Redis key naming the holder of session sid's GET stream.
func StreamKey(prefix, sid string) string {
	return prefix + ":{" + sid + "}:stream"
}

// BusChannel is the pub/sub channel every instance sharing prefix listens on.
func BusChannel(prefix string) string {
	return prefix + ":bus"
}

// SigningKeyKey is the Redis key holding the signing key called name.
func SigningKeyKey(prefix, name string) string {
	return prefix + ":signing-key:" + name
}

// CreateSession replaces any session with the same ID, dropping its event
// log and stream claim too: DEL, HSET and PEXPIRE run in one MULTI so no
// reader sees a half-written session.
func (r *Redis) CreateSession(ctx context.Context, s *Session, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if s == nil || s.ID == "" {
		return errors.New("store: create session: missing session ID")
	}
	if err := checkClientMetadata(s); err != nil {
		return err
	}
	fields, err := sessionFields(s, time.Now())
	if err != nil {
		return err
	}
	key := SessionKey(r.prefix, s.ID)
	_, err = r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, key, EventsKey(r.prefix, s.ID), StreamKey(r.prefix, s.ID))
		p.HSet(ctx, key, fields...)
		p.PExpire(ctx, key, ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: create session: %w", err)
	}
	return nil
}

// LoadSession reads the hash and refreshes its TTL in one pipelined round
// trip. PEXPIRE never creates a key, so racing a DeleteSession is harmless.
// Cancellation marks and pending requests come with the hash, at no extra
// cost. The TTLs of the event log and stream claim are not refreshed: they
// have their own (see AppendEvent and ClaimStream).
func (r *Redis) LoadSession(ctx context.Context, id string, ttl time.Duration) (*Session, error) {
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	key := SessionKey(r.prefix, id)
	var all *redis.MapStringStringCmd
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		all = p.HGetAll(ctx, key)
		p.PExpire(ctx, key, ttl)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: load session: %w", err)
	}
	return decodeSession(id, all.Val(), time.Now())
}

// PutBackends writes the snapshots as b:<key> fields.
func (r *Redis) PutBackends(ctx context.Context, id string, snaps []*BackendSnapshot, ttl time.Duration) error {
	args := make([]any, 0, 2*len(snaps))
	for _, b := range snaps {
		if b == nil {
			return errors.New("store: put backends: nil snapshot")
		}
		raw, err := json.Marshal(b)
		if err != nil {
			return fmt.Errorf("store: put backends: encode %q: %w", b.Key, err)
		}
		args = append(args, prefixBackend+b.Key, raw)
	}
	return r.update(ctx, "put backends", hsetIfExists, id, ttl, args...)
}

// SetLogLevel writes a separate loglevel field rather than rewriting meta:
// a single HSET needs no read-modify-write, and LoadSession lets the field
// override the level stored in meta.
func (r *Redis) SetLogLevel(ctx context.Context, id, level string, ttl time.Duration) error {
	return r.update(ctx, "set log level", hsetIfExists, id, ttl, fieldLogLevel, level)
}

// AddSubscription records uri as an s:<uri> field (value "1"), counting
// the session's subscriptions in the same script when uri is new.
func (r *Redis) AddSubscription(ctx context.Context, id, uri string, ttl time.Duration) error {
	if err := checkSubscriptionURI(uri); err != nil {
		return err
	}
	if err := checkTTL(ttl); err != nil {
		return err
	}
	res, err := addSubscription.Run(ctx, r.client, []string{SessionKey(r.prefix, id)},
		ttl.Milliseconds(), prefixSub+uri, MaxSubscriptions).Int()
	switch {
	case err != nil:
		return fmt.Errorf("store: add subscription: %w", err)
	case res == 0:
		return ErrNotFound
	case res < 0:
		return errTooManySubs
	}
	return nil
}

// RemoveSubscription deletes the s:<uri> field; removing an absent
// subscription of an existing session is not an error.
func (r *Redis) RemoveSubscription(ctx context.Context, id, uri string, ttl time.Duration) error {
	return r.update(ctx, "remove subscription", hdelIfExists, id, ttl, prefixSub+uri)
}

// DeleteSession removes the session hash, its event log and its stream
// claim in one MULTI. ErrNotFound when the hash did not exist, even if the
// other two keys did (they are deleted all the same).
func (r *Redis) DeleteSession(ctx context.Context, id string) error {
	var session *redis.IntCmd
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		session = p.Del(ctx, SessionKey(r.prefix, id))
		p.Del(ctx, EventsKey(r.prefix, id), StreamKey(r.prefix, id))
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: delete session: %w", err)
	}
	if session.Val() == 0 {
		return ErrNotFound
	}
	return nil
}

// SigningKey pipelines SET NX (only the first caller's candidate wins) and
// GETEX (read whichever won, refreshing its TTL), so every instance gets
// the same key in one round trip.
func (r *Redis) SigningKey(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	if candidate != nil && len(candidate) != signingKeySize {
		return nil, fmt.Errorf("store: signing key %q: candidate has %d bytes, want %d", name, len(candidate), signingKeySize)
	}
	key := SigningKeyKey(r.prefix, name)
	// Retry covers the key expiring between SET NX and GETEX.
	for range 3 {
		offer, err := keyCandidate(candidate)
		if err != nil {
			return nil, fmt.Errorf("store: signing key %q: %w", name, err)
		}
		var get *redis.StringCmd
		_, err = r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.SetNX(ctx, key, offer, signingKeyTTL)
			get = p.GetEx(ctx, key, signingKeyTTL)
			return nil
		})
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("store: signing key %q: %w", name, err)
		}
		v, _ := get.Bytes()
		if len(v) != signingKeySize {
			return nil, fmt.Errorf("store: signing key %q: stored key has %d bytes, want %d", name, len(v), signingKeySize)
		}
		return v, nil
	}
	return nil, fmt.Errorf("store: signing key %q: key kept vanishing", name)
}

// Ping checks that Redis answers.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.client.Ping(ctx).Err(); err != nil {
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
var (
	hsetIfExists = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if #ARGV > 1 then redis.call('HSET', KEYS[1], unpack(ARGV, 2)) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`)
	// postAnswer: KEYS[1] session; ARGV ttl, p:<id>, a:<id>, answer,
	// channel, bus payload.
	postAnswer = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1`)
	// addSubscription: KEYS[1] session; ARGV ttl, s:<uri>, the most
	// subscriptions a session may have. Returns -1 (and writes nothing)
	// for a new URI past the limit. The count is an HSCAN MATCH into a
	// table, which drops the duplicates SCAN may return; the hash is small.
	addSubscription = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then
  local subs, n, cursor = {}, 0, '0'
  repeat
    local page = redis.call('HSCAN', KEYS[1], cursor, 'MATCH', 's:*', 'COUNT', 128)
    cursor = page[1]
    for i = 1, #page[2], 2 do
      if not subs[page[2][i]] then subs[page[2][i]] = true; n = n + 1 end
    end
  until cursor == '0'
  if n >= tonumber(ARGV[3]) then return -1 end
  redis.call('HSET', KEYS[1], ARGV[2], '1')
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`)
	takeField = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then redis.call('HDEL', KEYS[1], ARGV[1]) end
return v`)
	hdelIfExists = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`)
)

// update runs one of the conditional scripts and maps "absent" to ErrNotFound.
func (r *Redis) update(ctx context.Context, op string, script *redis.Script, id string, ttl time.Duration, fields ...any) error {
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

// sessionFields flattens a session into HSET field/value pairs; its cancel
// marks expire DefaultCancelMarkTTL after now.
func sessionFields(s *Session, now time.Time) ([]any, error) {
	meta, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("store: encode session: %w", err)
	}
	fields := []any{fieldMeta, meta}
	for key, b := range s.Backends {
		if b == nil {
			continue
		}
		raw, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("store: encode backend %q: %w", key, err)
		}
		fields = append(fields, prefixBackend+key, raw)
	}
	for _, uri := range s.Subscriptions {
		fields = append(fields, prefixSub+uri, "1")
	}
	expires := now.Add(DefaultCancelMarkTTL).UnixMicro()
	for reqID, ok := range s.Cancelled {
		if ok && markable(reqID) {
			fields = append(fields, prefixCancel+reqID, expires)
		}
	}
	for requestID, instance := range s.Pending {
		fields = append(fields, prefixPending+requestID, instance)
	}
	return fields, nil
}

// decodeSession rebuilds a session from its hash. A hash without meta is
// treated as absent: it cannot be a session the gateway created. Cancel
// marks that expired by now are left out (MarkCancelled deletes them).
func decodeSession(id string, h map[string]string, now time.Time) (*Session, error) {
	meta, ok := h[fieldMeta]
	if !ok {
		return nil, ErrNotFound
	}
	s := &Session{}
	if err := json.Unmarshal([]byte(meta), s); err != nil {
		return nil, fmt.Errorf("store: decode session %q: %w", id, err)
	}
	s.ID = id
	if level, ok := h[fieldLogLevel]; ok {
		s.LogLevel = level
	}
	for field, v := range h {
		switch {
		case strings.HasPrefix(field, prefixBackend):
			b := &BackendSnapshot{}
			if err := json.Unmarshal([]byte(v), b); err != nil {
				return nil, fmt.Errorf("store: decode backend %q of session %q: %w", field, id, err)
			}
			if s.Backends == nil {
				s.Backends = make(map[string]*BackendSnapshot)
			}
			s.Backends[strings.TrimPrefix(field, prefixBackend)] = b
		case strings.HasPrefix(field, prefixSub):
			s.Subscriptions = append(s.Subscriptions, strings.TrimPrefix(field, prefixSub))
		case strings.HasPrefix(field, prefixCancel):
			if expires, _ := strconv.ParseInt(v, 10, 64); expires <= now.UnixMicro() {
				continue
			}
			if s.Cancelled == nil {
				s.Cancelled = make(map[string]bool)
			}
			s.Cancelled[strings.TrimPrefix(field, prefixCancel)] = true
		case strings.HasPrefix(field, prefixPending):
			if s.Pending == nil {
				s.Pending = make(map[string]string)
			}
			s.Pending[strings.TrimPrefix(field, prefixPending)] = v
		}
	}
	slices.Sort(s.Subscriptions)
	return s, nil
}
