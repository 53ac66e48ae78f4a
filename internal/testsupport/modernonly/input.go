package modernonly

//lint:file-ignore SA1019 sampling and roots are deprecated in 2026-07-28 but still served: this file exercises them on purpose

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools that need something from the client. A 2026-07-28 server sends
// no requests: each tool answers its first call with an input_required
// result (inputRequests, and sometimes a requestState) and completes when
// the call comes again with inputResponses (multi round-trip requests,
// SEP-2322). go-sdk marks such a result "input_required" because
// InputRequests is set, and decodes the retry's inputResponses by shape:
// ElicitResult, CreateMessageWithToolsResult or ListRootsResult.
//
// test_sampling, test_elicitation, test_elicitation_sep1034_defaults and
// test_elicitation_sep1330_enums are the 2025-11-25 scenarios' tools, asked
// the 2026-07-28 way; a gateway turns their inputRequests into the
// sampling/createMessage and elicitation/create requests a 2025 client
// expects. The first two also send a requestState and refuse a retry that
// does not echo it, so a translation must carry it; the other two send
// none, so a translation must not invent one. Each refuses with -32021
// when the request's _meta does not declare the capability it would ask
// for (a server must not ask for what the client did not declare).
//
// The test_input_required_result_* tools are the 2026-07-28 scenarios'.

// Keys of the inputRequests and requestStates of the 2025 scenarios' tools.
const (
	samplingKey    = "sampling"
	elicitationKey = "elicitation"
	samplingState  = "test_sampling:asked"
	elicitState    = "test_elicitation:asked"
)

func (s *Server) addInputTools() {
	srv := s.mcp

	mcp.AddTool(srv, &mcp.Tool{Name: "test_sampling", Description: "Asks the client for an LLM completion of prompt (input_required, sampling/createMessage) and returns it"}, sampling)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_elicitation", Description: "Asks the user for a username and email (input_required, elicitation/create) and returns the answer"}, elicitation)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_elicitation_sep1034_defaults", Description: "Elicitation whose schema has a default for every primitive type (SEP-1034), asked as input_required"},
		func(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			return elicit(req, "", "Test defaults for primitives", defaultsSchema())
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "test_elicitation_sep1330_enums", Description: "Elicitation with every enum schema variant (SEP-1330), asked as input_required"},
		func(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			return elicit(req, "", "Test enum schemas", enumsSchema())
		})

	mcp.AddTool(srv, &mcp.Tool{Name: "test_input_required_result_elicitation", Description: "MRTR: asks for the caller's name (elicitation)"}, mrtrElicitation)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_input_required_result_sampling", Description: "MRTR: asks for an LLM completion (sampling)"}, mrtrSampling)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_input_required_result_list_roots", Description: "MRTR: asks for the client's roots (roots/list)"}, mrtrListRoots)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_input_required_result_request_state", Description: "MRTR: an elicitation with a requestState that must come back unchanged"}, mrtrRequestState)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_input_required_result_multiple_inputs", Description: "MRTR: elicitation, sampling and roots in one round"}, mrtrMultipleInputs)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_input_required_result_multi_round", Description: "MRTR: two elicitation rounds, the requestState changing between them"}, mrtrMultiRound)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_input_required_result_tampered_state", Description: "MRTR: refuses a retry whose requestState was altered"}, mrtrTamperedState)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_input_required_result_capabilities", Description: "MRTR: asks only for what the request's client capabilities cover"}, mrtrCapabilities)
}

// ---- the 2025-11-25 scenarios' tools --------------------------------------

func sampling(_ context.Context, req *mcp.CallToolRequest, in struct {
	Prompt string `json:"prompt" jsonschema:"the prompt to send to the LLM"`
}) (*mcp.CallToolResult, any, error) {
	if answer, ok := samplingText(req.Params.InputResponses, samplingKey); ok {
		if err := checkState(req, samplingState); err != nil {
			return nil, nil, err
		}
		return text("LLM response: " + answer), nil, nil
	}
	if caps := req.ClientCapabilities(); caps == nil || caps.Sampling == nil {
		return nil, nil, capabilityRequired("sampling", &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}})
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{samplingKey: &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}},
			MaxTokens: 100,
		}},
		RequestState: samplingState,
	}, nil, nil
}

func elicitation(_ context.Context, req *mcp.CallToolRequest, in struct {
	Message string `json:"message" jsonschema:"the message to show the user"`
}) (*mcp.CallToolResult, any, error) {
	return elicit(req, elicitState, in.Message, map[string]any{
		"type": "object",
		"properties": map[string]any{
			"username": map[string]any{"type": "string", "description": "User's response"},
			"email":    map[string]any{"type": "string", "description": "User's email address"},
		},
		"required": []string{"username", "email"},
	})
}

// elicit asks the user message with schema (input_required, with state as
// the requestState when it is not empty) and reports the answer, whatever
// its action, when the call comes back with it.
func elicit(req *mcp.CallToolRequest, state, message string, schema any) (*mcp.CallToolResult, any, error) {
	if answer, ok := req.Params.InputResponses[elicitationKey].(*mcp.ElicitResult); ok && answer != nil {
		if err := checkState(req, state); err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprintf("Elicitation result: action=%s, content=%v", answer.Action, answer.Content)), nil, nil
	}
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		return nil, nil, capabilityRequired("elicitation", &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}})
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{elicitationKey: &mcp.ElicitParams{Message: message, RequestedSchema: schema}},
		RequestState:  state,
	}, nil, nil
}

// checkState refuses a retry whose requestState is not the one the tool
// issued (want; "" when it issued none, and then the retry must send none).
func checkState(req *mcp.CallToolRequest, want string) error {
	if got := req.Params.RequestState; got != want {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("requestState %q is not the one this tool issued (%q)", clip(got), want)}
	}
	return nil
}

// defaultsSchema has a default for every primitive type (SEP-1034).
func defaultsSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":     map[string]any{"type": "string", "description": "User name", "default": "John Doe"},
			"age":      map[string]any{"type": "integer", "description": "User age", "default": 30},
			"score":    map[string]any{"type": "number", "description": "User score", "default": 95.5},
			"status":   map[string]any{"type": "string", "description": "User status", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
			"verified": map[string]any{"type": "boolean", "description": "Verification status", "default": true},
		},
	}
}

// enumsSchema has every enum variant of SEP-1330.
func enumsSchema() map[string]any {
	titled := []map[string]any{
		{"const": "value1", "title": "First Option"},
		{"const": "value2", "title": "Second Option"},
		{"const": "value3", "title": "Third Option"},
	}
	options := []string{"option1", "option2", "option3"}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"untitledSingle": map[string]any{"type": "string", "enum": options},
			"titledSingle":   map[string]any{"type": "string", "oneOf": titled},
			"legacyEnum": map[string]any{"type": "string", "enum": []string{"opt1", "opt2", "opt3"},
				"enumNames": []string{"Option One", "Option Two", "Option Three"}},
			"untitledMulti": map[string]any{"type": "array", "minItems": 1, "maxItems": 3,
				"items": map[string]any{"type": "string", "enum": options}},
			"titledMulti": map[string]any{"type": "array", "minItems": 1, "maxItems": 3,
				"items": map[string]any{"type": "string", "anyOf": titled}},
		},
	}
}

// ---- the 2026-07-28 scenarios' tools (test_input_required_result_*) -------

// nameSchema asks for one string property, required.
func nameSchema(property string) map[string]any {
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{property: map[string]any{"type": "string"}},
		"required":   []string{property},
	}
}

func confirmSchema() map[string]any {
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
		"required":   []string{"ok"},
	}
}

// accepted is the content of an accepted ElicitResult under key, or nil.
func accepted(responses mcp.InputResponseMap, key string) map[string]any {
	r, ok := responses[key].(*mcp.ElicitResult)
	if !ok || r == nil || r.Action != "accept" {
		return nil
	}
	return r.Content
}

// samplingText is the first text of a sampling answer under key. go-sdk
// decodes an answer with a role as CreateMessageWithToolsResult.
func samplingText(responses mcp.InputResponseMap, key string) (string, bool) {
	var content []mcp.Content
	switch r := responses[key].(type) {
	case *mcp.CreateMessageWithToolsResult:
		if r == nil {
			return "", false
		}
		content = r.Content
	case *mcp.CreateMessageResult:
		if r == nil {
			return "", false
		}
		content = []mcp.Content{r.Content}
	default:
		return "", false
	}
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text, true
		}
	}
	return "(non-text response)", true
}

func askName() *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema("name")}
}

// mrtrElicitation also serves the missing-input-response, ignore-extra-params
// and validate-input scenarios: anything without an accepted user_name is
// asked again.
func mrtrElicitation(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	if name, _ := accepted(req.Params.InputResponses, "user_name")["name"].(string); name != "" {
		return text(fmt.Sprintf("Hello, %s!", name)), nil, nil
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"user_name": askName()}}, nil, nil
}

func mrtrSampling(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	if answer, ok := samplingText(req.Params.InputResponses, "capital_question"); ok {
		return text("Sampling response: " + answer), nil, nil
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"capital_question": &mcp.CreateMessageParams{
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "What is the capital of France?"}}},
		MaxTokens: 100,
	}}}, nil, nil
}

func mrtrListRoots(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	if roots, ok := req.Params.InputResponses["client_roots"].(*mcp.ListRootsResult); ok && roots != nil {
		uris := make([]string, 0, len(roots.Roots))
		for _, r := range roots.Roots {
			uris = append(uris, r.URI)
		}
		return text(fmt.Sprintf("Client exposed %d root(s): %s", len(uris), strings.Join(uris, ", "))), nil, nil
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}}, nil, nil
}

// The fixed requestStates below are valid only as issued: the suite
// tampers by appending "-TAMPERED". A real server would protect a state
// that carries anything (HMAC, AEAD); a constant needs only comparing.

func mrtrRequestState(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	const issued = "request_state"
	if accepted(req.Params.InputResponses, "confirm") != nil {
		if req.Params.RequestState != issued {
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid requestState"}
		}
		return text("state-ok: requestState received and confirmation accepted"), nil, nil
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{Message: "Please confirm", RequestedSchema: confirmSchema()}},
		RequestState:  issued,
	}, nil, nil
}

func mrtrMultipleInputs(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	in := req.Params.InputResponses
	name, _ := accepted(in, "user_name")["name"].(string)
	greeting, sampled := samplingText(in, "greeting")
	roots, rooted := in["client_roots"].(*mcp.ListRootsResult)
	if name != "" && sampled && rooted && roots != nil {
		return text(fmt.Sprintf("%s %s — %d root(s) visible", greeting, name, len(roots.Roots))), nil, nil
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{
			"user_name": askName(),
			"greeting": &mcp.CreateMessageParams{
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Generate a greeting"}}},
				MaxTokens: 50,
			},
			"client_roots": &mcp.ListRootsParams{},
		},
		RequestState: "multiple_inputs",
	}, nil, nil
}

// mrtrMultiRound keeps its progress in the requestState ("round=1", then
// "round=2;name=<name>"): a stateless server remembers nothing else.
func mrtrMultiRound(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	state := req.Params.RequestState
	switch {
	case state == "round=1":
		name, _ := accepted(req.Params.InputResponses, "step1")["name"].(string)
		if name == "" {
			name = "unknown"
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"step2": &mcp.ElicitParams{
				Message: "Step 2: What is your favorite color?", RequestedSchema: nameSchema("color")}},
			RequestState: "round=2;name=" + name,
		}, nil, nil
	case strings.HasPrefix(state, "round=2;name="):
		color, _ := accepted(req.Params.InputResponses, "step2")["color"].(string)
		if color == "" {
			color = "unknown"
		}
		return text(fmt.Sprintf("Multi-round complete: %s likes %s", strings.TrimPrefix(state, "round=2;name="), color)), nil, nil
	default:
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"step1": &mcp.ElicitParams{
				Message: "Step 1: What is your name?", RequestedSchema: nameSchema("name")}},
			RequestState: "round=1",
		}, nil, nil
	}
}

func mrtrTamperedState(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	const issued = "tampered_state"
	if state := req.Params.RequestState; state != "" {
		if state != issued {
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid requestState: tampered"}
		}
		if accepted(req.Params.InputResponses, "confirm") != nil {
			return text("state-ok: requestState received and confirmation accepted"), nil, nil
		}
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{Message: "Please confirm", RequestedSchema: confirmSchema()}},
		RequestState:  issued,
	}, nil, nil
}

// mrtrCapabilities asks only for the kinds of input the request's
// clientCapabilities declare.
func mrtrCapabilities(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	if len(req.Params.InputResponses) > 0 {
		return text("Capability-aware input requests fulfilled"), nil, nil
	}
	caps := req.ClientCapabilities()
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	asks := mcp.InputRequestMap{}
	if caps.Elicitation != nil {
		asks["user_name"] = askName()
	}
	if caps.Sampling != nil {
		asks["greeting"] = &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Generate a short greeting"}}},
			MaxTokens: 50,
		}
	}
	if caps.RootsV2 != nil || caps.Roots.ListChanged {
		asks["client_roots"] = &mcp.ListRootsParams{}
	}
	if len(asks) == 0 {
		return text("No declared client capability supports an in-band input request"), nil, nil
	}
	return &mcp.CallToolResult{InputRequests: asks}, nil, nil
}
