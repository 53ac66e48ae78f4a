// Package stdioserver is the MCP server the gateway's stdio backend tests
// run as a process: the demo backend's tools, resources and prompts, plus
// tools that exercise what only a process can do (die, tell its pid,
// write to stderr) and what a call's stream carries (progress, log
// messages, elicitation). tests/cmd/stdio-everything runs it; the
// upstream package's tests run their own test binary as it.
package stdioserver

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mcpgw/gateway/internal/demobackend"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the server's name (serverInfo.name).
const Name = "stdio-everything"

type progressArgs struct {
	Steps   int `json:"steps"`
	DelayMs int `json:"delayMs,omitempty"`
}

type crashArgs struct {
	// Progress sends one progress notification first, so a test knows
	// the call reached the process before it dies.
	Progress bool `json:"progress,omitempty"`
	Code     int  `json:"code,omitempty"`
}

type waitArgs struct {
	// Gate is a file path: the tool writes Gate+".started.<pid>", then
	// returns its pid once Gate exists.
	Gate string `json:"gate"`
}

type stderrArgs struct {
	Lines int `json:"lines"`
	Bytes int `json:"bytes,omitempty"` // per line; default a short text
}

type logArgs struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

type confirmArgs struct {
	Question string `json:"question"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// New builds the server.
func New() *mcp.Server {
	srv := demobackend.NewServer(Name, demobackend.Options{})
	mcp.AddTool(srv, &mcp.Tool{Name: "pid", Description: "Return the process id."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprint(os.Getpid())), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "progress", Description: "Report progress steps, then finish."},
		func(ctx context.Context, req *mcp.CallToolRequest, args progressArgs) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
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
						ProgressToken: token, Progress: float64(i), Total: float64(args.Steps), Message: fmt.Sprintf("step %d", i),
					}); err != nil {
						return nil, nil, err
					}
				}
			}
			return text("done"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash", Description: "Exit the process in the middle of the call."},
		func(ctx context.Context, req *mcp.CallToolRequest, args crashArgs) (*mcp.CallToolResult, any, error) {
			if token := req.Params.GetProgressToken(); args.Progress && token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 1, Message: "about to crash"})
			}
			fmt.Fprintln(os.Stderr, "crash: exiting on request")
			code := args.Code
			if code == 0 {
				code = 3
			}
			os.Exit(code)
			return nil, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "garble", Description: "Write a line that is not JSON-RPC on stdout."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stdout, "this is not JSON")
			return text("garbled"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Mark the call started, then wait for a gate file; return the pid."},
		func(ctx context.Context, req *mcp.CallToolRequest, args waitArgs) (*mcp.CallToolResult, any, error) {
			if args.Gate == "" {
				return nil, nil, fmt.Errorf("gate is required")
			}
			if err := os.WriteFile(fmt.Sprintf("%s.started.%d", args.Gate, os.Getpid()), nil, 0o600); err != nil {
				return nil, nil, err
			}
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for {
				if _, err := os.Stat(args.Gate); err == nil {
					return text(fmt.Sprint(os.Getpid())), nil, nil
				}
				select {
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				case <-tick.C:
				}
			}
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "stderr", Description: "Write lines to stderr."},
		func(ctx context.Context, req *mcp.CallToolRequest, args stderrArgs) (*mcp.CallToolResult, any, error) {
			for i := range args.Lines {
				line := fmt.Sprintf("stderr line %d", i)
				if args.Bytes > 0 {
					line = strings.Repeat("x", args.Bytes)
				}
				fmt.Fprintln(os.Stderr, line)
			}
			return text("written"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "log", Description: "Send a log message."},
		func(ctx context.Context, req *mcp.CallToolRequest, args logArgs) (*mcp.CallToolResult, any, error) {
			//lint:ignore SA1019 logging is deprecated only from protocol 2026-07-28 on.
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(args.Level), Logger: Name, Data: args.Message})
			return text("logged"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "confirm", Description: "Ask the client a question (elicitation)."},
		func(ctx context.Context, req *mcp.CallToolRequest, args confirmArgs) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: args.Question,
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
			if err != nil {
				return text("elicitation failed: " + err.Error()), nil, nil
			}
			return text("answer: " + res.Action), nil, nil
		})
	return srv
}

// Run serves on stdin and stdout until the client closes stdin (or ctx
// ends).
func Run(ctx context.Context) error {
	return New().Run(ctx, &mcp.StdioTransport{})
}
