package handler_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/store"
)

// sessionHash is the Redis key of session sid's hash, found by its hash tag
// (each test gateway has a key prefix of its own).
func sessionHash(t *testing.T, sid string) string {
	t.Helper()
	keys, err := redisSrv.Client().Keys(context.Background(), "*{"+sid+"}:session").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("session hash of %s: %q, %v", sid, keys, err)
	}
	return keys[0]
}

func cancelBody(id string) string {
	return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `}}`
}

// A client cancelling requests that never ran (or whose ids are huge) used
// to add a field to its session hash for good, and every request loads the
// whole hash. The marks are now bounded and short-lived, and a cancel that
// overtakes its request still stops it.
func TestCancelMarks_ThousandsOfCancelsKeepTheSessionSmall(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize("alice", "demo")
	key := sessionHash(t, sid)
	ctx := context.Background()
	fieldsBefore := redisSrv.Client().HLen(ctx, key).Val()

	for i := range 2000 {
		if r := g.do(req{body: cancelBody(fmt.Sprint(1000 + i)), session: sid}); r.status != http.StatusAccepted {
			t.Fatalf("cancel %d: %d %s", i, r.status, r.body)
		}
	}
	bigID := `"` + strings.Repeat("x", 10_000)
	for i := range 20 {
		if r := g.do(req{body: cancelBody(fmt.Sprintf(`%s%d"`, bigID, i)), session: sid}); r.status != http.StatusAccepted {
			t.Fatalf("cancel with a big id %d: %d %s", i, r.status, r.body)
		}
	}

	fields := redisSrv.Client().HLen(ctx, key).Val()
	bytes := redisSrv.Client().MemoryUsage(ctx, key).Val()
	t.Logf("session hash after 2020 cancels: %d fields, %d bytes", fields, bytes)
	if fields > fieldsBefore+store.MaxCancelMarks {
		t.Errorf("session hash has %d fields, want at most %d (%d before, plus %d cancel marks)",
			fields, fieldsBefore+store.MaxCancelMarks, fieldsBefore, store.MaxCancelMarks)
	}
	if limit := int64(64 << 10); bytes > limit {
		t.Errorf("session hash takes %d bytes, want at most %d", bytes, limit)
	}

	// The race the marks exist for: the cancel arrives before its request.
	if r := g.do(req{body: cancelBody("4242"), session: sid}); r.status != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	calls := g.one.Count("tools/call")
	call := `{"jsonrpc":"2.0","id":4242,"method":"tools/call","params":{"name":"gateway-one-echo","arguments":{"text":"x"}}}`
	r := g.do(req{body: call, session: sid})
	if r.rpc.Error == nil || r.rpc.Error.Code != -32800 {
		t.Fatalf("request after its cancel: %d %s, want the cancelled error -32800", r.status, r.body)
	}
	if n := g.one.Count("tools/call"); n != calls {
		t.Errorf("the cancelled request reached the backend (%d calls, %d before)", n, calls)
	}
}
