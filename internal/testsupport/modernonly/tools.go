package modernonly

//lint:file-ignore SA1019 sampling and roots are deprecated in 2026-07-28 but still served: this file exercises them on purpose

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Content the tools, resources and prompts return: a 1x1 PNG and a silent
// WAV, the suite's own samples.
const (
	pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	wavBase64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

func png() []byte { return mustDecode(pngBase64) }
func wav() []byte { return mustDecode(wavBase64) }

func mustDecode(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic("modernonly: bad base64 constant: " + err.Error())
	}
	return b
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// addTools registers every tool of the fixture. The ones that need the
// client (sampling, elicitation, roots) are in input.go.
func (s *Server) addTools() {
	srv := s.mcp
	plain := func(name, description string, result func() *mcp.CallToolResult) {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: description},
			func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
				return result(), nil, nil
			})
	}

	// Content types (both requirement sets).
	plain("test_simple_text", "Returns one text content", func() *mcp.CallToolResult {
		return text("This is a simple text response for testing.")
	})
	plain("test_image_content", "Returns one image content (PNG)", func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: png(), MIMEType: "image/png"}}}
	})
	plain("test_audio_content", "Returns one audio content (WAV)", func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: wav(), MIMEType: "audio/wav"}}}
	})
	plain("test_embedded_resource", "Returns one embedded resource", func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource"}}}}
	})
	plain("test_multiple_content_types", "Returns text, image and embedded resource content", func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "This is text content"},
			&mcp.ImageContent{Data: png(), MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "test://embedded-in-multiple", MIMEType: "text/plain", Text: "This is an embedded resource"}},
		}}
	})
	plain("test_error_handling", "Fails as a tool (isError), not as a protocol error", func() *mcp.CallToolResult {
		r := text("this tool intentionally returns an error for testing")
		r.IsError = true
		return r
	})
	plain("test_streaming_elicitation", "Answers on its response stream with the result only: no server-to-client request, ever (SEP-2575)", func() *mcp.CallToolResult {
		return text("stream observed: result frames only, no top-level requests")
	})

	mcp.AddTool(srv, &mcp.Tool{Name: "test_tool_with_logging", Description: "Logs three info messages 50 ms apart (sent only when the request's _meta has a logLevel)"}, toolWithLogging)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_logging_tool", Description: "Logs one info message: nothing is sent without the request's _meta logLevel (SEP-2575)"}, loggingTool)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_tool_with_progress", Description: "Reports progress 0, 50 and 100 of 100 with the request's progressToken and returns the token"}, toolWithProgress)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_missing_capability", Description: "Needs the sampling client capability: -32021 without it (SEP-2575)"}, missingCapability)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_reconnection", Description: "Waits 100 ms; a 2026-07-28 response stream has no reconnection (SEP-1699 is session-protocol only)"}, reconnection)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_trigger_tool_change", Description: "Adds (or replaces) a tool: tools/list_changed on listen streams that asked for it"},
		func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(srv, &mcp.Tool{Name: "__transient_tool_for_list_changed", Description: "Added by test_trigger_tool_change"},
				func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{}}, nil, nil
				})
			return text("tools_list_changed published"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "test_trigger_prompt_change", Description: "Adds (or replaces) a prompt: prompts/list_changed on listen streams that asked for it"},
		func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			srv.AddPrompt(&mcp.Prompt{Name: "__transient_prompt_for_list_changed", Description: "Added by test_trigger_prompt_change"},
				func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
					return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{}}, nil
				})
			return text("prompts_list_changed published"), nil, nil
		})

	// SEP-1613 / SEP-2106: the 2020-12 vocabulary must survive tools/list.
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "json_schema_2020_12_tool",
		Description: "Input schema with JSON Schema 2020-12 features ($schema, $defs, $anchor, allOf/anyOf, if/then/else)",
		InputSchema: json.RawMessage(`{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type": "object",
			"$defs": {"address": {"$anchor": "addressDef", "type": "object",
				"properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
			"properties": {
				"name": {"type": "string"},
				"address": {"$ref": "#/$defs/address"},
				"contactMethod": {"type": "string", "enum": ["phone", "email"]},
				"phone": {"type": "string"},
				"email": {"type": "string"}
			},
			"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
			"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
			"then": {"required": ["phone"]},
			"else": {"required": ["email"]},
			"additionalProperties": false
		}`),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in json.RawMessage) (*mcp.CallToolResult, any, error) {
		return text(fmt.Sprintf("JSON Schema 2020-12 tool called with: %s", in)), nil, nil
	})

	// SEP-2243: an argument mirrored into an Mcp-Param-Region header.
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "test_x_mcp_header",
		Description: "Its region argument is mirrored into Mcp-Param-Region (SEP-2243)",
		InputSchema: json.RawMessage(`{"type": "object", "properties": {
			"region": {"type": "string", "description": "mirrored into Mcp-Param-Region", "x-mcp-header": "Region"},
			"level": {"type": "integer", "description": "not mirrored"}}}`),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Region string `json:"region,omitempty"`
		Level  int    `json:"level,omitempty"`
	}) (*mcp.CallToolResult, any, error) {
		return text("region=" + in.Region), nil, nil
	})

	s.addInputTools()
}

// logTo sends one message on the request's response stream. go-sdk sends it
// only when the request's _meta carries a logLevel at or below level.
func logTo(ctx context.Context, req *mcp.CallToolRequest, level mcp.LoggingLevel, data string) {
	// An error here is a client that went away; the call's result will not
	// reach it either.
	_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: level, Logger: "modern-everything", Data: data})
}

func toolWithLogging(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			if err := sleep(ctx, 50*time.Millisecond); err != nil {
				return nil, nil, err
			}
		}
		logTo(ctx, req, "info", msg)
	}
	return text("Tool with logging executed successfully"), nil, nil
}

func loggingTool(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	logTo(ctx, req, "info", "test_logging_tool executed")
	return text("Log attempted; sent only if the request's _meta has a logLevel."), nil, nil
}

func toolWithProgress(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	token := req.Params.GetProgressToken()
	for i, p := range []float64{0, 50, 100} {
		if i > 0 {
			if err := sleep(ctx, 50*time.Millisecond); err != nil {
				return nil, nil, err
			}
		}
		if token != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: p, Total: 100, Message: fmt.Sprintf("Completed step %.0f of 100", p)})
		}
	}
	return text(fmt.Sprint(token)), nil, nil
}

func missingCapability(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	if caps := req.ClientCapabilities(); caps != nil && caps.Sampling != nil {
		return text("Client declared the sampling capability; tool executed."), nil, nil
	}
	return nil, nil, capabilityRequired("sampling", &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}})
}

// capabilityRequired is -32021 (MissingRequiredClientCapability), which
// go-sdk answers with HTTP 400 on the 2026-07-28 wire.
func capabilityRequired(name string, caps *mcp.ClientCapabilities) error {
	data, err := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: caps})
	if err != nil {
		return err
	}
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: fmt.Sprintf("this tool needs the %s client capability, which the request's _meta does not declare", name),
		Data:    data,
	}
}

func reconnection(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	if err := sleep(ctx, 100*time.Millisecond); err != nil {
		return nil, nil, err
	}
	return text("Reconnection test completed: a 2026-07-28 response stream is never closed early, so there was nothing to reconnect."), nil, nil
}

// sleep waits d, or less when ctx ends (the client closed the stream).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
