package router_test

import (
	"testing"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/tests/testsupport"
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
			f := newFixture(b, backendSpec{key: "only", opts: mode.opts, adjust: func(be *router.Backend) { be.Session = mode.sess }})
			sid, _ := f.initialize(nil)
			args := map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if resp := f.call(sid, "tools/call", args); resp.Error != nil {
					b.Fatal(resp.Error)
				}
			}
		})
	}
}
