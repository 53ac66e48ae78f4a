package handler_test

import (
	"net/http"
	"testing"
)

// A 2025 session's call is counted while its session loads (the two store
// round trips overlap), but the session check still decides first: an
// unknown session gets 404 even from a caller over the limit, and the
// limit refuses the caller's real session with 429 and no backend call.
func TestRateLimit_SessionCheckDecidesBeforeTheLimit(t *testing.T) {
	g := startGateway(t, gwOptions{policy: true, rateLimit: true, rateLimitN: 1})
	sid := g.initialize("alice", "demo")
	const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gateway-one-echo","arguments":{"text":"hi"}}}`
	if r := g.do(req{body: call, session: sid}); r.status != http.StatusOK || r.rpc.Error != nil {
		t.Fatalf("first call: %d %s", r.status, r.body)
	}
	before := g.one.Count("tools/call")
	if r := g.do(req{body: call, session: "no-such-session-0123456789abcdef"}); r.status != http.StatusNotFound {
		t.Errorf("over the limit with an unknown session: %d %s, want 404", r.status, r.body)
	}
	r := g.do(req{body: call, session: sid})
	if r.status != http.StatusTooManyRequests || r.rpc.Error == nil || r.rpc.Error.Code != -32029 || r.header.Get("Retry-After") == "" {
		t.Errorf("over the limit: %d %s (Retry-After %q), want 429 -32029", r.status, r.body, r.header.Get("Retry-After"))
	}
	if n := g.one.Count("tools/call"); n != before {
		t.Errorf("the backend saw %d calls over the limit, want none", n-before)
	}
}
