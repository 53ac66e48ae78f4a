package modernonly_test

//lint:file-ignore SA1019 sampling and roots are deprecated in 2026-07-28 but still served: this file exercises them on purpose

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport/modernonly"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

const testTimeout = 20 * time.Second

// serve starts a server on an httptest server; both end with the test.
func serve(t *testing.T) (*modernonly.Server, string) {
	t.Helper()
	s := modernonly.New(modernonly.Options{})
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		// Open listen streams end with their requests' contexts.
		hs.CloseClientConnections()
		hs.Close()
	})
	return s, hs.URL + modernonly.Path
}

func connect(t *testing.T, url string, opts *mcp.ClientOptions, sessOpts *mcp.ClientSessionOptions) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "modernonly-test", Version: "1"}, opts)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, sessOpts)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func mustConnect(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := connect(t, url, opts, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != modernonly.ProtocolVersion {
		t.Fatalf("negotiated %q, want %q", v, modernonly.ProtocolVersion)
	}
	return cs
}

// post sends one raw HTTP request and returns the status, the headers and
// the body (the first SSE data line when the answer is a stream).
func post(t *testing.T, method, url string, header map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data, err := nextEvent(bufio.NewReader(resp.Body))
		if err != nil {
			t.Fatalf("reading the SSE answer: %v", err)
		}
		return resp.StatusCode, resp.Header, data
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// nextEvent reads one SSE event and returns its data.
func nextEvent(r *bufio.Reader) (string, error) {
	var data []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" && len(data) > 0:
			return strings.Join(data, "\n"), nil
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

type rpcError struct {
	ID    json.RawMessage `json:"id"`
	Error struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Supported []string `json:"supported"`
			Requested string   `json:"requested"`
		} `json:"data"`
	} `json:"error"`
}

func modernMeta(extra string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}` + extra + `}`
}

func modernHeaders(method string) map[string]string {
	return map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
}

// The session protocol never reaches go-sdk: initialize and every request
// that is not a 2026-07-28 one get 400 and -32022 naming 2026-07-28 alone;
// GET and DELETE get 405.
func TestRefusesTheSessionProtocol(t *testing.T) {
	_, url := serve(t)
	for _, tc := range []struct {
		name          string
		header        map[string]string
		body          string
		id, requested string
	}{
		{name: "initialize", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
			id: "1", requested: "2025-11-25"},
		{name: "initialize asking for 2026-07-28", body: `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
			id: `"i"`, requested: "2026-07-28"},
		{name: "legacy call with a legacy header", header: map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": "s1"},
			body: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, id: "2", requested: "2025-11-25"},
		{name: "legacy call without a header", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_simple_text"}}`,
			id: "3", requested: "2025-03-26"},
		{name: "ping", header: map[string]string{"MCP-Protocol-Version": "2025-06-18"}, body: `{"jsonrpc":"2.0","id":4,"method":"ping"}`,
			id: "4", requested: "2025-06-18"},
		{name: "legacy version in _meta", body: `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			id: "5", requested: "2025-03-26"},
		{name: "notification", header: map[string]string{"MCP-Protocol-Version": "2025-11-25"}, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			id: "null", requested: "2025-11-25"},
		{name: "response to a server request", body: `{"jsonrpc":"2.0","id":7,"result":{}}`, id: "7", requested: "2025-03-26"},
		{name: "batch", body: `[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, id: "null", requested: "2025-03-26"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := post(t, http.MethodPost, url, tc.header, tc.body)
			if status != http.StatusBadRequest || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				t.Fatalf("got %d %s %s, want 400 application/json", status, h.Get("Content-Type"), body)
			}
			var e rpcError
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			if e.Error.Code != mcp.CodeUnsupportedProtocolVersion || string(e.ID) != tc.id ||
				!slices.Equal(e.Error.Data.Supported, []string{"2026-07-28"}) || e.Error.Data.Requested != tc.requested {
				t.Errorf("got %s, want id %s, -32022, supported [2026-07-28], requested %q", body, tc.id, tc.requested)
			}
		})
	}

	t.Run("not JSON", func(t *testing.T) {
		status, _, body := post(t, http.MethodPost, url, nil, `{"jsonrpc":`)
		var e rpcError
		if status != http.StatusBadRequest || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != -32700 {
			t.Errorf("got %d %s, want 400 and -32700", status, body)
		}
	})
	t.Run("modern _meta with a legacy header", func(t *testing.T) {
		status, _, body := post(t, http.MethodPost, url, map[string]string{"MCP-Protocol-Version": "2025-11-25"},
			`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{`+modernMeta("")+`}}`)
		var e rpcError
		if status != http.StatusBadRequest || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != mcp.CodeHeaderMismatch || string(e.ID) != "9" {
			t.Errorf("got %d %s, want 400 and -32020 with id 9", status, body)
		}
	})
	// A very long version is quoted input: -32022 echoes it clipped.
	t.Run("long requested version", func(t *testing.T) {
		_, _, body := post(t, http.MethodPost, url, map[string]string{"MCP-Protocol-Version": "2025-" + strings.Repeat("9", 500)},
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		var e rpcError
		if json.Unmarshal([]byte(body), &e) != nil || len(e.Error.Data.Requested) > 100 || !strings.HasPrefix(e.Error.Data.Requested, "2025-999") {
			t.Errorf("requested %q: want at most 100 bytes of the header", e.Error.Data.Requested)
		}
	})

	for _, method := range []string{http.MethodGet, http.MethodDelete, http.MethodPut} {
		t.Run(method, func(t *testing.T) {
			status, h, body := post(t, method, url, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Session-Id": "s1"}, "")
			if status != http.StatusMethodNotAllowed || h.Get("Allow") != "POST" {
				t.Errorf("got %d, Allow %q (%s), want 405, Allow POST", status, h.Get("Allow"), body)
			}
		})
	}
}

// A go-sdk client that speaks the session protocol gets nowhere: its
// initialize is refused.
func TestLegacyClientCannotConnect(t *testing.T) {
	_, url := serve(t)
	_, err := connect(t, url, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		t.Fatal("a 2025-11-25 client connected to a modern-only server")
	}
	if !strings.Contains(err.Error(), "2026-07-28") {
		t.Errorf("connect error %q does not name the supported version", err)
	}
}

// What the front lets through is go-sdk's 2026-07-28 handler, with its own
// answers to malformed modern requests (which the 2026-07-28 suite checks).
func TestModernErrorsAreGoSDKs(t *testing.T) {
	_, url := serve(t)
	for _, tc := range []struct {
		name   string
		header map[string]string
		body   string
		status int
		code   int64
	}{
		{"missing _meta", modernHeaders("tools/list"), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, 400, -32602},
		{"initialize with modern _meta", modernHeaders("initialize"),
			`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{` + modernMeta("") + `}}`, 404, -32601},
		{"unsupported modern version", map[string]string{"MCP-Protocol-Version": "v999.0.0", "Mcp-Method": "server/discover"},
			`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}}`, 400, -32022},
		{"modern _meta without a header", nil, `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + modernMeta("") + `}}`, 400, -32020},
		{"resources/subscribe", modernHeaders("resources/subscribe"),
			`{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"test://watched-resource",` + modernMeta("") + `}}`, 404, -32601},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := post(t, http.MethodPost, url, tc.header, tc.body)
			var e rpcError
			if status != tc.status || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != tc.code {
				t.Errorf("got %d %s, want %d and %d", status, body, tc.status, tc.code)
			}
		})
	}
	t.Run("-32022 from go-sdk names 2026-07-28 alone", func(t *testing.T) {
		_, _, body := post(t, http.MethodPost, url, map[string]string{"MCP-Protocol-Version": "v999.0.0", "Mcp-Method": "server/discover"},
			`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}}`)
		var e rpcError
		if json.Unmarshal([]byte(body), &e) != nil || !slices.Equal(e.Error.Data.Supported, []string{"2026-07-28"}) {
			t.Errorf("got %s, want supported [2026-07-28]", body)
		}
	})
}

// A default go-sdk client negotiates 2026-07-28 and finds the fixture.
func TestModernClientSeesTheFixture(t *testing.T) {
	_, url := serve(t)
	cs := mustConnect(t, url, nil)
	ctx := t.Context()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s: no description or input schema", tool.Name)
		}
	}
	for _, want := range []string{
		"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource", "test_multiple_content_types",
		"test_tool_with_logging", "test_tool_with_progress", "test_error_handling", "test_sampling", "test_elicitation",
		"test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums", "json_schema_2020_12_tool", "test_reconnection",
		"test_x_mcp_header", "test_missing_capability", "test_streaming_elicitation", "test_logging_tool",
		"test_trigger_tool_change", "test_trigger_prompt_change",
		"test_input_required_result_elicitation", "test_input_required_result_sampling", "test_input_required_result_list_roots",
		"test_input_required_result_request_state", "test_input_required_result_multiple_inputs", "test_input_required_result_multi_round",
		"test_input_required_result_tampered_state", "test_input_required_result_capabilities",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list has no %s", want)
		}
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
	if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "This is a simple text response for testing." {
		t.Errorf("test_simple_text: %v, %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_error_handling"})
	if err != nil || !res.IsError {
		t.Errorf("test_error_handling: %v, %+v: want a tool error", err, res)
	}

	for _, uri := range []string{"test://static-text", "test://static-binary", "test://template/123/data", modernonly.WatchedURI} {
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(r.Contents) != 1 || r.Contents[0].URI != uri {
			t.Errorf("read %s: %v, %+v", uri, err, r)
		}
	}
	if r, _ := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/123/data"}); r != nil && !strings.Contains(r.Contents[0].Text, `"123"`) {
		t.Errorf("template read: %q does not carry the id", r.Contents[0].Text)
	}
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(templates.ResourceTemplates) != 1 {
		t.Errorf("templates: %v, %+v", err, templates)
	}

	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "testValue1", "arg2": "testValue2"}})
	if err != nil || !strings.Contains(p.Messages[0].Content.(*mcp.TextContent).Text, "testValue2") {
		t.Errorf("prompt with arguments: %v, %+v", err, p)
	}
	c, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"},
		Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "t"}})
	if err != nil || c.Completion.Values == nil {
		t.Errorf("complete: %v, %+v", err, c)
	}
}

// asked is a first call's input_required result, read by a client that
// does not answer it on its own.
func askedFor(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams, key string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatalf("%s: %v", params.Name, err)
	}
	if !res.NeedsInput() || res.InputRequests[key] == nil || len(res.Content) != 0 {
		t.Fatalf("%s: got %+v, want input_required with inputRequests[%q]", params.Name, res, key)
	}
	return res
}

func retry(params *mcp.CallToolParams, asked *mcp.CallToolResult, responses mcp.InputResponseMap) *mcp.CallToolParams {
	p := *params
	p.InputResponses, p.RequestState = responses, asked.RequestState
	return &p
}

func codeOf(err error) int64 {
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func noMRTR(caps *mcp.ClientCapabilities) *mcp.ClientOptions {
	return &mcp.ClientOptions{Capabilities: caps, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}
}

// test_sampling and the elicitation tools of the 2025-11-25 scenarios ask
// with input_required and complete when called again with the answer.
func TestAskingToolsAnswerInputRequired(t *testing.T) {
	_, url := serve(t)
	cs := mustConnect(t, url, noMRTR(&mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}, Elicitation: &mcp.ElicitationCapabilities{}}))
	ctx := t.Context()

	t.Run("test_sampling", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "Test prompt for sampling"}}
		asked := askedFor(t, cs, params, "sampling")
		// go-sdk's client reads every sampling ask as the tools-capable shape.
		ask, ok := asked.InputRequests["sampling"].(*mcp.CreateMessageWithToolsParams)
		if !ok || ask.MaxTokens != 100 || len(ask.Messages) != 1 || len(ask.Messages[0].Content) != 1 ||
			ask.Messages[0].Content[0].(*mcp.TextContent).Text != "Test prompt for sampling" {
			t.Fatalf("asked %#v, want sampling/createMessage of the prompt, maxTokens 100", asked.InputRequests["sampling"])
		}
		if asked.RequestState == "" {
			t.Error("test_sampling sent no requestState")
		}
		answer := &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "m", Content: []mcp.Content{&mcp.TextContent{Text: "Paris"}}}
		res, err := cs.CallTool(ctx, retry(params, asked, mcp.InputResponseMap{"sampling": answer}))
		if err != nil || res.NeedsInput() || res.Content[0].(*mcp.TextContent).Text != "LLM response: Paris" {
			t.Fatalf("retry: %v, %+v", err, res)
		}
		// A retry that does not echo the requestState is refused.
		bad := retry(params, asked, mcp.InputResponseMap{"sampling": answer})
		bad.RequestState = ""
		if _, err := cs.CallTool(ctx, bad); codeOf(err) != jsonrpc.CodeInvalidParams {
			t.Errorf("retry without the requestState: %v, want -32602", err)
		}
	})

	for _, tc := range []struct {
		tool      string
		args      map[string]any
		withState bool
		check     func(schema map[string]any) bool
	}{
		{"test_elicitation", map[string]any{"message": "Please provide your information"}, true, func(s map[string]any) bool {
			p, _ := s["properties"].(map[string]any)
			return p["username"] != nil && p["email"] != nil
		}},
		{"test_elicitation_sep1034_defaults", nil, false, func(s map[string]any) bool {
			p, _ := s["properties"].(map[string]any)
			name, _ := p["name"].(map[string]any)
			score, _ := p["score"].(map[string]any)
			return name["default"] == "John Doe" && score["default"] == 95.5
		}},
		{"test_elicitation_sep1330_enums", nil, false, func(s map[string]any) bool {
			p, _ := s["properties"].(map[string]any)
			return len(p) == 5 && p["legacyEnum"].(map[string]any)["enumNames"] != nil
		}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			params := &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args}
			asked := askedFor(t, cs, params, "elicitation")
			ask, ok := asked.InputRequests["elicitation"].(*mcp.ElicitParams)
			if !ok {
				t.Fatalf("asked %#v, want elicitation/create", asked.InputRequests["elicitation"])
			}
			// The schema as the client sees it on the wire.
			var schema map[string]any
			if b, err := json.Marshal(ask.RequestedSchema); err != nil || json.Unmarshal(b, &schema) != nil || !tc.check(schema) {
				t.Errorf("requestedSchema %s is not the scenario's", b)
			}
			if (asked.RequestState != "") != tc.withState {
				t.Errorf("requestState %q: want one: %t", asked.RequestState, tc.withState)
			}
			answer := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "testuser"}}
			res, err := cs.CallTool(ctx, retry(params, asked, mcp.InputResponseMap{"elicitation": answer}))
			if err != nil || res.NeedsInput() || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "Elicitation result: action=accept") {
				t.Fatalf("retry: %v, %+v", err, res)
			}
			declined, err := cs.CallTool(ctx, retry(params, asked, mcp.InputResponseMap{"elicitation": &mcp.ElicitResult{Action: "decline"}}))
			if err != nil || !strings.Contains(declined.Content[0].(*mcp.TextContent).Text, "action=decline") {
				t.Errorf("declined: %v, %+v", err, declined)
			}
		})
	}
}

// A tool does not ask for what the request's capabilities do not declare:
// it answers -32021 naming the capability.
func TestAskingToolsNeedTheCapability(t *testing.T) {
	_, url := serve(t)
	cs := mustConnect(t, url, noMRTR(&mcp.ClientCapabilities{}))
	for _, tc := range []struct {
		tool       string
		args       map[string]any
		capability string
	}{
		{"test_sampling", map[string]any{"prompt": "p"}, "sampling"},
		{"test_elicitation", map[string]any{"message": "m"}, "elicitation"},
		{"test_elicitation_sep1034_defaults", nil, "elicitation"},
		{"test_elicitation_sep1330_enums", nil, "elicitation"},
		{"test_missing_capability", nil, "sampling"},
	} {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		var e *jsonrpc.Error
		if !errors.As(err, &e) || e.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(string(e.Data), `"`+tc.capability+`"`) {
			t.Errorf("%s: %v, want -32021 requiring %s", tc.tool, err, tc.capability)
		}
	}
}

// With go-sdk's client answering input requests itself (its default), the
// asking tools complete in one CallTool: sampling, elicitation and roots.
func TestAskingToolsCompleteWithAnsweringClient(t *testing.T) {
	_, url := serve(t)
	c := mcp.NewClient(&mcp.Implementation{Name: "modernonly-test", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "Paris"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			// Enough for every schema asked (go-sdk's client checks the
			// content against it); extra properties are allowed.
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{
				"name": "Ada", "username": "ada", "email": "ada@example.com", "ok": true, "color": "blue", "context": "tests"}}, nil
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///tmp/a", Name: "a"})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for tool, want := range map[string]string{
		"test_input_required_result_elicitation":     "Hello, Ada!",
		"test_input_required_result_sampling":        "Sampling response: Paris",
		"test_input_required_result_list_roots":      "Client exposed 1 root(s): file:///tmp/a",
		"test_input_required_result_request_state":   "state-ok",
		"test_input_required_result_multiple_inputs": "Paris Ada — 1 root(s) visible",
		"test_input_required_result_multi_round":     "Multi-round complete: Ada likes blue",
		"test_input_required_result_tampered_state":  "state-ok",
	} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool})
		if err != nil || res.NeedsInput() || len(res.Content) == 0 || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, want) {
			t.Errorf("%s: %v, %+v, want %q", tool, err, res, want)
		}
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"test_sampling", map[string]any{"prompt": "p"}, "LLM response: Paris"},
		{"test_elicitation", map[string]any{"message": "m"}, "Elicitation result: action=accept"},
		{"test_elicitation_sep1034_defaults", nil, "Elicitation result: action=accept"},
		// Not test_elicitation_sep1330_enums: go-sdk's client refuses its
		// titled multi-select (items.anyOf of const/title, as SEP-1330 has
		// it) before asking its handler: "items must specify enum for
		// untitled enums". TestAskingToolsAnswerInputRequired covers it.
	} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil || res.NeedsInput() || res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, tc.want) {
			t.Errorf("%s: %v, %+v, want %q", tc.tool, err, res, tc.want)
		}
	}
	p, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "test_input_required_result_prompt"})
	if err != nil || len(p.Messages) != 1 {
		t.Errorf("test_input_required_result_prompt: %v, %+v", err, p)
	}
}

// collect gathers what a client handler hands it, for the test to wait on:
// go-sdk's client runs notification handlers on their own goroutines, so a
// call's notifications may be handled after the call has returned.
type collect[T any] struct{ ch chan T }

func newCollect[T any]() collect[T] { return collect[T]{make(chan T, 16)} }

func (c collect[T]) add(v T) { c.ch <- v }

// wait returns the next n values, failing the test after testTimeout.
func (c collect[T]) wait(t *testing.T, n int) []T {
	t.Helper()
	var got []T
	timeout := time.After(testTimeout)
	for len(got) < n {
		select {
		case v := <-c.ch:
			got = append(got, v)
		case <-timeout:
			t.Fatalf("got %v, want %d values", got, n)
		}
	}
	return got
}

// Logs reach the request's stream only when its _meta asks for them.
func TestLoggingFollowsTheRequestsLogLevel(t *testing.T) {
	_, url := serve(t)
	logs := newCollect[string]()
	cs := mustConnect(t, url, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
		logs.add(r.Params.Data.(string))
	}})

	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "test_tool_with_logging"}); err != nil {
		t.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "test_tool_with_logging", Meta: mcp.Meta{"io.modelcontextprotocol/logLevel": "info"}}
	if _, err := cs.CallTool(t.Context(), params); err != nil {
		t.Fatal(err)
	}
	// Had the first call logged, its three would come first.
	if got := logs.wait(t, 3); !slices.Equal(got, []string{"Tool execution started", "Tool processing data", "Tool execution completed"}) {
		t.Errorf("logs %q, want the three of the scenario, from the second call only", got)
	}
	// Above the messages' level, nothing is sent.
	params.Meta["io.modelcontextprotocol/logLevel"] = "error"
	if _, err := cs.CallTool(t.Context(), params); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "test_logging_tool", Meta: mcp.Meta{"io.modelcontextprotocol/logLevel": "debug"}}); err != nil {
		t.Fatal(err)
	}
	if got := logs.wait(t, 1); got[0] != "test_logging_tool executed" {
		t.Errorf("log %q after a call at level error, want test_logging_tool's only", got[0])
	}
}

func TestProgressCarriesTheRequestsToken(t *testing.T) {
	_, url := serve(t)
	progress := newCollect[*mcp.ProgressNotificationParams]()
	cs := mustConnect(t, url, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		progress.add(r.Params)
	}})
	params := &mcp.CallToolParams{Name: "test_tool_with_progress"}
	params.SetProgressToken("progress-test-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "progress-test-1" {
		t.Fatalf("%v, %+v", err, res)
	}
	for i, p := range progress.wait(t, 3) {
		if p.ProgressToken != "progress-test-1" || p.Progress != float64(50*i) || p.Total != 100 {
			t.Errorf("progress %d: %+v, want token progress-test-1, %d of 100", i, p, 50*i)
		}
	}
}

// listen opens subscriptions/listen with filter and returns the stream,
// after its acknowledgement, and its body (closed when the test ends).
func listen(t *testing.T, url, id, filter string) (*bufio.Reader, io.Closer) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":"`+id+`","method":"subscriptions/listen","params":{"notifications":`+filter+`,`+modernMeta("")+`}}`))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range modernHeaders("subscriptions/listen") {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	r := bufio.NewReader(resp.Body)
	ack := nextNotification(t, r)
	if ack.Method != "notifications/subscriptions/acknowledged" || ack.subscription() != id {
		t.Fatalf("first message %+v, want the acknowledgement of %s", ack, id)
	}
	return r, resp.Body
}

type notification struct {
	Method string `json:"method"`
	Params struct {
		Meta map[string]any `json:"_meta"`
		URI  string         `json:"uri"`
	} `json:"params"`
}

func (n notification) subscription() any {
	return n.Params.Meta["io.modelcontextprotocol/subscriptionId"]
}

func nextNotification(t *testing.T, r *bufio.Reader) notification {
	t.Helper()
	data, err := nextEvent(r)
	if err != nil {
		t.Fatalf("listen stream: %v", err)
	}
	var n notification
	if err := json.Unmarshal([]byte(data), &n); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return n
}

// The watched resource changes, and a listen stream that subscribed to it
// hears so: what a gateway turns a 2025 client's resources/subscribe into.
func TestWatchedResourceUpdatesReachListenStreams(t *testing.T) {
	s, url := serve(t)
	stream, _ := listen(t, url, "w1", `{"resourceSubscriptions":["`+modernonly.WatchedURI+`"]}`)
	cs := mustConnect(t, url, nil)
	read := func() string {
		r, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: modernonly.WatchedURI})
		if err != nil {
			t.Fatal(err)
		}
		return r.Contents[0].Text
	}
	before := read()
	s.TouchWatched(t.Context())
	n := nextNotification(t, stream)
	if n.Method != "notifications/resources/updated" || n.Params.URI != modernonly.WatchedURI || n.subscription() != "w1" {
		t.Errorf("got %+v, want resources/updated of %s tagged w1", n, modernonly.WatchedURI)
	}
	if after := read(); after == before {
		t.Errorf("content %q did not change", after)
	}
}

// The trigger tools change the lists; a stream hears only what it asked for.
func TestListChangesReachListenStreams(t *testing.T) {
	_, url := serve(t)
	tools, _ := listen(t, url, "t1", `{"toolsListChanged":true}`)
	prompts, _ := listen(t, url, "p1", `{"promptsListChanged":true}`)
	cs := mustConnect(t, url, nil)
	for _, tool := range []string{"test_trigger_tool_change", "test_trigger_prompt_change"} {
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool}); err != nil {
			t.Fatal(err)
		}
	}
	if n := nextNotification(t, tools); n.Method != "notifications/tools/list_changed" || n.subscription() != "t1" {
		t.Errorf("tools stream: %+v", n)
	}
	if n := nextNotification(t, prompts); n.Method != "notifications/prompts/list_changed" || n.subscription() != "p1" {
		t.Errorf("prompts stream: %+v, want prompts/list_changed only", n)
	}
}

// Start serves on a free port, the watched resource changes on its own,
// and stop ends everything, open listen streams included.
func TestStartWatchAndStop(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	url, stop, err := modernonly.Start(ctx, "127.0.0.1:0", 20*time.Millisecond, modernonly.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stream, body := listen(t, url, "s1", `{"resourceSubscriptions":["`+modernonly.WatchedURI+`"]}`)
	if n := nextNotification(t, stream); n.Method != "notifications/resources/updated" {
		t.Errorf("got %+v, want a resources/updated within the watch interval", n)
	}
	start := time.Now()
	stop()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("stop took %s with a listen stream open", d)
	}
	stop() // again: a no-op
	// What was sent before stop is still buffered; then the stream ends.
	for range 1000 {
		if _, err := nextEvent(stream); err != nil {
			break
		}
	}
	if _, err := nextEvent(stream); err == nil {
		t.Error("the listen stream is still open after stop")
	}
	body.Close()
	http.DefaultClient.CloseIdleConnections()
	goleak.VerifyNone(t, before)
}

// Each refusal is logged: in a run through the gateway, the backend's log
// says what of the session protocol the gateway still sent.
func TestRefusalsAreLogged(t *testing.T) {
	var log strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return log.Write(p)
	}), nil))
	hs := httptest.NewServer(modernonly.New(modernonly.Options{Logger: logger}).Handler())
	defer hs.Close()
	post(t, http.MethodPost, hs.URL, nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	post(t, http.MethodGet, hs.URL, nil, "")
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"method=initialize", "requested=2025-11-25", "code=-32022", "http_method=GET", "status=405"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log %q has no %q", log.String(), want)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// The answers the 2025-11-25 scenarios' client gives (copied from the
// suite), relayed as they are into inputResponses, complete the calls: what
// a translating gateway sends on the retry.
func TestAskingToolsTakeTheSuitesAnswers(t *testing.T) {
	_, url := serve(t)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{}}}`
	for _, tc := range []struct{ tool, args, state, answer, want string }{
		{"test_sampling", `{"prompt":"Test prompt for sampling"}`, `"test_sampling:asked"`,
			`{"sampling":{"role":"assistant","content":{"type":"text","text":"This is a test response from the client"},"model":"test-model","stopReason":"endTurn"}}`,
			"LLM response: This is a test response from the client"},
		{"test_elicitation", `{"message":"Please provide your information"}`, `"test_elicitation:asked"`,
			`{"elicitation":{"action":"accept","content":{"username":"testuser","email":"test@example.com"}}}`,
			"Elicitation result: action=accept, content=map[email:test@example.com username:testuser]"},
		{"test_elicitation_sep1034_defaults", `{}`, "",
			`{"elicitation":{"action":"accept","content":{"name":"Jane Smith","age":25,"score":88.0,"status":"inactive","verified":false}}}`,
			"Elicitation result: action=accept"},
		{"test_elicitation_sep1330_enums", `{}`, "",
			`{"elicitation":{"action":"accept","content":{"untitledSingle":"option1","titledSingle":"value1","legacyEnum":"opt1","untitledMulti":["option1","option2"],"titledMulti":["value1","value2"]}}}`,
			"Elicitation result: action=accept"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			h := modernHeaders("tools/call")
			h["Mcp-Name"] = tc.tool
			state := ""
			if tc.state != "" {
				state = `"requestState":` + tc.state + `,`
			}
			status, _, body := post(t, http.MethodPost, url, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tc.tool+
				`","arguments":`+tc.args+`,`+state+`"inputResponses":`+tc.answer+`,`+meta+`}}`)
			var r struct {
				Result struct {
					ResultType string `json:"resultType"`
					Content    []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"result"`
			}
			if status != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil || r.Result.ResultType != "complete" ||
				len(r.Result.Content) != 1 || !strings.HasPrefix(r.Result.Content[0].Text, tc.want) {
				t.Errorf("got %d %s, want a complete result starting %q", status, body, tc.want)
			}
		})
	}
}
