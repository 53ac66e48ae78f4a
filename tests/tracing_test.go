package tests

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// otlpReceiver is a small OTLP/HTTP trace collector for the tests: it
// decodes each export request (protobuf, as the gateway's exporter sends
// it) and keeps the spans with their service name.
type otlpReceiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	spans   []*tracepb.Span
	service map[string]string // span id (hex) -> service.name
	changed chan struct{}     // closed and replaced on every export
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rc := &otlpReceiver{service: map[string]string{}, changed: make(chan struct{})}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *otlpReceiver) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		svc := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				svc = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				rc.spans = append(rc.spans, s)
				rc.service[hex.EncodeToString(s.GetSpanId())] = svc
			}
		}
	}
	close(rc.changed)
	rc.changed = make(chan struct{})
	rc.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// waitSpan waits until a span named name has arrived and returns it.
func (rc *otlpReceiver) waitSpan(t *testing.T, name string) *tracepb.Span {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		rc.mu.Lock()
		ch := rc.changed
		for _, s := range rc.spans {
			if s.GetName() == name {
				rc.mu.Unlock()
				return s
			}
		}
		rc.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no span %q reached the collector", name)
		}
	}
}

func spanAttr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// A traced gateway process exports, over OTLP/HTTP, one trace per request
// in the client's trace: the request's span under the client's, the
// backend exchange's under it, and the backend receives traceparent naming
// that exchange's span.
func TestTracing_ExportsOverOTLPAndPropagatesToTheBackend(t *testing.T) {
	rc := startOTLPReceiver(t)
	c := newCluster(t)
	cfg, err := os.ReadFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	c.writeConfig(string(cfg) + "tracing:\n  otlp_endpoint: " + rc.srv.URL + "\n  sample_ratio: 1\n")
	gw := testsupport.StartGateway(t, c.bin, []string{"--config", c.config, "--redis-url", redisSrv.URL()},
		[]string{jwtSecretEnv + "=" + string(jwtSecret), "OTEL_BSP_SCHEDULE_DELAY=50"})
	ep := testsupport.BaseURL(gw.URL)

	cl := c.client("alice")
	cl.Initialize(ep, nil)
	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	res := cl.Open(ep, http.MethodPost, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"gateway-two-echo","arguments":{"text":"traced"}}}`,
		map[string]string{"Traceparent": "00-" + traceID + "-" + parentID + "-01"})
	if r := testsupport.ReadReply(t, res); r.Status != http.StatusOK || r.Final() == nil || r.Final().Error != nil {
		t.Fatalf("tools/call: %d %s", r.Status, r.Body)
	}

	req := rc.waitSpan(t, "mcp tools/call")
	child := rc.waitSpan(t, "backend gateway-two tools/call")
	if got := hex.EncodeToString(req.GetTraceId()); got != traceID {
		t.Errorf("request span trace %s, want the client's %s", got, traceID)
	}
	if got := hex.EncodeToString(req.GetParentSpanId()); got != parentID {
		t.Errorf("request span parent %s, want the client's span %s", got, parentID)
	}
	if req.GetKind() != tracepb.Span_SPAN_KIND_SERVER || child.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("span kinds %v, %v", req.GetKind(), child.GetKind())
	}
	if !bytes.Equal(child.GetParentSpanId(), req.GetSpanId()) || !bytes.Equal(child.GetTraceId(), req.GetTraceId()) {
		t.Errorf("backend span is not the request span's child")
	}
	for key, want := range map[string]string{"mcpgw.vhost": "demo", "mcpgw.published_name": "gateway-two-echo",
		"mcpgw.backend": "gateway-two", "mcpgw.outcome": "ok"} {
		if got := spanAttr(req, key); got != want {
			t.Errorf("request span %s = %q, want %q", key, got, want)
		}
	}
	rc.mu.Lock()
	svc := rc.service[hex.EncodeToString(req.GetSpanId())]
	rc.mu.Unlock()
	if svc != "mcpgw" {
		t.Errorf("service.name %q", svc)
	}
	sent := c.backends["gateway-two"].LastHeaders("tools/call").Get("Traceparent")
	if want := "00-" + traceID + "-" + hex.EncodeToString(child.GetSpanId()) + "-01"; sent != want {
		t.Errorf("backend received traceparent %q, want the exchange span's %q", sent, want)
	}
}
