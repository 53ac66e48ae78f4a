package main

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/cmd/internal/app"
)

// lazyApp assembles the gateway on the first request and serves every
// request with it; an execution environment builds it once.
//
// Why not at init: starting the gateway subscribes to the store's bus,
// which with Redis dials the server and waits for the SUBSCRIBE
// confirmation (bounded by busStartTimeout). Init should touch no store, so
// a store that is down or slow costs a slow first request rather than an
// init that fails and is retried on every request. The config and the
// store URL were validated at init, so building rarely fails; when it does
// the request gets 503 and the next one tries again.
type lazyApp struct {
	build func() (*app.App, error)
	log   *slog.Logger

	mu  sync.Mutex
	app atomic.Pointer[app.App]
}

func (l *lazyApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a, err := l.get()
	if err != nil {
		l.log.Error("mcpgw lambda: assembling the gateway failed", "error", err)
		writeJSONRPCError(w, http.StatusServiceUnavailable, codeInternalError, "the gateway could not start: "+err.Error())
		return
	}
	a.Handler.ServeHTTP(w, r)
	// Spans go out before the invocation ends: Lambda freezes the
	// environment once the handler returns, and the batch processor's
	// goroutine with it. The response is written by now; in url mode the
	// stream's end waits for the flush (a local collector: milliseconds).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), traceFlushTimeout)
	defer cancel()
	if err := a.FlushTraces(ctx); err != nil {
		l.log.Warn("mcpgw lambda: flushing trace spans failed", "error", err)
	}
	// The audit lines of the invocation, likewise (stdout: CloudWatch).
	if a.Audit != nil {
		if err := a.Audit.Flush(ctx); err != nil {
			l.log.Warn("mcpgw lambda: flushing audit lines failed", "error", err)
		}
	}
}

// traceFlushTimeout bounds the flush at the end of an invocation, so a
// collector that is down costs each invocation at most this.
const traceFlushTimeout = 2 * time.Second

func (l *lazyApp) get() (*app.App, error) {
	if a := l.app.Load(); a != nil {
		return a, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.app.Load(); a != nil {
		return a, nil
	}
	a, err := l.build()
	if err != nil {
		return nil, err
	}
	l.app.Store(a)
	return a, nil
}

// close releases the gateway if it was built (tests; Lambda simply
// freezes and eventually ends the process).
func (l *lazyApp) close() {
	if a := l.app.Load(); a != nil {
		_ = a.Close()
	}
}
