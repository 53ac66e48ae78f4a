package router

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpgw/gateway/router/capability"
	"github.com/mcpgw/gateway/router/naming"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
)

// Micro-benchmarks of the request path's pure pieces. Run with
// `go test -bench . -benchmem ./router/`.

func BenchmarkSplitter_Split(b *testing.B) {
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = fmt.Sprintf("backend-%02d", i)
	}
	s := naming.NewSplitter(keys)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := s.Split("backend-15-some_tool_name"); !ok {
			b.Fatal("no split")
		}
	}
}

func BenchmarkCursor_EncodeDecode(b *testing.B) {
	key := []byte("0123456789abcdef0123456789abcdef")
	st := &sealed.Cursor{Op: "tools/list", VHost: "demo", Backends: map[string]sealed.BackendCursor{}}
	for i := range 8 {
		st.Backends[fmt.Sprintf("backend-%d", i)] = sealed.BackendCursor{Cursor: "eyJwYWdlIjozfQ"}
	}
	b.ReportAllocs()
	for b.Loop() {
		tok, err := sealed.SealCursor(key, st)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sealed.OpenCursor(key, tok); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCapabilityMerge(b *testing.B) {
	snaps := map[string]*store.BackendSnapshot{}
	for i := range 8 {
		snaps[fmt.Sprint(i)] = &store.BackendSnapshot{Capabilities: json.RawMessage(`{"tools":{"listChanged":true},"resources":{"subscribe":true},"prompts":{},"logging":{},"completions":{}}`)}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = capability.Merged(snaps, capability.SessionExtensions)
	}
}

func BenchmarkResolve_ToolsCall(b *testing.B) {
	v := newRoutingTable(map[string]*VirtualHost{"v": {Name: "v", Backends: map[string]*Backend{
		"gateway-one": {Config: upstream.Config{Key: "gateway-one", URL: "http://127.0.0.1:1/mcp"}, ToolNameAliases: map[string]string{"Public.Tool": "get_stats"}},
		"gateway-two": {Config: upstream.Config{Key: "gateway-two", URL: "http://127.0.0.1:2/mcp"}},
	}}}).vhosts["v"]
	r := &Router{}
	params := json.RawMessage(`{"name":"gateway-two-echo","arguments":{"text":"hello"},"_meta":{"progressToken":1}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.calls.resolve(v, "tools/call", params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAccess_Decide is the CEL part of a request under access rules:
// the caller falls through two rules to the third.
func BenchmarkAccess_Decide(b *testing.B) {
	p, err := policy.CompileAccess([]policy.AccessRule{
		{When: "'admins' in claims.groups", Allow: []string{"*"}},
		{When: "claims.email.endsWith('@ops.example.com')", Allow: []string{"ops-*"}},
		{When: "'dev' in claims.groups && claims.level >= 2", Allow: []string{"echo", "get_*"}, Deny: []string{"*delete*"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	claims := map[string]any{"sub": "bob", "email": "bob@example.com", "groups": []any{"dev", "staff"}, "level": 3.0}
	b.ReportAllocs()
	for b.Loop() {
		if !p.Decide("demo", claims).Visible("get_stats") {
			b.Fatal("not visible")
		}
	}
}

// BenchmarkAccess_FilterNames is the per-item part: one visibility check
// per name of a 100-item list.
func BenchmarkAccess_FilterNames(b *testing.B) {
	p, _ := policy.CompileAccess([]policy.AccessRule{{Allow: []string{"gateway-one-*", "Public.Tool", "gateway-two-test://*"}, Deny: []string{"gateway-one-delete_*"}}})
	a := p.Decide("demo", nil)
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("gateway-%d-tool_%03d", i%3, i)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, n := range names {
			a.Visible(n)
		}
	}
}
