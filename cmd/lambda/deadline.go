package main

import (
	"context"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
)

// deadlineMargin is how long before the invocation's time limit a request
// is ended. Lambda stops an invocation at its deadline mid-write; ending it
// a little earlier lets the handler finish on its own terms: a GET stream
// ends cleanly and releases its claim, so the client reconnects with
// Last-Event-ID and resumes from the session's event log, and a call
// cancels its backend request and says so.
const deadlineMargin = 2 * time.Second

// endBeforeDeadline gives each request a context that ends deadlineMargin
// before the invocation's deadline (a fifth of the time left, for short
// time limits). streamMax > 0 also bounds the streams that last as long
// as the client wants (longStream): a client that went away is not
// noticed by a Function URL stream, which would otherwise run, and be
// billed, until the time limit. A listen ends with its result, a GET
// stream cleanly: the client listens again, or resumes.
func endBeforeDeadline(streamMax time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if d, ok := ctx.Deadline(); ok {
			margin := min(deadlineMargin, time.Until(d)/5)
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, d.Add(-margin))
			defer cancel()
		}
		if streamMax > 0 && longStream(r) {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, streamMax)
			defer cancel()
		}
		if ctx != r.Context() {
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// longStream reports whether r opens a stream with no end of its own: a
// session's GET stream, or a subscriptions/listen of protocol 2026-07-28,
// known by its Mcp-Method header (which the revision requires, and the
// handler refuses unless it names the body's method).
func longStream(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet:
		return true
	case http.MethodPost:
		return wire.MethodOf(r.Header.Get("Mcp-Method")).OpenEnded
	}
	return false
}
