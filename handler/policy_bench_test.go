package handler_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkServePOST_ToolsCall posts one routed tools/call through the
// whole handler (auth, session load for a 2025 session, routing, an
// in-process stateless backend that speaks both generations) with and
// without access rules, the Policy section's plugins and a per-principal
// rate limit, for a 2025 session and for a 2026-07-28 request. A 2025
// call's rate limit is counted while its session loads
// (streamable_post.go): the two store round trips overlap; a 2026-07-28
// call, which touches no store otherwise, pays the one round trip.
// "direct" posts the same call to the backend itself: plain minus direct
// is the gateway's own time per call.
func BenchmarkServePOST_ToolsCall(b *testing.B) {
	for _, gen := range []struct {
		name   string
		modern bool
	}{{"2025", false}, {"2026", true}} {
		for _, mode := range []struct {
			name                             string
			policy, rateLimit, direct, audit bool
			batch                            int64
		}{
			{"direct", false, false, true, false, 0},
			{"plain", false, false, false, false, 0},
			{"audit", false, false, false, true, 0}, // one audit line per call, to a file
			{"access+plugins", true, false, false, false, 0},
			{"access+plugins+rate-limit", true, true, false, false, 0},
			// the limit counted locally, 100 requests per store round trip
			{"access+plugins+rate-limit-batch", true, true, false, false, 100},
		} {
			b.Run(gen.name+"/"+mode.name, func(b *testing.B) {
				benchCall(b, gen.modern, mode.policy, mode.rateLimit, mode.direct, mode.audit, mode.batch)
			})
		}
	}
}

func benchCall(b *testing.B, modern, policy, rateLimit, direct, audit bool, batch int64) {
	g := startGateway(b, gwOptions{stateless: true, policy: policy, rateLimit: rateLimit, rateLimitBatch: batch, audit: audit})
	token := g.token("alice")
	name, url := "gateway-one-echo", g.url+"/servers/demo/mcp"
	if direct {
		name, url = "echo", g.one.URL
	}
	params := `"name":"` + name + `","arguments":{"text":"hi"}`
	hdr := map[string]string{"Authorization": "Bearer " + token}
	if modern {
		params += `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
		hdr["MCP-Protocol-Version"], hdr["Mcp-Method"], hdr["Mcp-Name"] = "2026-07-28", "tools/call", name
	} else if !direct {
		hdr["Mcp-Session-Id"] = g.initialize("alice", "demo")
	}
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + params + `}}`
	b.ReportAllocs()
	for b.Loop() {
		hr, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			hr.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(hr)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(out), `"hi"`) || strings.Contains(string(out), `"error"`) {
			b.Fatalf("%d %s", res.StatusCode, out)
		}
	}
}
