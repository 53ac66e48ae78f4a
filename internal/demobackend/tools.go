package demobackend

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CounterValue is the structured result of increment. It is exported so
// tests can decode structuredContent into the same shape.
type CounterValue struct {
	Value int `json:"value"`
}

// Stats is the structured result of get_stats.
type Stats struct {
	// Counter is the current counter value.
	Counter int `json:"counter"`
	// Calls counts every tools/call this server has handled, this one
	// included, so tests can see how many calls a gateway really forwarded.
	Calls int `json:"calls"`
	// Subscriptions lists the resource URIs with an active subscription,
	// sorted; it is the only observable trace of resources/subscribe.
	Subscriptions []string `json:"subscriptions"`
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to send back"`
}

// incrementSchema advertises "default": 1 so clients know what an omitted
// `by` means.
var incrementSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"by": map[string]any{
			"type":        "integer",
			"description": "how much to add to the counter",
			"default":     1,
		},
	},
	"additionalProperties": false,
}

var counterValueSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"value": map[string]any{"type": "integer"}},
	"required":   []string{"value"},
}

func addTools(srv *mcp.Server, st *state) {
	// increment uses the untyped Server.AddTool: with the typed mcp.AddTool,
	// SDK v1.8.0 panics (killing the process) when a schema default meets
	// "arguments": null, and a backend that a gateway bug can crash would
	// make gateway tests report the wrong failure.
	srv.AddTool(&mcp.Tool{
		Name:         "increment",
		Description:  "Add `by` (default 1) to this backend's counter and return the new value.",
		InputSchema:  incrementSchema,
		OutputSchema: counterValueSchema,
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		by, err := incrementBy(req.Params.Arguments)
		if err != nil {
			res := &mcp.CallToolResult{}
			res.SetError(err)
			return res, nil
		}
		st.mu.Lock()
		st.counter += by
		value := st.counter
		st.mu.Unlock()
		logCounter(ctx, req.Session, value)
		// Subscribers of the counter resource learn it changed.
		_ = srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: CounterURI})
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(value)}},
			StructuredContent: CounterValue{Value: value},
		}, nil
	})

	mcp.AddTool(srv, &mcp.Tool{
		Name:        "get_stats",
		Description: "Report this backend's counter, tool call count and resource subscriptions.",
	}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, Stats, error) {
		subs := st.subscribedURIs()
		st.mu.Lock()
		defer st.mu.Unlock()
		return nil, Stats{Counter: st.counter, Calls: st.calls, Subscriptions: subs}, nil
	})

	mcp.AddTool(srv, &mcp.Tool{
		Name:        "echo",
		Description: "Return the given text unchanged.",
	}, func(_ context.Context, _ *mcp.CallToolRequest, args echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: args.Text}},
		}, nil, nil
	})
}

// incrementBy reads the `by` argument; absent, null or empty arguments mean 1.
func incrementBy(raw json.RawMessage) (int, error) {
	var args struct {
		By *int `json:"by"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return 0, fmt.Errorf("invalid arguments: `by` must be an integer: %v", err)
		}
	}
	if args.By == nil {
		return 1, nil
	}
	return *args.By, nil
}

// logCounter emits an MCP log notification so that the gateway's relaying
// of server-to-client notifications within a response stream has something
// to carry. The SDK drops it unless the client asked for a log level, so it
// costs nothing otherwise.
func logCounter(ctx context.Context, ss *mcp.ServerSession, value int) {
	if ss == nil {
		return
	}
	//lint:ignore SA1019 logging is deprecated only from protocol 2026-07-28 on; the demo serves older clients too.
	_ = ss.Log(ctx, &mcp.LoggingMessageParams{
		Level:  "info",
		Logger: "demobackend",
		Data:   map[string]any{"msg": "counter incremented", "value": value},
	})
}
