package router_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// instance is one gateway instance: a router and its own store handle.
type instance struct {
	Router *router.Router
	Store  store.Store
}

func startInstance(t *testing.T, url string, vhosts map[string]*router.VirtualHost) *instance {
	t.Helper()
	st, err := store.NewRedis(url, store.RedisOptions{KeyPrefix: "ck"})
	if err != nil {
		t.Fatal(err)
	}
	r := router.New(vhosts, router.Options{Store: st})
	t.Cleanup(func() { r.Close(); st.Close() })
	return &instance{Router: r, Store: st}
}

// open initializes a session on the instance.
func (in *instance) open(t *testing.T, vhost string) store.SessionID {
	t.Helper()
	req := &jsonrpc.Request{ID: mustID(1), Method: "initialize",
		Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)}
	sess, resp := in.Router.Initialize(context.Background(), vhost, "alice", nil, req)
	if resp.Error != nil {
		t.Fatalf("initialize: %v", resp.Error)
	}
	return sess.ID
}

// list asks for one page of tools (cursor "" = the first) and returns the
// response; nextCursor is the page's cursor, if any.
func (in *instance) list(t *testing.T, sid store.SessionID, cursor string) (resp *jsonrpc.Response, nextCursor string) {
	t.Helper()
	var params any
	if cursor != "" {
		params = map[string]any{"cursor": cursor}
	}
	resp = callOn(t, in.Router, in.Store, sid, nil, "tools/list", params)
	if resp.Error == nil {
		nextCursor, _ = cursorOf(result(t, resp))
	}
	return resp, nextCursor
}

// firstCursor returns the cursor of the first page of tools.
func (in *instance) firstCursor(t *testing.T, sid store.SessionID) string {
	t.Helper()
	resp, cur := in.list(t, sid, "")
	if resp.Error != nil || cur == "" {
		t.Fatalf("first page: %v, cursor %q", resp.Error, cur)
	}
	return cur
}

// accepts reports whether the instance continues the walk of cursor.
func (in *instance) accepts(t *testing.T, sid store.SessionID, cursor string) bool {
	t.Helper()
	resp, _ := in.list(t, sid, cursor)
	if resp.Error != nil {
		if e := rpcErr(t, resp); e.Code != router.CodeInvalidParams {
			t.Fatalf("cursor refused with %d %q, want -32602 if at all", e.Code, e.Message)
		}
	}
	return resp.Error == nil
}

// Without cursor_secret_env, the cursor key lives in Redis. When Redis
// loses its data and one instance restarts as well, the instances used to
// split: the restarted one stored a new key while the other kept signing
// with its cached one, and each refused the other's cursors for up to ten
// minutes. Whichever instance signs first after the loss, they now agree.
func TestCursorKey_InstancesAgreeAfterRedisLosesItsData(t *testing.T) {
	for _, c := range []struct {
		name  string
		first string // which instance signs first after the loss: a (the survivor), b, or both at once
		// beforeOnB: whether the restarted instance accepts a cursor from
		// before the loss (only if the survivor put its key back).
		beforeOnB *bool
	}{
		{"the surviving instance signs first", "a", ptr(true)},
		{"the restarted instance signs first", "b", ptr(false)},
		{"both sign at once", "both", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs, err := testsupport.StartRedis()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(rs.Stop)
			f := newFixtureOpts(t, router.Options{Store: store.NewMemory()}, // only for its backends and config
				backendSpec{Key: "short", Opts: testsupport.BackendOptions{PageSize: 50}},
				backendSpec{Key: "long", Opts: testsupport.BackendOptions{PageSize: 2, ExtraTools: 3}},
			)
			vhosts := map[string]*router.VirtualHost{f.VHost: f.Config}
			a := startInstance(t, rs.URL(), vhosts)
			b := startInstance(t, rs.URL(), vhosts)
			sidA, sidB := a.open(t, f.VHost), b.open(t, f.VHost)
			before := a.firstCursor(t, sidA)
			if !b.accepts(t, sidB, before) {
				t.Fatal("before the loss, an instance refuses the other's cursor")
			}

			if err := rs.FlushAll(); err != nil { // what a restart without persistence leaves
				t.Fatal(err)
			}
			b = startInstance(t, rs.URL(), vhosts) // b restarts (its old self is closed at cleanup)
			// The sessions went with the data: the clients start again.
			sidA, sidB = a.open(t, f.VHost), b.open(t, f.VHost)
			var curA, curB string
			switch c.first {
			case "a":
				curA = a.firstCursor(t, sidA)
				curB = b.firstCursor(t, sidB)
			case "b":
				curB = b.firstCursor(t, sidB)
				curA = a.firstCursor(t, sidA)
			default:
				curA, curB = firstCursorsAtOnce(t, a, sidA, b, sidB)
			}
			if !b.accepts(t, sidB, curA) {
				t.Error("the restarted instance refuses the surviving one's new cursor")
			}
			if !a.accepts(t, sidA, curB) {
				t.Error("the surviving instance refuses the restarted one's cursor")
			}
			// A cursor from before the loss still verifies where its key is
			// known: on the instance that signed it, and everywhere when that
			// instance put its key back.
			if !a.accepts(t, sidA, before) {
				t.Error("the surviving instance refuses its own cursor from before the loss")
			}
			if got := b.accepts(t, sidB, before); c.beforeOnB != nil && got != *c.beforeOnB {
				t.Errorf("restarted instance accepts a cursor from before the loss: %v, want %v", got, *c.beforeOnB)
			}
			forged := tamper(curA)
			if a.accepts(t, sidA, forged) || b.accepts(t, sidB, forged) {
				t.Error("a tampered cursor was accepted")
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// tamper changes the first character of a cursor (its payload).
func tamper(cursor string) string {
	first := byte('A')
	if cursor[0] == 'A' {
		first = 'B'
	}
	return string(first) + cursor[1:]
}

// firstCursorsAtOnce has both instances sign first pages concurrently,
// several each, and returns one cursor of each.
func firstCursorsAtOnce(t *testing.T, a *instance, sidA store.SessionID, b *instance, sidB store.SessionID) (curA, curB string) {
	t.Helper()
	sessA, errA := a.Store.LoadSession(t.Context(), sidA, time.Hour)
	sessB, errB := b.Store.LoadSession(t.Context(), sidB, time.Hour)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	cursors := make([]string, 8)
	var wg sync.WaitGroup
	for i := range cursors {
		in, sess := a, sessA
		if i%2 == 1 {
			in, sess = b, sessB
		}
		wg.Go(func() {
			resp := in.Router.Handle(context.Background(), &router.Call{Caller: &router.SessionCaller{Session: sess}, Header: http.Header{},
				Request: &jsonrpc.Request{ID: mustID(i), Method: "tools/list"}})
			var res struct {
				NextCursor string `json:"nextCursor"`
			}
			if resp.Error == nil && json.Unmarshal(resp.Result, &res) == nil {
				cursors[i] = res.NextCursor
			}
		})
	}
	wg.Wait()
	for i, cur := range cursors {
		if cur == "" {
			t.Fatalf("concurrent first page %d has no cursor", i)
		}
	}
	return cursors[0], cursors[1]
}
