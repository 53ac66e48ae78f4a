package main

import (
	"testing"

	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// A traced function exports each request's spans before its invocation
// ends: they are at the collector when the client has its answer, though
// the batch processor would wait a minute on its own (Lambda freezes the
// environment once the handler returns, and its goroutine with it).
func TestLambda_FlushesSpansBeforeTheInvocationEnds(t *testing.T) {
	for _, mode := range []string{"url", "apigw-v2"} {
		t.Run(mode, func(t *testing.T) {
			rc := testsupport.StartOTLPReceiver(t)
			t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "60000")
			f := modernFixture(t)
			f.configYAML += "tracing:\n  otlp_endpoint: " + rc.URL + "\n"
			fn := inProcessFunction(t, f, mode, nil)
			var ep testsupport.Endpoint = &inProcessHTTPAPI{a: httpadapter.NewV2(fn.handler)}
			if mode == "url" {
				ep = &inProcessURL{invoke: lambdaurl.Wrap(fn.handler)}
			}
			c := f.client(t, "judy")
			if got := c.ModernRequest(ep, "tools/call", map[string]any{"name": "gateway-two-echo", "arguments": map[string]any{"text": "hi"}}, nil).Text(); got != "hi" {
				t.Fatalf("echo: %q", got)
			}
			var names []string
			for _, s := range rc.Spans() {
				names = append(names, s.GetName())
			}
			want := map[string]bool{"mcp tools/call": false, "backend gateway-two tools/call": false}
			for _, n := range names {
				if _, ok := want[n]; ok {
					want[n] = true
				}
			}
			for n, seen := range want {
				if !seen {
					t.Errorf("span %q not exported by the end of the invocation (collector has %q)", n, names)
				}
			}
		})
	}
}
