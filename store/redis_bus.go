package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// busSubscribeTimeout bounds how long the first Subscribe waits for Redis
// to confirm the subscription. If Redis does not answer in time Subscribe
// returns anyway and the pub/sub connection keeps retrying in the
// background; messages published until it succeeds are lost.
const busSubscribeTimeout = 10 * time.Second

// busChannelSize is the go-redis buffer between the pub/sub connection and
// the dispatcher. go-redis drops a message when this buffer stays full for
// a minute, which only happens if a callback blocks.
const busChannelSize = 1024

// redisBus is the store's single pub/sub subscription, started by the first
// Subscribe and stopped by Close.
type redisBus struct {
	subs busSubscribers

	mu     sync.Mutex // guards the fields below; held while starting
	ps     *redis.PubSub
	done   chan struct{} // closed when the dispatcher returns
	closed bool
}

// MarkCancelled sets the c:<reqID> field to the mark's expiry (Unix µs:
// fine enough to keep marks in order), refreshes the session TTL and
// PUBLISHes msg (From set to InstanceID) in one script, so the mark and the
// broadcast are atomic. Redis 7.0 has no expiry per hash field, so the
// script itself drops the session's expired marks, and the oldest live
// ones past MaxCancelMarks, before adding one; readers ignore a mark whose
// time has passed (decodeSession). An id over MaxCancelIDBytes is only
// published. On a missing session it publishes nothing and returns
// ErrNotFound.
func (r *Redis) MarkCancelled(ctx context.Context, id, reqID string, msg BusMessage, markTTL, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if err := checkTTL(markTTL); err != nil {
		return err
	}
	payload, err := r.encodeBus(msg)
	if err != nil {
		return fmt.Errorf("store: mark cancelled: %w", err)
	}
	field := ""
	if markable(reqID) {
		field = prefixCancel + reqID
	}
	now := time.Now()
	ok, err := markCancelled.Run(ctx, r.client, []string{SessionKey(r.prefix, id)},
		ttl.Milliseconds(), field, BusChannel(r.prefix), payload,
		now.UnixMicro(), now.Add(markTTL).UnixMicro(), MaxCancelMarks).Int()
	if err != nil {
		return fmt.Errorf("store: mark cancelled: %w", err)
	}
	if ok == 0 {
		return ErrNotFound
	}
	return nil
}

// ClearCancelled deletes the c:<reqID> field. HDEL never creates a key, so
// it cannot resurrect a session; a missing session or mark is not an error.
// The TTL is left alone.
func (r *Redis) ClearCancelled(ctx context.Context, id, reqID string) error {
	if err := r.client.HDel(ctx, SessionKey(r.prefix, id), prefixCancel+reqID).Err(); err != nil {
		return fmt.Errorf("store: clear cancelled: %w", err)
	}
	return nil
}

// AddPending sets p:<requestID> = instance. ErrNotFound if the session is absent.
func (r *Redis) AddPending(ctx context.Context, id, requestID, instance string, ttl time.Duration) error {
	return r.update(ctx, "add pending", hsetIfExists, id, ttl, prefixPending+requestID, instance)
}

// RemovePending deletes p:<requestID> and a stored answer, like
// ClearCancelled: a missing session or entry is not an error, and the TTL
// is left alone.
func (r *Redis) RemovePending(ctx context.Context, id, requestID string) error {
	if err := r.client.HDel(ctx, SessionKey(r.prefix, id), prefixPending+requestID, prefixAnswer+requestID).Err(); err != nil {
		return fmt.Errorf("store: remove pending: %w", err)
	}
	return nil
}

// PostAnswer sets a:<requestID>, refreshes the TTL and PUBLISHes msg in one
// script, only while p:<requestID> exists.
func (r *Redis) PostAnswer(ctx context.Context, id, requestID string, data []byte, msg BusMessage, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	payload, err := r.encodeBus(msg)
	if err != nil {
		return fmt.Errorf("store: post answer: %w", err)
	}
	ok, err := postAnswer.Run(ctx, r.client, []string{SessionKey(r.prefix, id)}, ttl.Milliseconds(),
		prefixPending+requestID, prefixAnswer+requestID, data, BusChannel(r.prefix), payload).Int()
	if err != nil {
		return fmt.Errorf("store: post answer: %w", err)
	}
	if ok == 0 {
		return ErrNotFound
	}
	return nil
}

// TakeAnswer gets and deletes a:<requestID> in one script.
func (r *Redis) TakeAnswer(ctx context.Context, id, requestID string) ([]byte, error) {
	v, err := takeField.Run(ctx, r.client, []string{SessionKey(r.prefix, id)}, prefixAnswer+requestID).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("store: take answer: %w", err)
	}
	return []byte(v), nil
}

// InstanceID is 16 random hex characters chosen when the store was created.
func (r *Redis) InstanceID() string { return r.instanceID }

// Publish PUBLISHes msg, with From set to InstanceID, on the one bus
// channel all instances share (BusChannel). Classic PUBLISH reaches every
// node of a Redis Cluster, so subscribers on any node receive it. Delivery
// is best effort: see the bus contract in bus.go.
func (r *Redis) Publish(ctx context.Context, msg BusMessage) error {
	payload, err := r.encodeBus(msg)
	if err != nil {
		return fmt.Errorf("store: publish: %w", err)
	}
	if err := r.client.Publish(ctx, BusChannel(r.prefix), payload).Err(); err != nil {
		return fmt.Errorf("store: publish: %w", err)
	}
	return nil
}

// Subscribe registers fn for every bus message. The first call opens the
// store's one pub/sub connection and starts its dispatcher goroutine; it
// returns once Redis has confirmed the subscription (waiting at most
// busSubscribeTimeout), so a message published after any Subscribe call
// has returned is delivered. Callbacks run on the dispatcher goroutine and
// must not block; messages that are not a JSON BusMessage with a Kind are
// skipped. go-redis reconnects and resubscribes after a connection drop,
// but messages published meanwhile are lost (see bus.go). Stopping the last
// callback keeps the connection open until Close. After Close, Subscribe
// registers nothing and returns a no-op stop.
func (r *Redis) Subscribe(fn func(BusMessage)) (stop func()) {
	b := &r.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return func() {}
	}
	stop = b.subs.add(fn)
	if b.ps == nil {
		b.start(r.client, BusChannel(r.prefix))
	}
	return stop
}

// start subscribes, waits for the confirmation and starts the dispatcher.
// Called with b.mu held.
func (b *redisBus) start(client redis.UniversalClient, channel string) {
	ctx, cancel := context.WithTimeout(context.Background(), busSubscribeTimeout)
	defer cancel()
	ps := client.Subscribe(ctx, channel)
	var early []*redis.Message
	for confirmed := false; !confirmed; {
		m, err := ps.Receive(ctx)
		if err != nil {
			// Timed out or the connection failed: go-redis redials and
			// resubscribes on the dispatcher's next receive.
			break
		}
		switch m := m.(type) {
		case *redis.Subscription:
			confirmed = m.Kind == "subscribe"
		case *redis.Message:
			early = append(early, m) // cannot precede the confirmation, but never drop one
		}
	}
	b.ps = ps
	b.done = make(chan struct{})
	go b.run(ps.Channel(redis.WithChannelSize(busChannelSize)), early)
}

// run dispatches messages until Close closes the PubSub, which closes ch.
func (b *redisBus) run(ch <-chan *redis.Message, early []*redis.Message) {
	defer close(b.done)
	deliver := func(m *redis.Message) {
		var msg BusMessage
		if err := json.Unmarshal([]byte(m.Payload), &msg); err != nil || msg.Kind == "" {
			return // malformed: not ours to interpret
		}
		b.subs.dispatch(msg)
	}
	for _, m := range early {
		deliver(m)
	}
	for m := range ch {
		deliver(m)
	}
}

// close stops the dispatcher and waits for it. Idempotent.
func (b *redisBus) close() {
	b.mu.Lock()
	b.closed = true
	ps, done := b.ps, b.done
	b.ps = nil
	b.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
		<-done
	}
}

func (r *Redis) encodeBus(msg BusMessage) ([]byte, error) {
	msg.From = r.instanceID
	return json.Marshal(msg)
}

// markCancelled: KEYS[1] session hash; ARGV: ttl ms, field (empty: publish
// only), channel, message, now (Unix µs), the mark's expiry (Unix µs), the
// most live marks a session keeps. The session's marks are read with
// HSCAN MATCH into a table (which also drops the duplicates SCAN may
// return); the hash is small, since everything in it is bounded. A mark
// from before marks expired holds "1", which reads as long expired.
var markCancelled = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[2] ~= '' then
  local now, marks, cursor = tonumber(ARGV[5]), {}, '0'
  repeat
    local page = redis.call('HSCAN', KEYS[1], cursor, 'MATCH', 'c:*', 'COUNT', 128)
    cursor = page[1]
    for i = 1, #page[2], 2 do marks[page[2][i]] = tonumber(page[2][i + 1]) or 0 end
  until cursor == '0'
  marks[ARGV[2]] = nil
  local live, drop = {}, {}
  for field, expires in pairs(marks) do
    if expires > now then live[#live + 1] = {field, expires} else drop[#drop + 1] = field end
  end
  local keep = tonumber(ARGV[7]) - 1
  if #live > keep then
    table.sort(live, function(a, b) return a[2] < b[2] end)
    for i = 1, #live - keep do drop[#drop + 1] = live[i][1] end
  end
  for i = 1, #drop, 512 do
    redis.call('HDEL', KEYS[1], unpack(drop, i, math.min(i + 511, #drop)))
  end
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[6])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1`)
