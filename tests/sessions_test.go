package tests

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestSessions_InitializeOnOneInstanceEverythingElseOnAnother(t *testing.T) {
	c := newCluster(t)
	a, b := c.start(), c.start()
	cl := c.client("alice")
	cl.Initialize(a, nil)

	tools := cl.Call(b, "tools/list", nil).Result()["tools"].([]any)
	if len(tools) != 6 {
		t.Fatalf("tools/list on the other instance: %d tools", len(tools))
	}
	res := cl.Call(b, "tools/call", map[string]any{"name": "gateway-two-increment", "arguments": map[string]any{"by": 3}}).Result()
	if !strings.Contains(toJSON(res), "3") {
		t.Fatalf("tools/call: %v", res)
	}
	cl.Call(b, "tools/call", map[string]any{"name": "Public.Tool"})
	cl.Call(b, "prompts/get", map[string]any{"name": "gateway-one-greeting", "arguments": map[string]string{"name": "x"}})
	cl.Call(b, "resources/read", map[string]any{"uri": "gateway-one-test://counter"})
	cl.Call(b, "resources/subscribe", map[string]any{"uri": "gateway-one-test://counter"})
	cl.Call(b, "completion/complete", map[string]any{
		"ref": map[string]any{"type": "ref/prompt", "name": "gateway-two-greeting"}, "argument": map[string]any{"name": "name", "value": ""}})
	cl.Call(b, "ping", nil)

	// Principal binding holds on every instance.
	other := c.client("mallory")
	other.SessionID = cl.SessionID
	if r := other.Request(b, "tools/list", nil); r.Status != http.StatusNotFound {
		t.Fatalf("another principal got %d, want 404", r.Status)
	}

	if st := cl.Delete(a); st != http.StatusOK {
		t.Fatalf("DELETE: %d", st)
	}
	if r := cl.Request(b, "tools/list", nil); r.Status != http.StatusNotFound {
		t.Fatalf("after DELETE on A, B answered %d, want 404", r.Status)
	}
}

func TestSessions_SurviveKilledAndRestartedInstances(t *testing.T) {
	c := newCluster(t)
	a, b := c.start(), c.start()
	cl := c.client("alice")
	cl.Initialize(a, nil)
	cl.Call(b, "tools/call", map[string]any{"name": "gateway-one-increment"})

	a.Kill() // the instance that created the session dies mid-session
	cl.Call(b, "tools/call", map[string]any{"name": "gateway-one-increment"})

	b.Kill() // every instance gone: nothing of the session was in them
	a2, b2 := c.start(), c.start()
	cl.Call(a2, "tools/list", nil)
	res := cl.Call(b2, "tools/call", map[string]any{"name": "gateway-one-increment"}).Result()
	if sc, _ := res["structuredContent"].(map[string]any); sc["value"] != float64(3) {
		t.Fatalf("third increment after restarts: %v, want value 3", res)
	}
}

// A real MCP client (the go-sdk's) behind a balancer with no affinity: its
// requests alternate between two instances, one of which is killed.
func TestSessions_GoSDKClientThroughRoundRobinBalancer(t *testing.T) {
	c := newCluster(t)
	a, b := c.start(), c.start()
	lb := testsupport.StartRoundRobin(t, a.URL, b.URL)

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	httpClient := &http.Client{Transport: bearer{token: c.token("alice")}}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpURL(lb.URL), HTTPClient: httpClient, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	for i := range 4 {
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("ListTools #%d: %v", i, err)
		}
		var ns []string
		for _, tl := range tools.Tools {
			ns = append(ns, tl.Name)
		}
		if !slices.Contains(ns, "Public.Tool") || !slices.Contains(ns, "gateway-two-echo") {
			t.Fatalf("tools %v", ns)
		}
		if i == 1 {
			a.Kill()
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gateway-one-echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError {
			t.Fatalf("CallTool #%d: %v %v", i, err, res)
		}
	}
	hits := lb.Hits()
	if len(hits) != 2 {
		t.Fatalf("the balancer used %d instances, want both: %v", len(hits), hits)
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
