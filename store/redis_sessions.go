package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/redis/go-redis/v9"
)

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
func (r *Redis) LoadSession(ctx context.Context, id SessionID, ttl time.Duration) (*Session, error) {
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
	return decodeSession(id, all.Val(), time.Now(), &r.snapshots)
}

// PutBackends writes the snapshots as b:<key> fields.
func (r *Redis) PutBackends(ctx context.Context, id SessionID, snaps []*BackendSnapshot, ttl time.Duration) error {
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
func (r *Redis) SetLogLevel(ctx context.Context, id SessionID, level string, ttl time.Duration) error {
	return r.update(ctx, "set log level", hsetIfExists, id, ttl, fieldLogLevel, level)
}

// AddSubscription records uri as an s:<uri> field (value "1"), counting
// the session's subscriptions in the same script when uri is new.
func (r *Redis) AddSubscription(ctx context.Context, id SessionID, uri string, ttl time.Duration) error {
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

// addSubscription: KEYS[1] session; ARGV ttl, s:<uri>, the most
// subscriptions a session may have. Returns -1 (and writes nothing)
// for a new URI past the limit. The count is an HSCAN MATCH into a
// table, which drops the duplicates SCAN may return; the hash is small.
var addSubscription = redis.NewScript(`
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

// RemoveSubscription deletes the s:<uri> field; removing an absent
// subscription of an existing session is not an error.
func (r *Redis) RemoveSubscription(ctx context.Context, id SessionID, uri string, ttl time.Duration) error {
	return r.update(ctx, "remove subscription", hdelIfExists, id, ttl, prefixSub+uri)
}

// hdelIfExists is hsetIfExists (redis.go) deleting the fields instead.
var hdelIfExists = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`)

// DeleteSession removes the session hash, its event log and its stream
// claim in one MULTI. ErrNotFound when the hash did not exist, even if the
// other two keys did (they are deleted all the same).
func (r *Redis) DeleteSession(ctx context.Context, id SessionID) error {
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
		fields = append(fields, prefixPending+string(requestID), instance)
	}
	return fields, nil
}

// decodeSession rebuilds a session from its hash. A hash without meta is
// treated as absent: it cannot be a session the gateway created. Cancel
// marks that expired by now are left out (MarkCancelled deletes them).
func decodeSession(id SessionID, h map[string]string, now time.Time, snapshots *snapshotCache) (*Session, error) {
	meta, ok := h[fieldMeta]
	if !ok {
		return nil, ErrNotFound
	}
	s := &Session{}
	if !decodeMeta([]byte(meta), s) {
		if err := json.Unmarshal([]byte(meta), s); err != nil {
			return nil, fmt.Errorf("store: decode session %q: %w", id, err)
		}
	}
	s.ID = id
	if level, ok := h[fieldLogLevel]; ok {
		s.LogLevel = level
	}
	for field, v := range h {
		switch {
		case strings.HasPrefix(field, prefixBackend):
			b, err := snapshots.decode(v)
			if err != nil {
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
				s.Pending = make(map[ServerRequestID]string)
			}
			s.Pending[ServerRequestID(strings.TrimPrefix(field, prefixPending))] = v
		}
	}
	slices.Sort(s.Subscriptions)
	return s, nil
}

// decodeMeta reads a session record as the store wrote it (json.Marshal
// of a Session: plain keys, each once) where it lies: every request of a
// 2025-era session decodes one, and encoding/json's reflection was most of
// the decode. false for anything else (a key it does not know, a value of
// another type), which encoding/json then decodes.
func decodeMeta(raw []byte, s *Session) bool {
	ok := true
	str := func(v []byte, dst *string) { *dst, ok = wire.String(v) }
	done := wire.ValidMembers(raw, func(k, v []byte) bool {
		switch string(k) {
		case "principal":
			str(v, &s.Principal)
		case "vhost":
			str(v, &s.VHost)
		case "protocolVersion":
			str(v, &s.ProtocolVersion)
		case "logLevel":
			str(v, &s.LogLevel)
		case "clientInfo":
			s.ClientInfo = bytes.Clone(v)
		case "clientCapabilities":
			s.ClientCapabilities = bytes.Clone(v)
		case "createdAt":
			var t string
			if str(v, &t); ok {
				s.CreatedAt, ok = parseTime(t)
			}
		default:
			ok = false
		}
		return ok
	})
	if !done || !ok {
		*s = Session{}
		return false
	}
	return true
}

// parseTime reads a time as time.Time's MarshalJSON writes it.
func parseTime(v string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}

// Every request of a 2025-era session loads the session, and with it a
// snapshot of each of the vhost's backends, which changes only when the
// backend is probed again: decoding them on every request was most of a
// session load's cost. snapshotCache keeps what it decoded by the stored
// text, so a request whose snapshots did not change decodes none; each
// load still gets a copy of its own (a caller may change what it loaded,
// never what is stored). It holds at most maxCachedSnapshots, and starts
// afresh when full.
type snapshotCache struct {
	mu sync.Mutex
	m  map[string]*BackendSnapshot
}

// maxCachedSnapshots bounds a snapshotCache (each entry is one stored
// snapshot, a few hundred bytes to a few KB).
const maxCachedSnapshots = 4096

func (c *snapshotCache) decode(text string) (*BackendSnapshot, error) {
	c.mu.Lock()
	b, ok := c.m[text]
	c.mu.Unlock()
	if !ok {
		b = &BackendSnapshot{}
		if err := json.Unmarshal([]byte(text), b); err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.m == nil || len(c.m) >= maxCachedSnapshots {
			c.m = make(map[string]*BackendSnapshot)
		}
		c.m[text] = b
		c.mu.Unlock()
	}
	cp := *b
	cp.Capabilities = bytes.Clone(b.Capabilities)
	cp.ServerInfo = bytes.Clone(b.ServerInfo)
	return &cp, nil
}
