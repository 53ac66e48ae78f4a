package testsupport

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// OTLPReceiver is a small OTLP/HTTP trace collector for tests: it
// decodes each export request (protobuf, as the gateway's exporter sends
// it) and keeps the spans with their service name.
type OTLPReceiver struct {
	// URL is the collector's base URL: a tracing.otlp_endpoint.
	URL string
	srv *httptest.Server

	mu      sync.Mutex
	spans   []*tracepb.Span
	service map[string]string // span id (hex) -> service.name
	changed chan struct{}     // closed and replaced on every export
}

// StartOTLPReceiver starts a collector that stops when the test ends.
func StartOTLPReceiver(t testing.TB) *OTLPReceiver {
	t.Helper()
	rc := &OTLPReceiver{service: map[string]string{}, changed: make(chan struct{})}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	rc.URL = rc.srv.URL
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *OTLPReceiver) serve(w http.ResponseWriter, r *http.Request) {
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

// WaitSpan waits until a span named name has arrived and returns it.
func (rc *OTLPReceiver) WaitSpan(t testing.TB, name string) *tracepb.Span {
	t.Helper()
	var found *tracepb.Span
	if !waitChanged(&rc.mu, 30*time.Second, func() (bool, <-chan struct{}) {
		for _, s := range rc.spans {
			if s.GetName() == name {
				found = s
				return true, nil
			}
		}
		return false, rc.changed
	}) {
		t.Fatalf("no span %q reached the collector", name)
	}
	return found
}

// Spans returns the spans received so far.
func (rc *OTLPReceiver) Spans() []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*tracepb.Span(nil), rc.spans...)
}

// Service is the service.name of the resource that sent span.
func (rc *OTLPReceiver) Service(span *tracepb.Span) string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.service[hex.EncodeToString(span.GetSpanId())]
}
