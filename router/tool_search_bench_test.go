package router_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/policy"
)

// A search against a cached tools/list page of the same backends, in
// process (make bench measures it through HTTP: search-400, search-5000):
// 2 and 25 backends of 200 realistic tools each, list_cache on.
func BenchmarkToolSearch(b *testing.B) {
	for _, n := range []int{2, 25} {
		var specs []backendSpec
		for i := range n {
			specs = append(specs, backendSpec{Key: fmt.Sprintf("b%02d", i), Opts: testsupport.BackendOptions{RealisticTools: 200},
				Adjust: func(be *router.Backend) { be.ListCacheTTL = time.Minute }})
		}
		for _, search := range []bool{false, true} {
			benchmarkToolSearch(b, specs, search)
		}
	}
}

func benchmarkToolSearch(b *testing.B, specs []backendSpec, search bool) {
	name := fmt.Sprintf("backends=%d/cached-list-page", len(specs))
	if search {
		name = fmt.Sprintf("backends=%d/search", len(specs))
	}
	b.Run(name, func(b *testing.B) {
		f := newFixture(b, specs...)
		if search {
			names, _ := policy.CompileNames(nil)
			f.Config.ToolSearch = &router.ToolSearch{Always: names}
			f.Router.Reload(map[string]*router.VirtualHost{f.VHost: f.Config})
		}
		sid, _ := f.Initialize(nil)
		method, params := "tools/list", any(nil)
		if search {
			method, params = "tools/call", map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "search the open issues of a project"}}
		}
		result(b, f.Call(sid, method, params)) // warm: the cache, the index
		b.ReportAllocs()
		for b.Loop() {
			if resp := f.Call(sid, method, params); resp.Error != nil {
				b.Fatal(resp.Error)
			}
		}
	})
}
