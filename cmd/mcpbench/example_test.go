package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Benchmark an MCP server from Go: 200 tools/call requests of its echo
// tool over 4 sessions. Compare(ctx, cfg, otherURL, rounds) runs the same
// workload against two URLs in alternating rounds.
func Example() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "example", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()

	res, err := Run(context.Background(), Config{
		URL:         hs.URL,
		Concurrency: 4,
		Requests:    200,
		Warmup:      100 * time.Millisecond,
		Workload:    WorkloadCall, // tools/call of Tool (default "echo") with Args (default {"text":"hi"})
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d ok, %d errors, p50 > 0: %t\n", res.OK, res.Errors, res.LatencyMs.P50 > 0)
	// res.WriteText(os.Stdout) prints the report mcpbench prints.
	// Output:
	// 200 ok, 0 errors, p50 > 0: true
}
