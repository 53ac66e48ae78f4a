package handler_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgw/gateway/handler"
	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/internal/routertest"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
)

// BenchmarkServePOST_ToolsList walks tools/list (two pages) as a
// 2026-07-28 client through the whole handler over vhosts of 1 and 8
// backends whose pages are all in the list cache (make bench's
// list-fanout-modern-cached without the network): what is left is the
// gateway's own work per walk, which grows with the page (8 backends, 16
// tools and a cursor naming 8 positions on the first page).
//
// uncached is the same walk with every page asked of the backends, which
// run in this process: its cpu-ns/op holds their work too.
func BenchmarkServePOST_ToolsList(b *testing.B) {
	for _, cache := range []time.Duration{time.Hour, 0} {
		for _, n := range []int{1, 8} {
			name := fmt.Sprintf("cached/backends=%d", n)
			if cache == 0 {
				name = fmt.Sprintf("uncached/backends=%d", n)
			}
			b.Run(name, func(b *testing.B) { benchListWalk(b, n, cache) })
		}
	}
}

func benchListWalk(b *testing.B, n int, cache time.Duration) {
	url := startListVHost(b, n, cache)
	b.ReportAllocs()
	var pages, bytes int
	cpu0 := processCPU()
	for b.Loop() {
		cursor := ""
		for {
			params := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
			if cursor != "" {
				params = `"cursor":"` + cursor + `",` + params
			}
			out := postModern(b, url, "tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+params+`}}`)
			pages++
			bytes += len(out)
			var resp struct {
				Result struct {
					Tools      []json.RawMessage `json:"tools"`
					NextCursor string            `json:"nextCursor"`
				} `json:"result"`
			}
			if err := json.Unmarshal(out, &resp); err != nil || len(resp.Result.Tools) == 0 {
				b.Fatalf("%v: %s", err, out)
			}
			if cursor = resp.Result.NextCursor; cursor == "" {
				break
			}
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(bytes)/float64(pages), "B/page")
}

// processCPU is the CPU time this process has used (user and system), in
// nanoseconds: client and gateway share the process, and on a loaded
// machine the CPU a walk costs says more than its wall time.
func processCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// startListVHost serves vhost "fan" of n stateless backends paging by 2,
// each with list_cache cache, with no auth.
func startListVHost(b *testing.B, n int, cache time.Duration) string {
	st, err := store.NewRedis(redisSrv.URL(), store.RedisOptions{KeyPrefix: fmt.Sprintf("hb%d", time.Now().UnixNano())})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	fan := &router.VirtualHost{Name: "fan", Backends: map[string]*router.Backend{}}
	for i := range n {
		key := fmt.Sprintf("b%d", i+1)
		be := testsupport.StartBackend(b, testsupport.BackendOptions{Name: key, Stateless: true, PageSize: 2})
		fan.Backends[key] = &router.Backend{Config: upstream.Config{Key: key, URL: be.URL, Timeout: 5 * time.Second}, ListCacheTTL: cache}
	}
	in := routertest.StartInstance(b, st, map[string]*router.VirtualHost{"fan": fan}, routertest.Options{}, nil)
	v, err := auth.New(config.Auth{Mode: config.ModeNone})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(handler.New(handler.Options{Router: in.Router, Sessions: in.Sessions, Parks: in.Parks, Auth: v}))
	b.Cleanup(srv.Close)
	return srv.URL + "/servers/fan/mcp"
}

func postModern(b *testing.B, url, method, body string) []byte {
	hr, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json, text/event-stream")
	hr.Header.Set("MCP-Protocol-Version", "2026-07-28")
	hr.Header.Set("Mcp-Method", method)
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		b.Fatalf("%d %s", res.StatusCode, out)
	}
	return out
}
