package handler_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a token to every request of a go-sdk client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// modernClient connects a go-sdk client with default options: it probes
// server/discover and speaks 2026-07-28 when the server does.
func (g *gw) modernClient(sub string) *mcp.ClientSession {
	g.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "modern-test", Version: "1"}, nil)
	cs, err := c.Connect(g.t.Context(), &mcp.StreamableClientTransport{Endpoint: g.url + "/servers/demo/mcp",
		HTTPClient: &http.Client{Transport: bearer{g.token(sub)}}}, nil)
	if err != nil {
		g.t.Fatalf("connect: %v", err)
	}
	g.t.Cleanup(func() { cs.Close() })
	return cs
}

// A go-sdk v1.8 client with default options negotiates 2026-07-28 with the
// gateway (no initialize, no session) and uses every feature of a
// multi-backend vhost through it.
func TestModern_GoSDKClientNegotiatesTheSessionlessRevision(t *testing.T) {
	g := startGateway(t, gwOptions{stateless: true})
	cs := g.modernClient("alice")
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	if cs.ID() != "" {
		t.Fatalf("a session id %q was issued to a 2026-07-28 client", cs.ID())
	}
	ctx := t.Context()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "gateway-one-echo") || !slices.Contains(names, "gateway-two-echo") {
		t.Fatalf("tools %v: want both backends' tools, prefixed", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gateway-two-echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if txt := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(txt, "hi") {
		t.Fatalf("echo said %q", txt)
	}
	if _, err := cs.ListPrompts(ctx, nil); err != nil {
		t.Fatal(err)
	}
	rs, err := cs.ListResources(ctx, nil)
	if err != nil || len(rs.Resources) == 0 {
		t.Fatalf("resources: %v %v", err, rs)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: rs.Resources[0].URI})
	if err != nil || len(rr.Contents) == 0 || rr.Contents[0].URI != rs.Resources[0].URI {
		t.Fatalf("read %s: %v %+v", rs.Resources[0].URI, err, rr)
	}
}
