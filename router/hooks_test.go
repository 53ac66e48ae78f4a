package router_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/hook"
)

// recordingHook rewrites or denies according to its fields and records
// what it saw, so tests can check order and arguments.
type recordingHook struct {
	name       string
	log        *[]string
	rewriteArg string // pre: replace arguments.text with this
	denyPre    bool
	rewriteOut string // post: replace the result with this JSON
	denyPost   bool
}

func (h *recordingHook) Pre(ctx context.Context, c *hook.Call) error {
	*h.log = append(*h.log, h.name+":pre:"+c.Method+":"+c.Backend+":"+c.Name)
	if h.denyPre {
		return &hook.Denial{Code: -32050, Message: "denied by " + h.name}
	}
	if h.rewriteArg != "" {
		var p map[string]any
		_ = json.Unmarshal(c.Params, &p)
		p["arguments"] = map[string]any{"text": h.rewriteArg}
		c.Params, _ = json.Marshal(p)
	}
	return nil
}

func (h *recordingHook) Post(ctx context.Context, c *hook.Call, result json.RawMessage) (json.RawMessage, error) {
	*h.log = append(*h.log, h.name+":post")
	if h.denyPost {
		return nil, &hook.Denial{Code: -32051, Message: "result withheld by " + h.name}
	}
	if h.rewriteOut != "" {
		return json.RawMessage(h.rewriteOut), nil
	}
	return result, nil
}

func TestHooks_PreRewritesArgumentsAndRunInOrder(t *testing.T) {
	var log []string
	f := newFixtureOpts(t, router.Options{Hooks: []hook.Hook{
		&recordingHook{name: "first", log: &log, rewriteArg: "rewritten"},
		&recordingHook{name: "second", log: &log},
	}}, backendSpec{Key: "a"}, backendSpec{Key: "b"})
	sid, _ := f.Initialize(nil)
	res := result(t, f.Call(sid, "tools/call", map[string]any{"name": "a-echo", "arguments": map[string]any{"text": "original"}}))
	if got := text(t, res); !strings.Contains(got, "rewritten") {
		t.Fatalf("backend did not see the rewritten argument: %q", got)
	}
	want := "first:pre:tools/call:a:echo second:pre:tools/call:a:echo first:post second:post"
	if got := strings.Join(log, " "); got != want {
		t.Fatalf("hook order %q, want %q", got, want)
	}
}

func TestHooks_PreDenyMakesNoBackendCall(t *testing.T) {
	var log []string
	f := newFixtureOpts(t, router.Options{Hooks: []hook.Hook{&recordingHook{name: "guard", log: &log, denyPre: true}}},
		backendSpec{Key: "a"}, backendSpec{Key: "b"})
	sid, _ := f.Initialize(nil)
	for _, tc := range []struct {
		method string
		params any
	}{
		{"tools/call", map[string]any{"name": "a-echo", "arguments": map[string]any{"text": "x"}}},
		{"prompts/get", map[string]any{"name": "a-greeting", "arguments": map[string]any{"name": "x"}}},
		{"resources/read", map[string]any{"uri": "a-test://counter"}},
	} {
		e := rpcErr(t, f.Call(sid, tc.method, tc.params))
		if e.Code != -32050 || e.Message != "denied by guard" {
			t.Fatalf("%s: got %d %q", tc.method, e.Code, e.Message)
		}
		if n := f.Backends["a"].Count(tc.method); n != 0 {
			t.Fatalf("%s reached the backend %d times after a deny", tc.method, n)
		}
	}
}

func TestHooks_PostRewritesAndDenies(t *testing.T) {
	var log []string
	f := newFixtureOpts(t, router.Options{Hooks: []hook.Hook{
		&recordingHook{name: "rw", log: &log, rewriteOut: `{"content":[{"type":"text","text":"redacted"}]}`},
	}}, backendSpec{Key: "a"}, backendSpec{Key: "b"})
	sid, _ := f.Initialize(nil)
	res := result(t, f.Call(sid, "tools/call", map[string]any{"name": "b-echo", "arguments": map[string]any{"text": "secret"}}))
	if text(t, res) != "redacted" {
		t.Fatalf("post hook rewrite lost: %v", res)
	}

	g := newFixtureOpts(t, router.Options{Hooks: []hook.Hook{&recordingHook{name: "deny", log: &log, denyPost: true}}},
		backendSpec{Key: "a"}, backendSpec{Key: "b"})
	sid, _ = g.Initialize(nil)
	e := rpcErr(t, g.Call(sid, "prompts/get", map[string]any{"name": "a-greeting", "arguments": map[string]any{"name": "x"}}))
	if e.Code != -32051 {
		t.Fatalf("post deny: got %d %q", e.Code, e.Message)
	}
	if g.Backends["a"].Count("prompts/get") != 1 {
		t.Fatal("post hook runs after the backend call")
	}
}

// Results are written downstream byte for byte, so a post-hook that makes
// something that is not JSON gets an internal error, not a broken answer.
func TestHooks_PostResultThatIsNotJSONIsRefused(t *testing.T) {
	var log []string
	f := newFixtureOpts(t, router.Options{Hooks: []hook.Hook{&recordingHook{name: "h", log: &log, rewriteOut: `{"content":[`}}},
		backendSpec{Key: "a"}, backendSpec{Key: "b"})
	sid, _ := f.Initialize(nil)
	e := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "a-echo", "arguments": map[string]any{"text": "x"}}))
	if e.Code != -32603 || !strings.Contains(e.Message, "not JSON") {
		t.Fatalf("got %d %q", e.Code, e.Message)
	}
}
