package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
)

// recoverPanics gives the Lambda handler what net/http gives cmd/gateway:
// a panic ends one request, not the process. The Function URL adapter runs
// the handler on a goroutine of its own, where a panic would kill the
// execution environment and every request in it. A response that has not
// started gets a 500; one that has is cut short.
func recoverPanics(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &startTracker{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				return // net/http's way to abort a response quietly
			}
			log.Error("mcpgw lambda: handler panic", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if !tw.started {
				writeJSONRPCError(w, http.StatusInternalServerError, codeInternalError, "internal error")
			}
		}()
		next.ServeHTTP(tw, r)
	})
}

// startTracker notes whether the response has started.
type startTracker struct {
	http.ResponseWriter
	started bool
}

func (t *startTracker) WriteHeader(code int) {
	t.started = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *startTracker) Write(b []byte) (int, error) {
	t.started = true
	return t.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the adapter's writer.
func (t *startTracker) Unwrap() http.ResponseWriter { return t.ResponseWriter }
