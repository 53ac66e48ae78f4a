package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// The function tells its run-task events from the HTTP events of every
// mode by the payload alone, and hands the others to the mode's adapter
// decoded as the runtime would.
func TestDispatch_RunTaskEventsAndHTTPEvents(t *testing.T) {
	var ran []runTaskEvent
	var served []string
	h := dispatch(func(_ context.Context, ev runTaskEvent) (any, error) {
		ran = append(ran, ev)
		return runTaskResult{Kind: runTaskKind, ID: ev.ID, Status: "ran"}, nil
	}, func(_ context.Context, req *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
		served = append(served, req.RawPath)
		return &events.LambdaFunctionURLStreamingResponse{StatusCode: 200}, nil
	})
	httpEvents := map[string]any{
		"function URL": events.LambdaFunctionURLRequest{Version: "2.0", RawPath: "/mcp", Body: `{"mcpgw":"run-task","owner":"o","id":"i"}`},
		"HTTP API":     events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: "/mcp", Headers: map[string]string{"mcpgw": "run-task"}},
		"REST API":     events.APIGatewayProxyRequest{Path: "/mcp", Body: `"mcpgw"`},
		"ALB":          events.ALBTargetGroupRequest{Path: "/mcp", QueryStringParameters: map[string]string{"mcpgw": "run-task"}},
	}
	for name, ev := range httpEvents {
		payload, _ := json.Marshal(ev)
		if _, err := h(t.Context(), payload); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(ran) != 0 {
			t.Fatalf("%s event taken for a run-task event", name)
		}
	}
	if len(served) != len(httpEvents) {
		t.Fatalf("served %d HTTP events of %d", len(served), len(httpEvents))
	}
	for _, bad := range []string{
		`{"mcpgw":"run-task","owner":"o"}`, // no id
		`{"mcpgw":"run-task","id":"i"}`,    // no owner
		`{"mcpgw":"something-else","owner":"o","id":"i"}`,
	} {
		if _, ok := parseRunTask([]byte(bad)); ok {
			t.Fatalf("%s taken for a run-task event", bad)
		}
	}
	out, err := h(t.Context(), json.RawMessage(`{"mcpgw":"run-task","owner":"own","id":"t1"}`))
	if err != nil || len(ran) != 1 || ran[0].Owner != "own" || ran[0].ID != "t1" {
		t.Fatalf("run-task event: %v %v %+v", out, err, ran)
	}
	if res, _ := out.(runTaskResult); res.Status != "ran" {
		t.Fatalf("run-task answer %v", out)
	}
}
