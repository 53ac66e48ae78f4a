package redisconn

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Redis that stops answering (a paused or overloaded server, a network
// partition, a failover in progress) must cost a request a short wait and
// then a clear failure, which the handler answers with 503: requests then
// recover by themselves once Redis answers again. go-redis alone does not
// give that. It ignores context deadlines on the socket unless
// ContextTimeoutEnabled is set, so a read waits out ReadTimeout whatever the
// caller's context says; it retries a timed-out command (MaxRetries times,
// with backoff); and a command can first wait PoolTimeout for a connection
// and DialTimeout for a new one. Those multiply into tens of seconds.
//
// So every command (and every pipeline, and every EVALSHA of a script) the
// store sends runs under a context that expires Timeout after it starts,
// and the client honours that context everywhere: in the pool wait, the
// dial, the socket reads and writes, and between retries. One store
// operation is one command or one pipeline, except for a script Redis has
// not cached yet (EVALSHA, then EVAL: the second starts at once) and
// SigningKey's retry when its key vanishes mid-way (never under a stall).
// The hook sits on the client, so store methods added later are bounded
// too. The pub/sub connection is not: it waits for messages by design, and
// go-redis health-checks it.

// BoundByContext makes every connection of the client honour context
// deadlines (see above).
func (c *Config) BoundByContext() {
	c.shared(func(o *sharedOptions) { *o.contextTimeout = true })
}

// timeoutHook gives every command and pipeline a deadline of d.
type timeoutHook struct{ d time.Duration }

// NewTimeoutHook bounds every command and pipeline of a client at d
// (see above).
func NewTimeoutHook(d time.Duration) redis.Hook { return timeoutHook{d} }

var _ redis.Hook = timeoutHook{}

// DialHook adds nothing: a dial for a command runs under its deadline.
func (h timeoutHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h timeoutHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		ctx, cancel := context.WithTimeout(ctx, h.d)
		defer cancel()
		return next(ctx, cmd)
	}
}

func (h timeoutHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		ctx, cancel := context.WithTimeout(ctx, h.d)
		defer cancel()
		return next(ctx, cmds)
	}
}
