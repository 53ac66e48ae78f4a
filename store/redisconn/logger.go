package redisconn

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// DefaultLogEvery is how often Logger lets one kind of go-redis
// message through.
const DefaultLogEvery = 10 * time.Second

// Logger carries go-redis's own log lines (a pool that cannot dial,
// Sentinel and Cluster topology changes, recovered panics) to the
// gateway's slog logger, so they share its format (a JSON log stays JSON)
// and its level filter. It implements go-redis's Logging interface: hand
// it to redis.SetLogger.
//
// go-redis repeats a failure for every pooled connection and every retry,
// several times a second while Redis is down. Logger lets each kind
// of message (its format string) through once per interval and says how
// many it held back, so an outage is a few lines, not a flood. Every line
// is cleaned of the Redis URL's password and password parameters first.
type Logger struct {
	log   *slog.Logger
	every time.Duration
	red   redactor
	now   func() time.Time

	mu   sync.Mutex
	seen map[string]*logKind // by format string: go-redis's are constants
}

type logKind struct {
	last    time.Time
	skipped int
}

// NewLogger logs go-redis's messages to log at warn level, each kind
// at most once per every (DefaultLogEvery when 0). redisURL, when
// set, names the secrets to remove from every line.
func NewLogger(log *slog.Logger, redisURL string, every time.Duration) *Logger {
	if every <= 0 {
		every = DefaultLogEvery
	}
	return &Logger{log: log, every: every, red: newRedactor(redisURL), now: time.Now, seen: map[string]*logKind{}}
}

// Printf implements go-redis's internal.Logging.
func (l *Logger) Printf(ctx context.Context, format string, v ...any) {
	if !l.log.Enabled(ctx, slog.LevelWarn) {
		return
	}
	now := l.now()
	l.mu.Lock()
	k := l.seen[format]
	if k == nil {
		k = &logKind{}
		l.seen[format] = k
	} else if now.Sub(k.last) < l.every {
		k.skipped++
		l.mu.Unlock()
		return
	}
	skipped := k.skipped
	k.last, k.skipped = now, 0
	l.mu.Unlock()

	msg := l.red.clean(strings.TrimSpace(fmt.Sprintf(format, v...)))
	if skipped > 0 {
		l.log.WarnContext(ctx, "redis client", "detail", msg, "repeats_held_back", skipped)
		return
	}
	l.log.WarnContext(ctx, "redis client", "detail", msg)
}
