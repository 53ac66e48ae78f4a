package tasksbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
)

// Task support of a tool (execution.taskSupport, as 2025-11-25 named it;
// SEP-2663 leaves the choice to the server, per call).
const (
	SupportForbidden = "forbidden" // never a task
	SupportOptional  = "optional"  // a task when the client declared the extension
	SupportRequired  = "required"  // only as a task: -32021 without the extension
)

// tool is one fixture tool. sync serves it without a task (forbidden and
// optional tools); run is its body as a task; before, when set, runs
// first on every call and may answer it (an MRTR round before the task
// exists) or hand run its input.
type tool struct {
	name        string
	description string
	support     string
	schema      map[string]any
	sync        func(ctx context.Context, in toolInput) (any, error)
	before      func(in toolInput) (answer any, carry map[string]json.RawMessage, err error)
	run         func(ctx context.Context, t *task, in toolInput) (json.RawMessage, error)
}

// toolInput is what a tools/call carries.
type toolInput struct {
	args      map[string]json.RawMessage
	responses map[string]json.RawMessage // inputResponses of an MRTR retry (nil: first round)
	carry     map[string]json.RawMessage // what before handed over
}

func (in toolInput) str(key string) string {
	var v string
	_ = json.Unmarshal(in.args[key], &v)
	return v
}

// Tools maps the fixture's tool names to their task support.
func Tools() map[string]string {
	out := map[string]string{}
	for _, t := range (&Server{}).tools() {
		out[t.name] = t.support
	}
	return out
}

func (s *Server) tools() []*tool {
	obj := func(props map[string]any, required ...string) map[string]any {
		m := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			m["required"] = required
		}
		return m
	}
	str := map[string]any{"type": "string"}
	return []*tool{
		{name: "greet", description: "Sync only: returns Hello, {name}!", support: SupportForbidden,
			schema: obj(map[string]any{"name": str}, "name"),
			sync: func(_ context.Context, in toolInput) (any, error) {
				return text(fmt.Sprintf("Hello, %s!", in.str("name")), false), nil
			}},
		{name: "slow_compute", description: "Sleeps `seconds`, then returns; cancelling the task (or closing a synchronous call) stops it.",
			support: SupportOptional,
			schema:  obj(map[string]any{"seconds": map[string]any{"type": "number", "minimum": 0}, "label": str}),
			sync: func(ctx context.Context, in toolInput) (any, error) {
				return slowCompute(ctx, in)
			},
			run: func(ctx context.Context, _ *task, in toolInput) (json.RawMessage, error) {
				r, err := slowCompute(ctx, in)
				return raw(r), err
			}},
		{name: "failing_job", description: "Always ends with a tool execution error (isError) after a second; only as a task.",
			support: SupportRequired, schema: obj(map[string]any{}),
			run: func(ctx context.Context, _ *task, _ toolInput) (json.RawMessage, error) {
				if err := sleep(ctx, s.opts.FailDelay); err != nil {
					return nil, err
				}
				return raw(text("failing_job failed on purpose", true)), nil
			}},
		{name: "protocol_error_job", description: "Always ends with a protocol (JSON-RPC) error after a second.",
			support: SupportOptional, schema: obj(map[string]any{}),
			sync: func(ctx context.Context, _ toolInput) (any, error) {
				return nil, errorf(wire.CodeInternalError, "protocol_error_job: simulated internal failure")
			},
			run: func(ctx context.Context, _ *task, _ toolInput) (json.RawMessage, error) {
				if err := sleep(ctx, s.opts.FailDelay); err != nil {
					return nil, err
				}
				return nil, errorf(wire.CodeInternalError, "protocol_error_job: simulated internal failure")
			}},
		{name: "confirm_delete", description: "Asks the client to confirm (elicitation/create), then reports whether it deleted `filename`.",
			support: SupportOptional, schema: obj(map[string]any{"filename": str}, "filename"),
			sync: func(_ context.Context, in toolInput) (any, error) {
				if in.responses == nil {
					return inputRequired(map[string]any{"confirm": confirmRequest(in.str("filename"))}), nil
				}
				return confirmResult(in.str("filename"), in.responses["confirm"]), nil
			},
			run: func(ctx context.Context, t *task, in toolInput) (json.RawMessage, error) {
				answers, err := s.ask(ctx, t, map[string]any{"confirm": confirmRequest(in.str("filename"))})
				if err != nil {
					return nil, err
				}
				return raw(confirmResult(in.str("filename"), answers["confirm"])), nil
			}},
		{name: "multi_input", description: "Asks two questions at once (a name and a confirmation), then reports both answers.",
			support: SupportOptional, schema: obj(map[string]any{}),
			sync: func(_ context.Context, in toolInput) (any, error) {
				if in.responses == nil {
					return inputRequired(map[string]any{"name": nameRequest(), "confirm": confirmRequest("multi_input")}), nil
				}
				return multiResult(in.responses), nil
			},
			run: func(ctx context.Context, t *task, _ toolInput) (json.RawMessage, error) {
				answers, err := s.ask(ctx, t, map[string]any{"name": nameRequest(), "confirm": confirmRequest("multi_input")})
				if err != nil {
					return nil, err
				}
				return raw(multiResult(answers)), nil
			}},
		{name: "test_tool_with_task", description: "Asks for user_name with an input_required result (MRTR), then runs as a task whose result greets that name.",
			support: SupportRequired, schema: obj(map[string]any{}),
			before: func(in toolInput) (any, map[string]json.RawMessage, error) {
				a, ok := in.responses["user_name"]
				if !ok {
					res := inputRequired(map[string]any{"user_name": nameRequest()})
					res["requestState"] = "awaiting-user-name"
					return res, nil, nil
				}
				return nil, map[string]json.RawMessage{"user_name": a}, nil
			},
			run: func(ctx context.Context, _ *task, in toolInput) (json.RawMessage, error) {
				if err := sleep(ctx, 100*time.Millisecond); err != nil {
					return nil, err
				}
				name := answerField(in.carry["user_name"], "name")
				return raw(text(fmt.Sprintf("Hello, %s! (gathered before the task, greeted by it)", name), false)), nil
			}},
	}
}

func (s *Server) listTools() map[string]any {
	var list []map[string]any
	for _, t := range s.tools() {
		list = append(list, map[string]any{
			"name": t.name, "description": t.description, "inputSchema": t.schema,
			"execution": map[string]any{"taskSupport": t.support},
		})
	}
	return complete(map[string]any{"tools": list, "ttlMs": 0, "cacheScope": "public"})
}

// callTool serves tools/call: synchronously, as an MRTR round, or by
// creating a task, as the tool's support and the client's declared
// extension decide.
func (s *Server) callTool(c *call) (any, error) {
	var name string
	if json.Unmarshal(c.params["name"], &name) != nil || name == "" {
		return nil, errorf(wire.CodeInvalidParams, "params.name must be a non-empty string")
	}
	var tl *tool
	for _, t := range s.tools() {
		if t.name == name {
			tl = t
		}
	}
	if tl == nil {
		return nil, errorf(wire.CodeInvalidParams, "unknown tool %q", truncate(name))
	}
	in := toolInput{args: map[string]json.RawMessage{}}
	if raw, ok := c.params["arguments"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &in.args) != nil {
			return nil, errorf(wire.CodeInvalidParams, "params.arguments must be an object")
		}
	}
	if raw, ok := c.params["inputResponses"]; ok {
		if json.Unmarshal(raw, &in.responses) != nil || in.responses == nil {
			return nil, errorf(wire.CodeInvalidParams, "params.inputResponses must be an object")
		}
	}
	if tl.support == SupportRequired && !c.tasks {
		return nil, missingTasks("tool " + tl.name)
	}
	if tl.before != nil {
		answer, carry, err := tl.before(in)
		if err != nil || answer != nil {
			return answer, err
		}
		in.carry = carry
	}
	if tl.support == SupportForbidden || !c.tasks {
		// The request's context: closing the response stream (how a
		// 2026-07-28 client cancels) stops the tool.
		res, err := tl.sync(c.r.Context(), in)
		if m, ok := res.(map[string]any); ok && m["resultType"] == nil {
			res = complete(m)
		}
		return res, err
	}
	// A legacy v1 "task" param is ignored: the tool decides.
	return s.createTask(tl.name, func(ctx context.Context, t *task) (json.RawMessage, error) {
		return tl.run(ctx, t, in)
	})
}

func slowCompute(ctx context.Context, in toolInput) (map[string]any, error) {
	var secs float64
	if raw, ok := in.args["seconds"]; ok && json.Unmarshal(raw, &secs) != nil {
		return nil, errorf(wire.CodeInvalidParams, "seconds must be a number")
	}
	if secs < 0 || secs > 3600 {
		return nil, errorf(wire.CodeInvalidParams, "seconds must be within [0, 3600]")
	}
	if err := sleep(ctx, time.Duration(secs*float64(time.Second))); err != nil {
		return nil, err
	}
	return text(fmt.Sprintf("slow_compute %q done after %gs", in.str("label"), secs), false), nil
}

// sleep waits d, or returns ctx's error.
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

func text(s string, isError bool) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}, "isError": isError}
}

func raw(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

func inputRequired(requests map[string]any) map[string]any {
	res := complete(map[string]any{"inputRequests": requests})
	res["resultType"] = "input_required"
	return res
}

func elicit(message string, props map[string]any, required ...string) map[string]any {
	return map[string]any{"method": "elicitation/create", "params": map[string]any{
		"mode": "form", "message": message,
		"requestedSchema": map[string]any{"type": "object", "properties": props, "required": required},
	}}
}

func confirmRequest(filename string) map[string]any {
	return elicit(fmt.Sprintf("Delete %s?", filename), map[string]any{"confirm": map[string]any{"type": "boolean"}}, "confirm")
}

func nameRequest() map[string]any {
	return elicit("What is your name?", map[string]any{"name": map[string]any{"type": "string"}}, "name")
}

// answerField reads content[field] of an elicitation answer that was
// accepted, or "" for any other.
func answerField(answer json.RawMessage, field string) string {
	var a struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if json.Unmarshal(answer, &a) != nil || a.Action != "accept" {
		return ""
	}
	switch v := a.Content[field].(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func confirmResult(filename string, answer json.RawMessage) map[string]any {
	if answerField(answer, "confirm") == "true" {
		return text(fmt.Sprintf("Deleted %s", filename), false)
	}
	return text(fmt.Sprintf("Kept %s: not confirmed", filename), false)
}

func multiResult(answers map[string]json.RawMessage) map[string]any {
	return text(fmt.Sprintf("name=%s confirm=%s", answerField(answers["name"], "name"), answerField(answers["confirm"], "confirm")), false)
}
