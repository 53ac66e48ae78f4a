package store

import (
	"context"
	"encoding/json"
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

	mu sync.Mutex // guards the fields below; never held across I/O
	// started is made by the first Subscribe and closed once its start
	// has ended: later Subscribes and Close wait on it, not on mu.
	started chan struct{}
	ps      *redis.PubSub
	done    chan struct{} // closed when the dispatcher returns
	closed  bool
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
// busSubscribeTimeout, or until ctx ends), so a message published after
// any Subscribe call has returned without error is delivered. Callbacks run on the dispatcher goroutine and
// must not block; messages that are not a JSON BusMessage with a Kind are
// skipped. go-redis reconnects and resubscribes after a connection drop,
// but messages published meanwhile are lost (see bus.go). Stopping the last
// callback keeps the connection open until Close. After Close, Subscribe
// registers nothing and returns a no-op stop.
func (r *Redis) Subscribe(ctx context.Context, fn func(BusMessage)) (stop func(), err error) {
	b := &r.bus
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return func() {}, nil
	}
	stop = b.subs.add(fn)
	started, first := b.started, b.started == nil
	if first {
		started = make(chan struct{})
		b.started = started
	}
	b.mu.Unlock()
	if first {
		// The start goes on past ctx (it is bounded by busSubscribeTimeout,
		// and go-redis keeps retrying after it): the subscription is the
		// store's, not this caller's.
		go func() {
			b.start(r.client, BusChannel(r.prefix))
			close(started)
		}()
	}
	select {
	case <-started:
		return stop, nil
	case <-ctx.Done():
		return stop, fmt.Errorf("store: subscribe: %w", ctx.Err())
	}
}

// start subscribes, waits for the confirmation and starts the dispatcher,
// unless Close came meanwhile. Only the first Subscribe calls it, without
// b.mu: the wait lasts up to busSubscribeTimeout.
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
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		_ = ps.Close()
		return
	}
	b.ps = ps
	b.done = make(chan struct{})
	go b.run(ps.Channel(redis.WithChannelSize(busChannelSize)), early)
	b.mu.Unlock()
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

// close stops the dispatcher and waits for it, after a start in progress
// has ended. Idempotent.
func (b *redisBus) close() {
	b.mu.Lock()
	b.closed = true
	started := b.started
	b.mu.Unlock()
	if started != nil {
		<-started
	}
	b.mu.Lock()
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
