package demobackend_test

import (
	"context"
	"fmt"
	"log"

	"github.com/mcpgw/gateway/internal/demobackend"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Start a demo backend on a free port and call its echo tool, which is the
// quickest way to check that a route to the backend works end to end.
func Example() {
	ctx := context.Background()
	url, stop, err := demobackend.Start(ctx, "127.0.0.1:0", "alpha", demobackend.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "v0.0.1"}, nil)
	cs, err := client.Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	fmt.Println(cs.InitializeResult().Instructions)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      "echo",
		Arguments: map[string]any{"text": "hello, gateway"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// Demo backend alpha: a counter and an echo tool.
	// hello, gateway
}
