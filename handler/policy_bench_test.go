package handler_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkServePOST_ToolsCall posts one routed tools/call of a 2025-era
// session through the whole handler (auth, session load, routing, an
// in-process stateless backend) with and without access rules, the Policy section's
// plugins and a per-principal rate limit. The rate limit is counted while
// the session loads (streamable_post.go): the two store round trips
// overlap instead of adding up.
func BenchmarkServePOST_ToolsCall(b *testing.B) {
	for _, mode := range []struct {
		name                      string
		policy, rateLimit, direct bool
	}{
		// direct: the same call posted to the backend itself, so that
		// plain minus direct is the gateway's own time per call.
		{"direct", false, false, true},
		{"plain", false, false, false},
		{"access+plugins", true, false, false},
		{"access+plugins+rate-limit", true, true, false},
	} {
		b.Run(mode.name, func(b *testing.B) {
			g := startGateway(b, gwOptions{stateless: true, policy: mode.policy, rateLimit: mode.rateLimit})
			sid := g.initialize("alice", "demo")
			token := g.token("alice")
			url, body := g.url+"/servers/demo/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gateway-one-echo","arguments":{"text":"hi"}}}`
			if mode.direct {
				url, body = g.one.URL, strings.Replace(body, "gateway-one-echo", "echo", 1)
			}
			b.ReportAllocs()
			for b.Loop() {
				hr, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
				hr.Header.Set("Content-Type", "application/json")
				hr.Header.Set("Accept", "application/json, text/event-stream")
				hr.Header.Set("Authorization", "Bearer "+token)
				if !mode.direct {
					hr.Header.Set("Mcp-Session-Id", sid)
				}
				res, err := http.DefaultClient.Do(hr)
				if err != nil {
					b.Fatal(err)
				}
				out, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK || !strings.Contains(string(out), `"hi"`) {
					b.Fatalf("%d %s", res.StatusCode, out)
				}
			}
		})
	}
}
