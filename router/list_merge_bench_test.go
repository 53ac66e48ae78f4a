package router

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/router/upstream"
)

// BenchmarkMergePages is the gateway's own work on one uncached
// tools/list page of a multi-backend vhost: renaming every backend's items
// and merging them into one page (issue 24's "CPU per listed item"),
// from the backends' results as the upstream client hands them over (the
// page decode listOne does included); no network, no store (a configured
// cursor secret).
func BenchmarkMergePages(b *testing.B) {
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("backends=%d,tools=200", n), func(b *testing.B) {
			backends := map[string]*Backend{}
			for i := range n {
				backends[fmt.Sprintf("b%d", i)] = &Backend{Config: upstream.Config{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", i+1)}}
			}
			if n == 1 {
				backends["other"] = &Backend{Config: upstream.Config{URL: "http://127.0.0.1:9/mcp"}} // multi-backend: names are prefixed
			}
			table := newRoutingTable(map[string]*VirtualHost{"v": {Name: "v", Backends: backends}})
			b.Cleanup(table.close)
			v := table.vhosts["v"]
			r := New(nil, Options{CursorSecret: []byte("0123456789abcdef0123456789abcdef")})
			pages := make([][]byte, n)
			for i := range pages {
				tools := make([]map[string]any, 200)
				for t := range tools {
					tools[t] = map[string]any{"name": fmt.Sprintf("tool_%03d", t), "title": "Tool",
						"description": "Does one thing well, with <care> & attention; a description of a realistic length.",
						"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
							"query": map[string]any{"type": "string", "description": "what to look for"},
							"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 100}}, "required": []string{"query"}},
						"annotations": map[string]any{"readOnlyHint": true}}
				}
				pages[i], _ = json.Marshal(map[string]any{"tools": tools})
			}
			op := listOps["tools/list"]
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				results := make([]*pageResult, n)
				for i := range results {
					res := &pageResult{key: fmt.Sprintf("b%d", i), queried: true}
					if !res.decode(pages[i], op, 0) {
						b.Fatal("page does not decode")
					}
					results[i] = res
				}
				out, err := r.fed.mergePages(b.Context(), v, op, "alice", v.access.Decide("v", nil), map[string]sealed.BackendCursor{}, results, false, nil, nil)
				if err != nil || len(out) == 0 {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(200*n), "ns/item")
		})
	}
}
