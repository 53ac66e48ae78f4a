package metrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/metrics"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics must satisfy the router's hook without the router importing it.
var _ router.Observer = (*metrics.Metrics)(nil)

// scrape reads m's /metrics output through the text parser, which fails on
// anything that is not valid exposition format.
func scrape(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("Content-Type %q, want the text exposition format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	return testsupport.MetricValue(fams, name, want)
}

// serve runs one request through the middleware on the MCP pattern, with
// the inner handler setting rpc (if any) and answering status.
func serve(m *metrics.Metrics, method, path, rpc string, status int) {
	mux := http.NewServeMux()
	known := func(v string) bool { return v == "demo" }
	mux.Handle("/servers/{vhost}/mcp", m.Middleware(known)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rpc != "" {
			metrics.SetRPCMethod(r.Context(), rpc)
		}
		w.WriteHeader(status)
	})))
	mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, path, nil))
}

func TestMiddleware_LabelsAreBounded(t *testing.T) {
	m := metrics.New()
	serve(m, http.MethodPost, "/servers/demo/mcp", "tools/call", 200)
	serve(m, http.MethodPost, "/servers/demo/mcp", "server/discover", 200)
	serve(m, http.MethodPost, "/servers/demo/mcp", "subscriptions/listen", 200)
	serve(m, http.MethodPost, "/servers/demo/mcp", "frobnicate", 200)
	serve(m, http.MethodPost, "/servers/demo/mcp", "notifications/made-up", 202)
	serve(m, http.MethodPost, "/servers/demo/mcp", "notifications/cancelled", 202)
	serve(m, http.MethodPost, "/servers/nope/mcp", "", 404)
	serve(m, "BREW", "/servers/demo/mcp", "", 405)
	serve(m, http.MethodGet, "/servers/demo/mcp", "", 200)

	fams := scrape(t, m)
	for _, c := range []struct {
		vhost, method, rpc, code string
		n                        float64
	}{
		{"demo", "POST", "tools/call", "200", 1},
		{"demo", "POST", "server/discover", "200", 1},
		{"demo", "POST", "subscriptions/listen", "200", 1},
		{"demo", "POST", "other", "200", 1},
		{"demo", "POST", "other", "202", 1},
		{"demo", "POST", "notifications/cancelled", "202", 1},
		{"unknown", "POST", "", "404", 1},
		{"demo", "other", "", "405", 1},
		{"demo", "GET", "", "200", 1},
	} {
		got, ok := value(fams, "mcpgw_http_requests_total", map[string]string{"vhost": c.vhost, "method": c.method, "rpc_method": c.rpc, "code": c.code})
		if !ok || got != c.n {
			t.Errorf("requests_total%+v = %v (present %v), want %v", c, got, ok, c.n)
		}
	}
	if got, _ := value(fams, "mcpgw_http_request_duration_seconds", map[string]string{"vhost": "demo", "method": "POST", "rpc_method": "other"}); got != 2 {
		t.Errorf("duration count for demo/POST/other = %v, want 2", got)
	}
	if got, ok := value(fams, "mcpgw_http_requests_in_flight", map[string]string{}); !ok || got != 0 {
		t.Errorf("in flight = %v (present %v), want 0", got, ok)
	}
	if fams["go_goroutines"] == nil || fams["process_cpu_seconds_total"] == nil && fams["process_start_time_seconds"] == nil {
		t.Error("Go or process collector missing")
	}
}

func TestBackendCallAndStreams(t *testing.T) {
	m := metrics.New()
	m.BackendCall("demo", "one", "tools/call", 20*time.Millisecond, router.OutcomeOK)
	m.BackendCall("demo", "one", "tools/call", time.Second, router.OutcomeTimeout)
	m.StreamOpened(metrics.StreamGET)
	m.StreamOpened(metrics.StreamPOST)
	m.StreamOpened(metrics.StreamPOST)
	m.StreamClosed(metrics.StreamPOST)
	m.ListCacheLookup("demo", "one", false)
	m.ListCacheLookup("demo", "one", true)
	m.ListCacheLookup("demo", "one", true)

	fams := scrape(t, m)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"mcpgw_backend_requests_total", map[string]string{"vhost": "demo", "backend": "one", "outcome": "ok"}, 1},
		{"mcpgw_backend_requests_total", map[string]string{"vhost": "demo", "backend": "one", "outcome": "timeout"}, 1},
		{"mcpgw_backend_request_duration_seconds", map[string]string{"vhost": "demo", "backend": "one"}, 2},
		{"mcpgw_sse_streams_open", map[string]string{"kind": "get"}, 1},
		{"mcpgw_sse_streams_open", map[string]string{"kind": "post"}, 1},
		{"mcpgw_list_cache_lookups_total", map[string]string{"vhost": "demo", "backend": "one", "result": "miss"}, 1},
		{"mcpgw_list_cache_lookups_total", map[string]string{"vhost": "demo", "backend": "one", "result": "hit"}, 2},
	} {
		if got, ok := value(fams, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
}

// A nil *Metrics is how metrics are turned off: every method must be a
// no-op and the middleware must hand the request through untouched.
func TestNilMetricsIsANoOp(t *testing.T) {
	var m *metrics.Metrics
	m.BackendCall("demo", "one", "ping", time.Millisecond, router.OutcomeOK)
	m.StreamOpened(metrics.StreamGET)
	m.StreamClosed(metrics.StreamGET)
	m.ListCacheLookup("demo", "one", true)
	inner := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if h := m.Middleware(func(string) bool { return true })(inner); h == nil {
		t.Fatal("nil middleware")
	}
	metrics.SetRPCMethod(context.Background(), "ping") // no middleware context: ignored
}

// The middleware's context stands in for the request's: cancellation,
// deadlines and other values must still come through it.
func TestMiddlewareContextPassesThrough(t *testing.T) {
	m := metrics.New()
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	var ctx context.Context
	var stop context.CancelFunc
	h := m.Middleware(func(string) bool { return true })(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		ctx, stop = context.WithTimeout(r.Context(), time.Hour)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil).WithContext(parent))
	defer stop()
	if ctx.Value(key{}) != "v" {
		t.Fatal("value of the request's context lost")
	}
	cancel()
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
		t.Fatal("cancelling the request's context did not reach a derived context")
	}
}

func TestSetBuildInfo_PublishesOneSeriesAtOne(t *testing.T) {
	m := metrics.New()
	m.SetBuildInfo("v1.2.3", "abc123", "go1.26.0")
	got, ok := value(scrape(t, m), "mcpgw_build_info", map[string]string{"version": "v1.2.3", "commit": "abc123", "goversion": "go1.26.0"})
	if !ok || got != 1 {
		t.Fatalf("mcpgw_build_info = %v (present %v), want 1", got, ok)
	}
	var none *metrics.Metrics
	none.SetBuildInfo("v", "c", "g") // metrics off: nothing to do, no panic
}

// The stdio pools are read at each scrape: what the samples say now, and
// nothing for a backend that is gone.
func TestObservePools_ReadAtEachScrape(t *testing.T) {
	m := metrics.New()
	var samples []metrics.PoolSample
	m.ObservePools(func() []metrics.PoolSample { return samples })
	if fams := scrape(t, m); fams["mcpgw_stdio_processes"] != nil {
		t.Fatal("series before any stdio backend")
	}
	samples = []metrics.PoolSample{{VHost: "demo", Backend: "files", Running: 3, Idle: 1, Starting: 1, Started: 5, Crashed: 2}}
	fams := scrape(t, m)
	files := map[string]string{"vhost": "demo", "backend": "files"}
	for name, want := range map[string]float64{"mcpgw_stdio_process_starts_total": 5, "mcpgw_stdio_process_crashes_total": 2} {
		if got, ok := value(fams, name, files); !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	for state, want := range map[string]float64{"busy": 2, "idle": 1, "starting": 1} {
		labels := map[string]string{"vhost": "demo", "backend": "files", "state": state}
		if got, ok := value(fams, "mcpgw_stdio_processes", labels); !ok || got != want {
			t.Errorf("mcpgw_stdio_processes{state=%q} = %v (present %v), want %v", state, got, ok, want)
		}
	}
	samples = nil // reloaded away
	if fams := scrape(t, m); fams["mcpgw_stdio_process_starts_total"] != nil {
		t.Fatal("series of a backend that is gone")
	}
	var none *metrics.Metrics
	none.ObservePools(func() []metrics.PoolSample { return nil })
}
