package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpgw/gateway/internal/metrics"
)

// BenchmarkMiddleware measures what instrumentation adds to one request:
// compare "instrumented" with "bare" (same mux, same inner handler). The
// inner handler reports its JSON-RPC method as the real one does.
func BenchmarkMiddleware(b *testing.B) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		metrics.SetRPCMethod(r.Context(), "tools/call")
		w.WriteHeader(http.StatusOK)
	})
	known := func(v string) bool { return v == "demo" }
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", inner},
		{"instrumented", metrics.New().Middleware(known)(inner)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			mux := http.NewServeMux()
			mux.Handle("/servers/{vhost}/mcp", bc.h)
			req := httptest.NewRequest(http.MethodPost, "/servers/demo/mcp", nil)
			w := discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				mux.ServeHTTP(w, req)
			}
		})
	}
}

// discardWriter keeps httptest.ResponseRecorder's own allocations out of
// the measurement.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}
