package handler_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/metrics"
	"github.com/mcpgw/gateway/internal/testsupport"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// startMetricsGateway is startGateway with metrics on, a Host allow-list,
// and a gateway-one backend that has the blocking tool and a short
// timeout, so every backend outcome can be provoked.
func startMetricsGateway(t *testing.T) (*gw, *testsupport.Backend) {
	t.Helper()
	g := startGateway(t, gwOptions{metrics: metrics.New(), hosts: []string{"127.0.0.1"}, oneTimeout: time.Second})
	return g, g.one
}

func TestMetrics_CountRealTraffic(t *testing.T) {
	g, one := startMetricsGateway(t)
	sid := g.initialize("alice", "demo")
	call := func(id int, tool string) *resp {
		return g.do(req{session: sid, body: fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"text":"hi"}}}`, id, tool)})
	}
	if r := g.do(req{session: sid, body: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`}); r.rpc.Error != nil {
		t.Fatalf("tools/list: %s", r.body)
	}
	if r := call(3, "gateway-one-echo"); r.rpc.Error != nil {
		t.Fatalf("echo: %s", r.body)
	}
	if r := call(4, "gateway-one-no-such-tool"); r.rpc.Error == nil {
		t.Fatalf("unknown backend tool answered %s", r.body)
	}
	one.FailMethod("tools/call", 1)
	if r := call(5, "gateway-one-echo"); r.rpc.Error == nil {
		t.Fatalf("failing backend answered %s", r.body)
	}
	g.do(req{session: sid, body: `{"jsonrpc":"2.0","id":6,"method":"frobnicate"}`})
	g.do(req{session: sid, body: `{"jsonrpc":"2.0","id":7,"method":"ping"}`, path: "/servers/nope/mcp"})
	g.do(req{session: sid, body: `{"jsonrpc":"2.0","id":8,"method":"ping"}`, headers: map[string]string{"Host": "evil.example"}})

	f := g.scrape("")
	want := []struct {
		name   string
		labels string
		n      float64
	}{
		{"mcpgw_http_requests_total", "vhost=demo method=POST rpc_method=initialize code=200", 1},
		{"mcpgw_http_requests_total", "vhost=demo method=POST rpc_method=tools/list code=200", 1},
		{"mcpgw_http_requests_total", "vhost=demo method=POST rpc_method=tools/call code=200", 3},
		{"mcpgw_http_requests_total", "vhost=demo method=POST rpc_method=other code=200", 1},
		{"mcpgw_http_requests_total", "vhost=unknown method=POST rpc_method= code=404", 1},
		{"mcpgw_http_requests_total", "vhost=demo method=POST rpc_method= code=403", 1},
		{"mcpgw_http_request_duration_seconds", "vhost=demo method=POST rpc_method=tools/call", 3},
		{"mcpgw_backend_requests_total", "vhost=demo backend=gateway-two outcome=ok", 1},
		{"mcpgw_backend_requests_total", "vhost=demo backend=gateway-one outcome=ok", 2}, // tools/list + echo
		{"mcpgw_backend_requests_total", "vhost=demo backend=gateway-one outcome=rpc_error", 1},
		{"mcpgw_backend_requests_total", "vhost=demo backend=gateway-one outcome=transport_error", 1},
		{"mcpgw_backend_request_duration_seconds", "vhost=demo backend=gateway-one", 4},
		{"mcpgw_http_requests_in_flight", "", 0}, // a scrape is not on the MCP endpoint
	}
	for _, w := range want {
		if got, ok := sample(f, w.name, w.labels); !ok || got != w.n {
			t.Errorf("%s{%s} = %v (present %v), want %v", w.name, w.labels, got, ok, w.n)
		}
	}
}

func TestMetrics_TimeoutAndOpenStreams(t *testing.T) {
	g, one := startMetricsGateway(t)
	sid := g.initialize("alice", "demo")

	// A call asking for progress answers as an SSE stream from the start;
	// the blocking tool keeps it open until gateway-one's 1s timeout.
	done := make(chan error, 1)
	go func() {
		r, err := g.raw(context.Background(), http.MethodPost, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gateway-one-block","arguments":{"tag":"m"},"_meta":{"progressToken":"p"}}}`)
		if err == nil {
			_, err = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
		done <- err
	}()
	<-one.Started
	if n, _ := sample(g.scrape(""), "mcpgw_sse_streams_open", "kind=post"); n != 1 {
		t.Errorf("post streams open during the call = %v, want 1", n)
	}
	if n, _ := sample(g.scrape(""), "mcpgw_http_requests_in_flight", ""); n != 1 {
		t.Errorf("in flight during the call = %v, want 1", n)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f := g.scrape("")
	if n, _ := sample(f, "mcpgw_backend_requests_total", "vhost=demo backend=gateway-one outcome=timeout"); n != 1 {
		t.Errorf("timeouts = %v, want 1", n)
	}
	if n, _ := sample(f, "mcpgw_sse_streams_open", "kind=post"); n != 0 {
		t.Errorf("post streams open after the call = %v, want 0", n)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := g.raw(ctx, http.MethodGet, sid, "")
	if err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", r, err)
	}
	if _, err := bufio.NewReader(r.Body).ReadString('\n'); err != nil { // the priming event
		t.Fatal(err)
	}
	if n, _ := sample(g.scrape(""), "mcpgw_sse_streams_open", "kind=get"); n != 1 {
		t.Errorf("get streams open = %v, want 1", n)
	}
	cancel()
	r.Body.Close()
	if !testsupport.Eventually(t, 5*time.Second, func() bool {
		n, _ := sample(g.scrape(""), "mcpgw_sse_streams_open", "kind=get")
		return n == 0
	}) {
		t.Error("the closed GET stream is still counted open")
	}
}

// /metrics is for the scraper only: no Host/Origin checks or token (like
// /healthz), and no path under a vhost leads to it.
func TestMetrics_Endpoint(t *testing.T) {
	g, _ := startMetricsGateway(t)
	g.scrape("evil.example") // fails the test unless 200 in text format
	for _, path := range []string{"/servers/demo/metrics", "/servers/metrics/mcp", "/servers/demo/mcp/metrics"} {
		r := g.do(req{method: http.MethodGet, path: path, headers: map[string]string{"Accept": "text/event-stream"}})
		if r.status == http.StatusOK || strings.Contains(r.body, "mcpgw_http_requests_total") {
			t.Errorf("GET %s: %d, serves metrics", path, r.status)
		}
	}
}

// raw sends a request without failing the test, for use off the test's
// goroutine; the caller closes the body.
func (g *gw) raw(ctx context.Context, method, sid, body string) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, method, g.url+"/servers/demo/mcp", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json, text/event-stream")
	hr.Header.Set("Authorization", "Bearer "+g.token("alice"))
	hr.Header.Set("Mcp-Session-Id", sid)
	return http.DefaultClient.Do(hr)
}

// scrape GETs /metrics (with a Host header when host is set) and parses it
// as the Prometheus text format.
func (g *gw) scrape(host string) map[string]*dto.MetricFamily {
	g.t.Helper()
	hr, _ := http.NewRequest(http.MethodGet, g.url+"/metrics", nil)
	if host != "" {
		hr.Host = host
	}
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		g.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		g.t.Fatalf("GET /metrics: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	f, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		g.t.Fatalf("GET /metrics is not the text format: %v", err)
	}
	return f
}

// sample finds the series of family name whose labels are exactly labels
// ("k=v k2=v2"; an empty value is written "k=") and returns a counter's
// or gauge's value, or a histogram's count.
func sample(f map[string]*dto.MetricFamily, name, labels string) (float64, bool) {
	want := map[string]string{}
	for _, kv := range strings.Fields(labels) {
		k, v, _ := strings.Cut(kv, "=")
		want[k] = v
	}
	return testsupport.MetricValue(f, name, want)
}
