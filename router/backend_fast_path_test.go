package router_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestFastPath_StatelessBackendSkipsTheHandshake(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "s", Opts: testsupport.BackendOptions{Stateless: true}}, backendSpec{Key: "other"})
	sid, _ := f.Initialize(nil)
	sess, _ := f.Store.LoadSession(t.Context(), sid, time.Hour)
	if !sess.Backends["s"].Stateless || sess.Backends["other"].Stateless {
		t.Fatalf("stateless flags: s=%v other=%v", sess.Backends["s"].Stateless, sess.Backends["other"].Stateless)
	}
	b := f.Backends["s"]
	b.ResetCounts()
	for range 3 {
		result(t, f.Call(sid, "tools/call", map[string]any{"name": "s-echo", "arguments": map[string]any{"text": "x"}}))
	}
	if n := b.Count("initialize"); n != 0 {
		t.Fatalf("stateless backend saw %d initialize requests, want 0", n)
	}
	if n := b.Count("tools/call"); n != 3 {
		t.Fatalf("tools/call count %d", n)
	}
}

// A snapshot that says "stateless" for a backend that wants a session (it
// was redeployed stateful): the request is refused, the gateway falls
// back to the full handshake, and the snapshot is corrected.
func TestFastPath_StatelessRefusedFallsBackAndLearns(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "a"}, backendSpec{Key: "b"})
	sid, _ := f.Initialize(nil)
	sess, _ := f.Store.LoadSession(t.Context(), sid, time.Hour)
	stale := *sess.Backends["a"]
	stale.Stateless = true
	if err := f.Store.PutBackends(t.Context(), sid, []*store.BackendSnapshot{&stale}, time.Hour); err != nil {
		t.Fatal(err)
	}
	res := result(t, f.Call(sid, "tools/call", map[string]any{"name": "a-echo", "arguments": map[string]any{"text": "still works"}}))
	if text(t, res) != "still works" {
		t.Fatalf("result %v", res)
	}
	sess, _ = f.Store.LoadSession(t.Context(), sid, time.Hour)
	if sess.Backends["a"].Stateless {
		t.Fatal("snapshot still claims the backend is stateless")
	}
}

func TestFastPath_ReuseKeepsOneBackendSessionAndRecovers(t *testing.T) {
	reuse := func(b *router.Backend) { b.Session = router.SessionReuse }
	f := newFixture(t, backendSpec{Key: "r", Adjust: reuse}, backendSpec{Key: "p"})
	sid, _ := f.Initialize(nil)
	b := f.Backends["r"]
	sess, _ := f.Store.LoadSession(t.Context(), sid, time.Hour)
	first := sess.Backends["r"].SessionID
	if first == "" || sess.Backends["p"].SessionID != "" {
		t.Fatalf("session ids: reuse %q, per-request %q", first, sess.Backends["p"].SessionID)
	}
	inits, deletes := b.Count("initialize"), b.Deletes()
	for range 3 {
		result(t, f.Call(sid, "tools/call", map[string]any{"name": "r-increment"}))
	}
	if b.Count("initialize") != inits || b.Deletes() != deletes {
		t.Fatalf("reuse made handshakes (%d) or DELETEs (%d)", b.Count("initialize")-inits, b.Deletes()-deletes)
	}
	// The backend forgets every session (a restart): the next call
	// re-initializes transparently and the new id is stored.
	for ss := range b.Server.Sessions() {
		ss.Close()
	}
	res := result(t, f.Call(sid, "tools/call", map[string]any{"name": "r-increment"}))
	if sc := res["structuredContent"].(map[string]any); sc["value"] != float64(4) {
		t.Fatalf("after the backend lost its session: %v", res)
	}
	sess, _ = f.Store.LoadSession(t.Context(), sid, time.Hour)
	if id := sess.Backends["r"].SessionID; id == "" || id == first {
		t.Fatalf("backend session id not renewed: %q (was %q)", id, first)
	}
	// Ending the gateway session ends the kept backend session.
	deletes = b.Deletes()
	f.Router.EndBackendSessions(t.Context(), sess)
	if b.Deletes() != deletes+1 {
		t.Fatalf("kept backend session not deleted (%d DELETEs)", b.Deletes()-deletes)
	}
}

// Results pass through byte for byte: structuredContent, _meta,
// annotations, resource links, images and fields the gateway does not know.
func TestPassthrough_ResultsAreByteForByte(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "only"})
	b := f.Backends["only"]
	b.Server.AddTool(&mcp.Tool{Name: "rich", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Meta: mcp.Meta{"vendor.example/trace": map[string]any{"id": "t-1", "nested": []any{1, "two", nil}}, "zz": true},
				Content: []mcp.Content{
					&mcp.TextContent{Text: "hé \u2028 <b>&", Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.5}},
					&mcp.ImageContent{Data: []byte{0, 1, 2, 255}, MIMEType: "image/png"},
					&mcp.ResourceLink{URI: "test://counter", Name: "counter", Title: "The counter"},
				},
				StructuredContent: map[string]any{"z": 1, "a": []any{"x", 2.5}, "unknownField": map[string]any{"deep": true}},
			}, nil
		})
	sid, _ := f.Initialize(nil)
	viaGateway := f.Call(sid, "tools/call", map[string]any{"name": "rich"})
	if viaGateway.Error != nil {
		t.Fatal(viaGateway.Error)
	}

	direct := upstream.New(upstream.Config{Key: "direct", URL: b.URL, Timeout: 5 * time.Second})
	defer direct.Close()
	conn, err := direct.Open(t.Context(), upstream.Handshake{ProtocolVersion: wire.LatestProtocolVersion, ClientInfo: json.RawMessage(`{"name":"t","version":"1"}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(false)
	resp, err := conn.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"rich"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(viaGateway.Result) != string(resp.Result) {
		t.Fatalf("result changed on the way through:\n gateway %s\n backend %s", viaGateway.Result, resp.Result)
	}
}
