package taskstools_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/internal/testsupport/taskstools"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// asked records the elicitation requests a client answered.
type asked struct {
	mu       sync.Mutex
	messages []string
}

func (a *asked) handler(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	a.messages = append(a.messages, req.Params.Message)
	a.mu.Unlock()
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true, "name": "Ada"}}, nil
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content %v", res.Content)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// Both generations reach the same tools: a 2025 session on a stateful
// server (elicitation requests), a 2026-07-28 client on a stateless one
// (input_required, retried by the client).
func TestToolsOnBothGenerations(t *testing.T) {
	for name, c := range map[string]struct {
		stateless bool
		version   string
	}{
		"2025-11-25 session": {false, "2025-11-25"},
		"2026-07-28":         {true, ""},
	} {
		t.Run(name, func(t *testing.T) {
			url, tools, stop, err := taskstools.Start(t.Context(), "127.0.0.1:0", c.stateless, taskstools.Options{FailDelay: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			var a asked
			client := mcp.NewClient(&mcp.Implementation{Name: "taskstools-test", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: a.handler})
			cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true},
				&mcp.ClientSessionOptions{ProtocolVersion: c.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			call := func(tool string, args map[string]any) (*mcp.CallToolResult, error) {
				return cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
			}
			for tool, want := range map[string]struct {
				args map[string]any
				text string
			}{
				"greet":               {map[string]any{"name": "World"}, "Hello, World!"},
				"slow_compute":        {map[string]any{"seconds": 0, "label": "now"}, `slow_compute "now" done after 0s`},
				"confirm_delete":      {map[string]any{"filename": "a.txt"}, "Deleted a.txt"},
				"multi_input":         {nil, "name=Ada confirm=true"},
				"test_tool_with_task": {nil, "Hello, Ada! (gathered before the task, greeted by it)"},
			} {
				res, err := call(tool, want.args)
				if err != nil || res.IsError || textOf(t, res) != want.text {
					t.Errorf("%s: %v, %v; want %q", tool, res, err, want.text)
				}
			}
			if n := len(a.messages); n != 4 {
				t.Errorf("the client answered %d questions (%q), want 4", n, a.messages)
			}
			if res, err := call("failing_job", nil); err != nil || !res.IsError {
				t.Errorf("failing_job: %v, %v; want a tool error", res, err)
			}
			var werr *jsonrpc.Error
			if _, err := call("protocol_error_job", nil); !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInternalError {
				t.Errorf("protocol_error_job: %v, want a -32603 error", err)
			}
			// A cancelled call stops the tool: the context on a 2025
			// session (notifications/cancelled), the closed request on a
			// 2026-07-28 one.
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow_compute", Arguments: map[string]any{"seconds": 3600, "label": "long"}})
				done <- err
			}()
			if !awaitLabel(tools.Started, "long") {
				t.Fatal("the long call never started")
			}
			cancel()
			if !awaitLabel(tools.Cancelled, "long") {
				t.Fatal("the cancelled call kept running on the backend")
			}
			<-done
			if tools.Cancels() != 1 || tools.Calls() != 11 {
				t.Errorf("cancels %d, calls %d; want 1, 11", tools.Cancels(), tools.Calls())
			}
		})
	}
}

// GatewayTasksConfig is a tasks block the gateway takes, and it makes the
// scenarios' task tools tasks and leaves greet a plain call.
func TestGatewayTasksConfigParses(t *testing.T) {
	body := "auth: {mode: none}\nvirtual_hosts:\n  demo:\n    backends:\n      fx:\n        url: http://127.0.0.1:9/mcp\n"
	for _, l := range splitLines(taskstools.GatewayTasksConfig) {
		body += "        " + l + "\n"
	}
	cfg, err := config.Parse([]byte(body), "tasks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bt := cfg.BackendTasks["demo"]["fx"]
	for tool, want := range map[string]config.TaskMode{
		"greet": config.TaskNever, "slow_compute": config.TaskOptional, "failing_job": config.TaskRequired,
		"protocol_error_job": config.TaskOptional, "confirm_delete": config.TaskOptional,
		"multi_input": config.TaskOptional, "test_tool_with_task": config.TaskRequired,
	} {
		if got := bt.Mode(tool); got != want {
			t.Errorf("%s: %q, want %q", tool, got, want)
		}
	}
	if !bt.InputFirst("test_tool_with_task") {
		t.Error("test_tool_with_task's first round is not before its task")
	}
}

// awaitLabel waits (bounded) for label on ch, skipping others.
func awaitLabel(ch <-chan string, label string) bool {
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-ch:
			if got == label {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
