package router_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
)

// BenchmarkHandle_ToolsCall measures one routed tools/call through the
// router (session load from Redis included) against a real go-sdk
// backend, per backend session mode. The backend's own cost is in the
// figure; compare modes with each other, not with a bare function call.
func BenchmarkHandle_ToolsCall(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts testsupport.BackendOptions
		sess router.SessionMode
	}{
		{"per-request", testsupport.BackendOptions{}, router.SessionPerRequest},
		{"stateless", testsupport.BackendOptions{Stateless: true}, router.SessionPerRequest},
		{"reuse", testsupport.BackendOptions{}, router.SessionReuse},
	} {
		b.Run(mode.name, func(b *testing.B) {
			f := newFixture(b, backendSpec{Key: "only", Opts: mode.opts, Adjust: func(be *router.Backend) { be.Session = mode.sess }})
			sid, _ := f.Initialize(nil)
			args := map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if resp := f.Call(sid, "tools/call", args); resp.Error != nil {
					b.Fatal(resp.Error)
				}
			}
		})
	}
}

// BenchmarkHandle_ToolsListCached walks tools/list (2 pages) over vhosts of
// 1 and 8 backends whose pages are all cached: what is left is the
// gateway's own work per walk (session load, cursor, merge, encoding).
func BenchmarkHandle_ToolsListCached(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("backends=%d", n), func(b *testing.B) {
			specs := make([]backendSpec, n)
			for i := range specs {
				specs[i] = backendSpec{Key: fmt.Sprintf("b%d", i+1), Opts: testsupport.BackendOptions{PageSize: 2},
					Adjust: func(be *router.Backend) { be.ListCacheTTL = time.Hour }}
			}
			f := newFixture(b, specs...)
			sid, _ := f.Initialize(nil)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				var params any
				for {
					resp := f.Call(sid, "tools/list", params)
					if resp.Error != nil {
						b.Fatal(resp.Error)
					}
					var page struct{ NextCursor string }
					_ = json.Unmarshal(resp.Result, &page)
					if page.NextCursor == "" {
						break
					}
					params = map[string]any{"cursor": page.NextCursor}
				}
			}
		})
	}
}
