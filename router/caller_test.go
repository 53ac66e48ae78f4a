package router

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Each kind of caller decides its generation's questions by itself: these
// tests read what each decides, with no backend.

// recordingRuntime is a session runtime that answers every question and
// remembers what it was asked and told.
type recordingRuntime struct {
	asked   []string
	changed []store.SessionID
}

func (rt *recordingRuntime) AskClient(_ context.Context, _ *Call, req *jsonrpc.Request) *jsonrpc.Response {
	rt.asked = append(rt.asked, req.Method)
	return &jsonrpc.Response{Result: json.RawMessage(`{"action":"accept"}`)}
}

func (rt *recordingRuntime) ListenersChanged(_ context.Context, sid store.SessionID) {
	rt.changed = append(rt.changed, sid)
}

// callers are the three kinds, each in its ordinary form.
func callers(rt SessionRuntime) map[string]Caller {
	sess := &store.Session{ID: "s1", VHost: "v", Principal: "p", ProtocolVersion: "2025-11-25",
		ClientCapabilities: json.RawMessage(`{"elicitation":{}}`)}
	return map[string]Caller{
		"session": &SessionCaller{Session: sess, Runtime: rt},
		"modern":  &ModernClient{ClientCapabilities: json.RawMessage(`{"sampling":{}}`)},
		"task":    taskCaller{ask: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }},
	}
}

func TestCaller_Facts(t *testing.T) {
	cs := callers(&recordingRuntime{})
	for _, tc := range []struct {
		kind           string
		version        string
		session, round bool
		caps           string
	}{
		{kind: "session", version: "2025-11-25", session: true, caps: `{"elicitation":{}}`},
		{kind: "modern", version: wire.ModernProtocolVersion, round: true, caps: `{"sampling":{}}`},
		{kind: "task", version: ""},
	} {
		c := cs[tc.kind].facts()
		if got := c.protocolVersion; got != tc.version {
			t.Errorf("%s: protocol version %q, want %q", tc.kind, got, tc.version)
		}
		if got := c.session != nil; got != tc.session {
			t.Errorf("%s: has a session %v, want %v", tc.kind, got, tc.session)
		}
		if got := c.inRounds; got != tc.round {
			t.Errorf("%s: asks in rounds %v, want %v", tc.kind, got, tc.round)
		}
		if got := string(c.capabilities); got != tc.caps {
			t.Errorf("%s: capabilities %s, want %s", tc.kind, got, tc.caps)
		}
	}
}

// A 2026-07-28 backend's envelope is the 2026-07-28 client's own; a
// session's client and a task's stored result read none, except in a task
// the backend created, which keeps its fields.
func TestCaller_BackendResult(t *testing.T) {
	enveloped := json.RawMessage(`{"content":[],"resultType":"complete","ttlMs":5}`)
	cs := callers(nil)
	for _, tc := range []struct {
		kind                  string
		backendModern, isTask bool
		stripped              bool
	}{
		{"session", true, false, true},
		{"session", true, true, false},
		{"session", false, false, false},
		{"task", true, false, true},
		{"task", true, true, false},
		{"modern", true, false, false},
		{"modern", false, false, false},
	} {
		out := cs[tc.kind].backendResult(enveloped, tc.backendModern, tc.isTask)
		if stripped := !strings.Contains(string(out), "ttlMs"); stripped != tc.stripped {
			t.Errorf("%s (backend modern %v, task %v): %s", tc.kind, tc.backendModern, tc.isTask, out)
		}
	}
}

// What a backend sends during the call reaches a session's stream as it
// is; a 2026-07-28 request's stream carries only its log messages, and
// only when it named a log level.
func TestCaller_Streams(t *testing.T) {
	cs := callers(nil)
	quiet, chatty := &peer{}, &peer{logLevel: "info"}
	for _, tc := range []struct {
		kind, method string
		p            *peer
		want         bool
	}{
		{"session", "notifications/message", quiet, true},
		{"session", "notifications/tools/list_changed", quiet, true},
		{"task", "notifications/message", quiet, true},
		{"modern", "notifications/message", quiet, false},
		{"modern", "notifications/message", chatty, true},
		{"modern", "notifications/tools/list_changed", chatty, false},
		{"modern", "notifications/resources/updated", chatty, false},
	} {
		if got := cs[tc.kind].streams(tc.method, tc.p); got != tc.want {
			t.Errorf("%s %s (log level %q): %v, want %v", tc.kind, tc.method, tc.p.logLevel, got, tc.want)
		}
	}
}

// A session's client is asked through its runtime, a task's and a parked
// call's through their task's round (the backend's request as an
// InputRequest); an unparked 2026-07-28 call and a session without a
// runtime cannot be asked.
func TestCaller_Asker(t *testing.T) {
	rt := &recordingRuntime{}
	var round []json.RawMessage
	ask := func(_ context.Context, req json.RawMessage) (json.RawMessage, error) {
		round = append(round, req)
		return json.RawMessage(`{"answered":true}`), nil
	}
	modern := &ModernClient{}
	for _, tc := range []struct {
		name   string
		c      Caller
		canAsk bool
	}{
		{"session", &SessionCaller{Session: &store.Session{}, Runtime: rt}, true},
		{"session without a runtime", &SessionCaller{Session: &store.Session{}}, false},
		{"modern", modern, false},
		{"modern, parked", modern.parked(ask), true},
		{"task", taskCaller{ask: ask}, true},
	} {
		a := tc.c.asker()
		if (a != nil) != tc.canAsk {
			t.Fatalf("%s: can ask %v, want %v", tc.name, a != nil, tc.canAsk)
		}
		if a == nil {
			continue
		}
		if resp := a(t.Context(), &Call{}, &jsonrpc.Request{Method: "elicitation/create", Params: json.RawMessage(`{"m":1}`)}); resp.Error != nil {
			t.Fatalf("%s: %v", tc.name, resp.Error)
		}
	}
	if modern.ask != nil {
		t.Fatal("parked changed the request's own client")
	}
	if len(rt.asked) != 1 || rt.asked[0] != "elicitation/create" {
		t.Fatalf("the runtime was asked %v", rt.asked)
	}
	if len(round) != 2 || string(round[0]) != `{"method":"elicitation/create","params":{"m":1}}` {
		t.Fatalf("the task rounds got %s", round)
	}
}

// Only a session has listeners to rebuild.
func TestCaller_ListenersChanged(t *testing.T) {
	rt := &recordingRuntime{}
	for _, c := range callers(rt) {
		c.listenersChanged(t.Context(), "s1")
	}
	if len(rt.changed) != 1 || rt.changed[0] != "s1" {
		t.Fatalf("listeners changed %v", rt.changed)
	}
}

// Results pass as they are for a session and a task; a 2026-07-28
// client's are decorated with the envelope.
func TestCaller_Finish(t *testing.T) {
	r := New(nil, Options{CursorSecret: []byte("0123456789abcdef0123456789abcdef")})
	resp := resultResponse(mustRouterID(1), json.RawMessage(`{"content":[]}`))
	for kind, c := range callers(nil) {
		out := c.finish(t.Context(), r.base, resp, "tools/call", nil)
		decorated := strings.Contains(string(out.Result), `"resultType"`)
		if decorated != (kind == "modern") {
			t.Errorf("%s: finished as %s", kind, out.Result)
		}
	}
}

// A session's client and a task's run send no Mcp-Param-* headers: the
// gateway neither checks nor forwards any; a 2026-07-28 client's are
// forwarded to a 2026-07-28 backend, and a call_tool's are not its own.
func TestCaller_ClientParamHeaders(t *testing.T) {
	hdr := http.Header{"Mcp-Param-Region": {"eu"}}
	for kind, c := range callers(nil) {
		for _, unwrapped := range []bool{false, true} {
			call := &Call{Header: hdr, Request: &jsonrpc.Request{Method: "tools/call"}, d: &Decisions{unwrapped: unwrapped}}
			h, err := c.clientParamHeaders(t.Context(), nil, nil, call, &target{}, true)
			forwarded := h.Get("Mcp-Param-Region") == "eu"
			if err != nil || forwarded != (kind == "modern" && !unwrapped) {
				t.Errorf("%s (call_tool %v): forwarded %v, error %v", kind, unwrapped, forwarded, err)
			}
		}
	}
}

// The gateway makes no headers for a backend that reads none, nor for a
// 2026-07-28 client's own arguments as it sent them.
func TestCaller_GatewayParamHeadersLeftAlone(t *testing.T) {
	params := json.RawMessage(`{"name":"t","arguments":{}}`)
	for kind, c := range callers(nil) {
		call := &Call{Request: &jsonrpc.Request{Method: "tools/call"}, d: &Decisions{}}
		if tt := (&target{}); c.gatewayParamHeaders(t.Context(), nil, nil, call, tt, params, params, false) != tt || tt.headers != nil {
			t.Errorf("%s: headers made for a 2025-era backend", kind)
		}
	}
	call := &Call{Request: &jsonrpc.Request{Method: "tools/call"}, d: &Decisions{}}
	if tt := (&target{}); (&ModernClient{}).gatewayParamHeaders(t.Context(), nil, nil, call, tt, params, params, true) != tt || tt.headers != nil {
		t.Error("headers made over a 2026-07-28 client's own")
	}
}

func mustRouterID(n int64) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(float64(n))
	return id
}

// A backend that needs the caller's sign-in: a session's client, or a
// task's, is told with URLElicitationRequired when it can open a link, else
// with the link in an error; a 2026-07-28 client that cannot open one is
// told which capability it lacks, and one that can is asked in a round
// where the method has rounds.
func TestCaller_SignIn(t *testing.T) {
	r := New(nil, Options{CursorSecret: []byte("0123456789abcdef0123456789abcdef")})
	v := offlineVHost(t, "fx")
	sr := &credentials.SignInRequired{VHost: "v", Backend: "fx", URL: "https://idp.example/link", ID: "e1"}
	for _, tc := range []struct {
		kind, method string
		canURL       bool
		code         int64 // 0: a result
	}{
		{"session", "tools/call", true, codeURLElicitationRequired},
		{"session", "tools/call", false, CodeInternalError},
		{"task", "tools/call", true, codeURLElicitationRequired},
		{"modern", "tools/call", false, wire.CodeMissingClientCapability},
		{"modern", "completion/complete", true, CodeInternalError},
		{"modern", "tools/call", true, 0},
	} {
		c := &Call{VHost: "v", Principal: "alice", Request: &jsonrpc.Request{ID: mustRouterID(3), Method: tc.method}, d: &Decisions{}}
		resp := callers(nil)[tc.kind].signIn(t.Context(), r.calls, v, c, &target{backend: "fx", params: map[string]json.RawMessage{}}, sr, tc.canURL)
		var got int64
		if e, ok := resp.Error.(*jsonrpc.Error); ok {
			got = e.Code
		} else if resp.Error != nil {
			got = -1
		}
		if got != tc.code || tc.code == 0 && !strings.Contains(string(resp.Result), "input_required") {
			t.Errorf("%s %s (url %v): %d %s, want %d", tc.kind, tc.method, tc.canURL, got, resp.Result, tc.code)
		}
	}
}

// A page for a client that reads no envelope keeps a single backend's
// members less its envelope; a 2026-07-28 client's page is decorated, and
// private when the walk was.
func TestCaller_PageFields(t *testing.T) {
	r := New(nil, Options{CursorSecret: []byte("0123456789abcdef0123456789abcdef")})
	one, two := offlineVHost(t, "fx"), offlineVHost(t, "fx", "gx")
	hints := func() envelope.Hints { return envelope.Hints{TTLMs: 5} }
	for kind, c := range callers(nil) {
		for _, v := range []*vhost{one, two} {
			decorate, private := c.pageFields(r.base, v, "tools/list", hints, true)
			if !private {
				t.Errorf("%s: a private walk's page is not private", kind)
			}
			page := map[string]json.RawMessage{"tools": json.RawMessage(`[]`), "ttlMs": json.RawMessage(`9`)}
			if decorate != nil {
				decorate(page)
			}
			_, ttl := page["ttlMs"]
			_, kindOf := page["resultType"]
			switch {
			case kind == "modern" && (!kindOf || string(page["ttlMs"]) != "5"):
				t.Errorf("modern: the page is %v", page)
			case kind != "modern" && v == one && (ttl || kindOf):
				t.Errorf("%s, one backend: the page keeps the envelope %v", kind, page)
			case kind != "modern" && v == two && decorate != nil:
				t.Errorf("%s, two backends: the merged page is changed", kind)
			}
		}
	}
}
