package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/mcpgw/gateway/internal/testsupport"
)

// On Lambda an invocation cannot outlive its answer, so a 2026-07-28
// call to a session backend that asks the client something cannot park
// (there is no instance to hold it until the retry): the backend's
// request gets -32601, as if the client lacked the capability, and the
// tool's own outcome is the client's complete answer, in one invocation
// (docs/guide/lambda.md).

// checkSessionBackendAskRefused calls gateway-one's "consult" tool, which
// asks for sampling once, as a client that declares sampling, through ep.
func checkSessionBackendAskRefused(t *testing.T, f *fixture, ep testsupport.Endpoint) {
	t.Helper()
	one := f.backends["gateway-one"]
	calls := one.Count("tools/call")
	r := f.client(t, "lee").ModernRequest(ep, "tools/call",
		map[string]any{"name": "gateway-one-consult", "arguments": map[string]any{"steps": 1}},
		map[string]any{"sampling": map[string]any{}})
	res := r.Result()
	if text := r.Text(); res["resultType"] != "complete" || !strings.HasPrefix(text, "step 1 failed (code -32601)") {
		t.Fatalf("the call answered %d %s, want complete with the backend's report of -32601", r.Status, r.Body)
	}
	if _, ok := res["requestState"]; ok {
		t.Fatalf("the answer carries a requestState: %s", r.Body)
	}
	if got := one.Count("tools/call") - calls; got != 1 {
		t.Fatalf("the backend got %d tools/call, want 1", got)
	}
}

func TestModern_SessionBackendAskingOnLambdaGetsMethodNotFoundInProcess(t *testing.T) {
	f := newFixtureWith(t, testsupport.BackendOptions{AskingTools: true})
	url := &inProcessURL{invoke: lambdaurl.Wrap(inProcessFunction(t, f, "url", nil).handler)}
	checkSessionBackendAskRefused(t, f, url)
}

func TestFunctionURL_SessionBackendAskingAModernClientGetsMethodNotFound(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, testsupport.BackendOptions{AskingTools: true})
	lam := &functionURL{rie: startRIE(t, f.lambdaEnv("url")...), domain: functionURLDomain}
	checkSessionBackendAskRefused(t, f, lam)
}
