package handler_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// With Redis stopped (SIGSTOP: connections stay open, nothing answers),
// requests used to hang 10 to 35 s. Each now fails once store.timeout has
// passed, with HTTP 503 and -32603 "session store unavailable", and the
// gateway serves again by itself once Redis does (SIGCONT).
func TestStoreStall_RequestsFailWith503ThenRecover(t *testing.T) {
	rs, err := testsupport.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	// The client's bound is a failure bound, many times the store timeout:
	// a request that is answered at all is answered well within it.
	g := startGateway(t, gwOptions{redis: rs, storeTimeout: 300 * time.Millisecond, clientTimeout: 10 * time.Second})
	sid := g.initialize("alice", "demo")
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"gateway-one-echo","arguments":{"text":"x"}}}`

	if err := rs.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = rs.Resume()
		}
	})
	for _, c := range []struct {
		name string
		r    req
	}{
		{"ping", req{body: ping, session: sid}},
		{"tools/call", req{body: call, session: sid}},
		{"logging/setLevel", req{body: `{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"debug"}}`, session: sid}},
		{"notification", req{body: cancelBody("5"), session: sid}},
		{"client response", req{body: `{"jsonrpc":"2.0","id":"mcpgw-s-1","result":{}}`, session: sid}},
		{"initialize", req{body: initBody}},
		{"GET stream", req{method: http.MethodGet, session: sid}},
		{"DELETE", req{method: http.MethodDelete, session: sid}},
	} {
		r := g.do(c.r)
		if r.status != http.StatusServiceUnavailable || r.rpc.Error == nil || r.rpc.Error.Code != -32603 ||
			r.rpc.Error.Message != "session store unavailable" {
			t.Errorf("%s: got %d %s, want 503 with -32603 session store unavailable", c.name, r.status, r.body)
		}
	}
	// /readyz has a bound of its own (2s): it must answer within it.
	g.client = &http.Client{Timeout: 4 * time.Second}
	if r := g.do(req{method: http.MethodGet, path: "/readyz", sub: "-"}); r.status != http.StatusServiceUnavailable {
		t.Errorf("/readyz with Redis stopped: %d %s, want 503", r.status, r.body)
	}

	if err := rs.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	g.client = &http.Client{Timeout: 10 * time.Second}
	var last *resp
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		last = g.do(req{body: ping, session: sid})
		return last.status == http.StatusOK
	}) {
		t.Fatalf("ping after Redis came back: %d %s", last.status, last.body)
	}
	if r := g.do(req{body: call, session: sid}); r.status != http.StatusOK || r.rpc.Error != nil {
		t.Errorf("tools/call after Redis came back: %d %s", r.status, r.body)
	}
	g.initialize("alice", "demo")
	if r := g.do(req{method: http.MethodGet, path: "/readyz", sub: "-"}); r.status != http.StatusOK {
		t.Errorf("/readyz after Redis came back: %d %s", r.status, r.body)
	}
}
