package metrics

import (
	"context"
	"net/http"
	"time"
)

// Middleware counts and times each request on the MCP endpoint and tracks
// the requests in flight. It must wrap the handler that serves the
// /servers/{vhost}/mcp pattern (it reads the vhost path value) and sit
// outside Host/Origin checks and auth, so their refusals are counted too.
// knownVHost bounds the vhost label: a name it rejects is "unknown".
//
// The JSON-RPC method is only known once the handler has decoded the body;
// the handler reports it with SetRPCMethod instead of this middleware
// decoding the body a second time.
func (m *Metrics) Middleware(knownVHost func(string) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if m == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			t := &tracked{}
			t.ctx.Context = r.Context()
			t.rec.ResponseWriter = w
			m.inFlight.Inc()
			defer m.inFlight.Dec()

			next.ServeHTTP(&t.rec, r.WithContext(&t.ctx))

			vhost := r.PathValue("vhost")
			if !knownVHost(vhost) {
				vhost = "unknown"
			}
			code := t.rec.Status
			if code == 0 {
				code = http.StatusOK // nothing written: net/http sends 200
			}
			s := m.series.get(seriesKey{vhost: vhost, method: httpMethodLabel(r.Method), rpc: t.ctx.rpc, code: code})
			s.count.Inc()
			s.dur.Observe(time.Since(start).Seconds())
		})
	}
}

// SetRPCMethod records the JSON-RPC method of the request whose context is
// ctx; a JSON-RPC response from the client is recorded as "response". It
// does nothing when ctx did not come through Middleware (metrics off). Call
// it from the goroutine serving the request.
func SetRPCMethod(ctx context.Context, method string) {
	if c, ok := ctx.Value(ctxKey{}).(*rpcContext); ok {
		c.rpc = rpcLabel(method)
	}
}

// tracked is the middleware's per-request state. The context and the
// status recorder share one allocation, the only one besides the request
// copy that WithContext cannot avoid.
type tracked struct {
	ctx rpcContext
	rec StatusWriter
}

type ctxKey struct{}

// rpcContext is the request's context with a slot for the JSON-RPC method.
// Being a context itself, rather than a value put with context.WithValue,
// saves an allocation per request.
type rpcContext struct {
	context.Context
	rpc string
}

func (c *rpcContext) Value(key any) any {
	if key == (ctxKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// StatusWriter remembers the status code a handler wrote (the request log
// uses it too). Unwrap lets http.ResponseController reach the real
// writer, so SSE flushes work.
type StatusWriter struct {
	http.ResponseWriter
	// Status is the code written, 0 until the handler writes anything.
	Status int
}

func (s *StatusWriter) WriteHeader(code int) {
	if s.Status == 0 {
		s.Status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *StatusWriter) Write(b []byte) (int, error) {
	if s.Status == 0 {
		s.Status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *StatusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
