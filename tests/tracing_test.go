package tests

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"os"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcpgw/gateway/internal/testsupport"
)

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
	rc := testsupport.StartOTLPReceiver(t)
	c := newCluster(t)
	cfg, err := os.ReadFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	c.writeConfig(string(cfg) + "tracing:\n  otlp_endpoint: " + rc.URL + "\n  sample_ratio: 1\n")
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

	req := rc.WaitSpan(t, "mcp tools/call")
	child := rc.WaitSpan(t, "backend gateway-two tools/call")
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
	if svc := rc.Service(req); svc != "mcpgw" {
		t.Errorf("service.name %q", svc)
	}
	sent := c.backends["gateway-two"].LastHeaders("tools/call").Get("Traceparent")
	if want := "00-" + traceID + "-" + hex.EncodeToString(child.GetSpanId()) + "-01"; sent != want {
		t.Errorf("backend received traceparent %q, want the exchange span's %q", sent, want)
	}
}
