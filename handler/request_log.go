package handler

import (
	"log/slog"

	"net/http"
	"time"

	"github.com/mcpgw/gateway/internal/metrics"
)

// logRequests logs one line per request. It never logs headers or bodies:
// they carry bearer tokens and session ids.
func logRequests(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rec := &metrics.StatusWriter{ResponseWriter: w}
			next.ServeHTTP(rec, r)
			if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics" {
				return
			}
			log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", rec.Status, "duration", time.Since(start))
		})
	}
}
