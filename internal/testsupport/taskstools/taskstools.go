// Package taskstools is the other half of the Tasks tests (SEP-2663): the
// tools the conformance suite's tasks-* scenarios call, as plain go-sdk
// tools of a backend that knows nothing of tasks. The gateway runs them
// as tasks itself (gateway-run tasks, a backend's `tasks:` block); the
// SEP-2663 backend that creates its own tasks is
// internal/testsupport/tasksbackend.
//
// The tools, their behaviour as the scenarios need it, and the `tasks:`
// block that makes a gateway run them as the scenarios expect
// (GatewayTasksConfig):
//
//	greet              {name}            "Hello, {name}!" (never a task)
//	slow_compute       {seconds, label}  sleeps, then "slow_compute <label> done after <s>s";
//	                                     optional; a cancelled call stops (Cancelled gets the label)
//	failing_job        {}                a tool error (isError) after FailDelay; required
//	protocol_error_job {}                a JSON-RPC error -32603 after FailDelay; optional
//	confirm_delete     {filename}        asks "confirm" (elicitation), then "Deleted <f>" or
//	                                     "Kept <f>: not confirmed"; optional
//	multi_input        {}                asks "name" and "confirm" at once, then
//	                                     "name=<n> confirm=<c>"; optional
//	test_tool_with_task {}               asks "user_name", then greets the name after a
//	                                     moment; required, input_before_task
//
// The asking tools ask with input_required (MRTR, CallToolResult
// .InputRequests): a stateless go-sdk server returns that to a 2026-07-28
// caller, and a stateful one fulfils it for a 2025 session with real
// elicitation requests, sent concurrently (so multi_input's two questions
// are one round either way). A 2025 client of the gateway, or a
// gateway-run task, meets each as the gateway translates it.
//
// Note: the name greet is also one of internal/testsupport's modern tools
// (an asking greet); do not add both to one server.
package taskstools

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/internal/localserve"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options shape the tools.
type Options struct {
	// FailDelay is how long failing_job and protocol_error_job run
	// (default DefaultFailDelay, the suite's "~1s").
	FailDelay time.Duration
}

// DefaultFailDelay is Options.FailDelay when unset.
const DefaultFailDelay = time.Second

// GatewayTasksConfig is the backend's `tasks:` block (YAML, indented for
// a backend's body) under which a gateway runs these tools as the tasks-*
// scenarios expect.
const GatewayTasksConfig = `tasks:
  optional: [slow_compute, protocol_error_job, confirm_delete, multi_input]
  required: [failing_job, test_tool_with_task]
  input_before_task: [test_tool_with_task]
  ttl: 5m
`

// Tools records what the tools saw.
type Tools struct {
	opts Options
	// Cancelled receives the label of each slow_compute call whose
	// context ended before it was done (the backend call was stopped). It
	// is buffered; a full channel drops the label (Cancels still counts).
	Cancelled chan string
	// Started receives the label of each slow_compute call as it starts
	// sleeping (buffered; dropped when full).
	Started chan string
	cancels atomic.Int64
	calls   atomic.Int64
}

// Cancels counts the slow_compute calls stopped before they were done.
func (t *Tools) Cancels() int64 { return t.cancels.Load() }

// Calls counts every call of every tool (each MRTR round is one).
func (t *Tools) Calls() int64 { return t.calls.Load() }

type slowArgs struct {
	Seconds float64 `json:"seconds,omitempty"`
	Label   string  `json:"label,omitempty"`
}

type nameArgs struct {
	Name string `json:"name,omitempty"`
}

type fileArgs struct {
	Filename string `json:"filename,omitempty"`
}

// Add registers the tools on srv.
func Add(srv *mcp.Server, opts Options) *Tools {
	if opts.FailDelay <= 0 {
		opts.FailDelay = DefaultFailDelay
	}
	t := &Tools{opts: opts, Cancelled: make(chan string, 64), Started: make(chan string, 64)}
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Returns Hello, {name}!"},
		func(_ context.Context, _ *mcp.CallToolRequest, a nameArgs) (*mcp.CallToolResult, any, error) {
			t.calls.Add(1)
			return text(fmt.Sprintf("Hello, %s!", a.Name), false), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow_compute", Description: "Sleeps `seconds`, then returns; stops when cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a slowArgs) (*mcp.CallToolResult, any, error) {
			t.calls.Add(1)
			if a.Seconds < 0 || a.Seconds > 3600 {
				return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "seconds must be within [0, 3600]"}
			}
			select {
			case t.Started <- a.Label:
			default:
			}
			if err := sleep(ctx, time.Duration(a.Seconds*float64(time.Second))); err != nil {
				t.cancels.Add(1)
				select {
				case t.Cancelled <- a.Label:
				default:
				}
				return nil, nil, err
			}
			return text(fmt.Sprintf("slow_compute %q done after %gs", a.Label, a.Seconds), false), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "failing_job", Description: "Ends with a tool execution error (isError)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			t.calls.Add(1)
			if err := sleep(ctx, t.opts.FailDelay); err != nil {
				return nil, nil, err
			}
			return text("failing_job failed on purpose", true), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "protocol_error_job", Description: "Ends with a JSON-RPC error (-32603)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			t.calls.Add(1)
			if err := sleep(ctx, t.opts.FailDelay); err != nil {
				return nil, nil, err
			}
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "protocol_error_job: simulated internal failure"}
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "confirm_delete", Description: "Asks to confirm, then reports whether it deleted `filename`."},
		func(_ context.Context, req *mcp.CallToolRequest, a fileArgs) (*mcp.CallToolResult, any, error) {
			t.calls.Add(1)
			if req.Params.InputResponses == nil {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"confirm": confirmRequest(a.Filename)}}, nil, nil
			}
			if answer(req.Params.InputResponses, "confirm", "confirm") == "true" {
				return text("Deleted "+a.Filename, false), nil, nil
			}
			return text("Kept "+a.Filename+": not confirmed", false), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "multi_input", Description: "Asks a name and a confirmation at once."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			t.calls.Add(1)
			r := req.Params.InputResponses
			if r == nil {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"name": nameRequest(), "confirm": confirmRequest("multi_input")}}, nil, nil
			}
			return text(fmt.Sprintf("name=%s confirm=%s", answer(r, "name", "name"), answer(r, "confirm", "confirm")), false), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "test_tool_with_task", Description: "Asks user_name, then greets it after a moment."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			t.calls.Add(1)
			name := answer(req.Params.InputResponses, "user_name", "name")
			if name == "" {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"user_name": nameRequest()}}, nil, nil
			}
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("Hello, %s! (gathered before the task, greeted by it)", name), false), nil, nil
		})
	return t
}

// Start serves a go-sdk server with the tools on addr, stateless (both
// protocol generations; a closed 2026-07-28 request cancels its tool) or
// stateful (2025 sessions, which can be sent elicitation requests), and
// returns its URL. stop waits for the server to end.
func Start(ctx context.Context, addr string, stateless bool, opts Options) (url string, tools *Tools, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, nil, err
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "mcpgw-tasks-tools", Version: "1.0.0"}, nil)
	tools = Add(srv, opts)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:                    stateless,
		PropagateRequestCancellation: true,
	})
	url, stop = localserve.Serve(ctx, ln, h, localserve.Options{Path: "/mcp"})
	return url, tools, stop, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func text(s string, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func elicit(message, field, typ string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: message, RequestedSchema: map[string]any{"type": "object",
		"properties": map[string]any{field: map[string]any{"type": typ}}, "required": []string{field}}}
}

func confirmRequest(filename string) *mcp.ElicitParams {
	return elicit(fmt.Sprintf("Delete %s?", filename), "confirm", "boolean")
}

func nameRequest() *mcp.ElicitParams { return elicit("What is your name?", "name", "string") }

// answer is content[field] of an accepted elicitation answer under key, as
// text, or "".
func answer(responses mcp.InputResponseMap, key, field string) string {
	res, ok := responses[key].(*mcp.ElicitResult)
	if !ok || res == nil || res.Action != "accept" || res.Content[field] == nil {
		return ""
	}
	return fmt.Sprint(res.Content[field])
}
