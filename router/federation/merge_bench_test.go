package federation

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkMergePages is the gateway's own work on one uncached
// tools/list page of a multi-backend vhost: renaming every backend's items
// and merging them into one page (issue 24's "CPU per listed item"),
// from the backends' results as the upstream client hands them over (the
// page decode the router's listOne does included); no network, no store
// (a cursor secret of the test's).
func BenchmarkMergePages(b *testing.B) {
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("backends=%d,tools=200", n), func(b *testing.B) {
			var keys []string
			for i := range n {
				keys = append(keys, fmt.Sprintf("b%d", i))
			}
			if n == 1 {
				keys = append(keys, "other") // multi-backend: names are prefixed
			}
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
			op := ops["tools/list"]
			src := newScriptedSource()
			l := &List{Op: op, VHost: "v", Principal: "alice", Keys: keys, Naming: multi, MaxItems: 1000}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				results := make([]*Page, n)
				for i := range results {
					res := &Page{Key: fmt.Sprintf("b%d", i), Queried: true}
					if !res.Decode(pages[i], op, 0) {
						b.Fatal("page does not decode")
					}
					results[i] = res
				}
				out, err := l.Merge(b.Context(), src, results, false, nil, nil)
				if err != nil || len(out) == 0 {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(200*n), "ns/item")
		})
	}
}
