package testsupport

//lint:file-ignore SA1019 sampling and roots are deprecated in 2026-07-28 but still served: this file exercises them on purpose

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"errors"
)

// The streaming tools exercise every message that is not a plain
// request/response, so gateway tests can follow each across instances:
//
//	progress {steps, stray, delayMs, message} sends `steps` progress
//	                  notifications (and one with a foreign token if stray),
//	                  then returns "done"
//	sample   {prompt} asks the client for a completion (sampling/createMessage)
//	confirm  {question} asks the client for input (elicitation/create)
//	roots    {}       asks the client for its roots (roots/list)
//	block    {tag}    signals Started, waits for cancellation, signals Cancelled
type progressArgs struct {
	Steps int `json:"steps"`
	// Stray also sends a progress notification with a token the client
	// never issued, which the gateway must drop.
	Stray bool `json:"stray,omitempty"`
	// DelayMs waits this long before each step, so a test can act
	// between steps.
	DelayMs int `json:"delayMs,omitempty"`
	// Message, when set, is each step's message instead of "step N" (a
	// test of what the gateway does to progress text).
	Message string `json:"message,omitempty"`
}
type sampleArgs struct {
	Prompt string `json:"prompt"`
}
type confirmArgs struct {
	Question string `json:"question"`
}
type blockArgs struct {
	Tag string `json:"tag"`
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func addStreamingTools(srv *mcp.Server, b *Backend) {
	mcp.AddTool(srv, &mcp.Tool{Name: "progress", Description: "Report progress steps, then finish."},
		func(ctx context.Context, req *mcp.CallToolRequest, args progressArgs) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			if args.Stray {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "not-yours", Progress: 1})
			}
			for i := 1; i <= args.Steps; i++ {
				if args.DelayMs > 0 {
					select {
					case <-ctx.Done():
						return nil, nil, ctx.Err()
					case <-time.After(time.Duration(args.DelayMs) * time.Millisecond):
					}
				}
				if token != nil {
					if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: token, Progress: float64(i), Total: float64(args.Steps), Message: cmp.Or(args.Message, fmt.Sprintf("step %d", i)),
					}); err != nil {
						return nil, nil, err
					}
				}
			}
			return textResult("done"), nil, nil
		})

	mcp.AddTool(srv, &mcp.Tool{Name: "sample", Description: "Ask the client's model."},
		func(ctx context.Context, req *mcp.CallToolRequest, args sampleArgs) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				MaxTokens: 50,
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: args.Prompt}}},
			})
			if err != nil {
				return textResult("sampling failed: " + err.Error()), nil, nil
			}
			text := ""
			if tc, ok := res.Content.(*mcp.TextContent); ok {
				text = tc.Text
			}
			return textResult("model said: " + text), nil, nil
		})

	mcp.AddTool(srv, &mcp.Tool{Name: "confirm", Description: "Ask the user a question."},
		func(ctx context.Context, req *mcp.CallToolRequest, args confirmArgs) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
				Message: args.Question,
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
					"ok": map[string]any{"type": "boolean"}}},
			})
			if err != nil {
				return textResult("elicitation failed: " + err.Error()), nil, nil
			}
			return textResult(fmt.Sprintf("user chose %s %v", res.Action, res.Content)), nil, nil
		})

	mcp.AddTool(srv, &mcp.Tool{Name: "roots", Description: "List the client's roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return textResult("roots failed: " + err.Error()), nil, nil
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return textResult("roots: " + strings.Join(uris, ",")), nil, nil
		})

	mcp.AddTool(srv, &mcp.Tool{Name: "block", Description: "Wait until cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, args blockArgs) (*mcp.CallToolResult, any, error) {
			b.Started <- args.Tag
			// A stateful session's handler runs on the session's context,
			// which Close (ending the session) waits on: the backend's own
			// end must end the call too, or Close hangs on it.
			select {
			case <-ctx.Done():
				b.Cancelled <- args.Tag
				return nil, nil, ctx.Err()
			case <-b.base.Done():
				return nil, nil, errors.New("backend closed")
			}
		})
}
