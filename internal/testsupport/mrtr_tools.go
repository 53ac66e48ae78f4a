package testsupport

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The modern tools exercise protocol 2026-07-28's own traffic: requests
// that answer input_required (multi-round-trip requests, MRTR) and
// changes that a subscriptions/listen reports. They need a Stateless
// backend: only a stateless go-sdk server speaks 2026-07-28 (a stateful
// one would fulfil the input requests itself, with real server-to-client
// requests, for a session client).
//
//	greet     {}     asks for the caller's name (elicitation "user_name"),
//	                 then says "Hello, <name>!"
//	interview {}     two rounds with an evolving requestState: the name
//	                 ("step1", state "round=1"), then a colour ("step2",
//	                 state "round=2;name=<name>"), then "<name> likes
//	                 <colour>"; a state it never issued is an error
//	add_tool  {name} adds a tool of that name (tools/list_changed)
//
// and, on a backend with resources and prompts,
//
//	prompt   "topic"       asks for a topic (elicitation "topic"), then
//	                       answers "Tell me about <topic>."
//	resource test://vault  asks for a passphrase (elicitation "passphrase"),
//	                       then reads "opened with <passphrase>"
//
// A backend counts every round it served (Rounds), by tool, prompt or URI.
type addToolArgs struct {
	Name string `json:"name"`
}

// VaultURI is the modern tools' resource that asks for input.
const VaultURI = "test://vault"

// CachedURI is a modern resource whose result carries its own cache hints
// (ttlMs 60000, cacheScope private).
const CachedURI = "test://cached"

// elicitText is the schema of an elicitation asking for one string field.
func elicitText(message, field string) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Message: message,
		RequestedSchema: map[string]any{"type": "object",
			"properties": map[string]any{field: map[string]any{"type": "string"}},
			"required":   []string{field}},
	}
}

// accepted is the string field of an accepted elicitation answer under
// key, or "".
func accepted(responses mcp.InputResponseMap, key, field string) string {
	res, ok := responses[key].(*mcp.ElicitResult)
	if !ok || res == nil || res.Action != "accept" {
		return ""
	}
	s, _ := res.Content[field].(string)
	return s
}

func addModernTools(srv *mcp.Server, b *Backend, resources, prompts bool) {
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Ask the caller's name, then greet them."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			b.round("greet")
			if name := accepted(req.Params.InputResponses, "user_name", "name"); name != "" {
				return textResult("Hello, " + name + "!"), nil, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"user_name": elicitText("What is your name?", "name"),
			}}, nil, nil
		})

	mcp.AddTool(srv, &mcp.Tool{Name: "interview", Description: "Ask a name, then a colour, over two rounds."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			b.round("interview")
			state := req.Params.RequestState
			switch {
			case state == "":
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"step1": elicitText("Step 1: what is your name?", "name"),
				}, RequestState: "round=1"}, nil, nil
			case state == "round=1":
				name := accepted(req.Params.InputResponses, "step1", "name")
				if name == "" {
					return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "round 1 needs step1"}
				}
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"step2": elicitText("Step 2: what is your favourite colour?", "color"),
				}, RequestState: "round=2;name=" + name}, nil, nil
			case strings.HasPrefix(state, "round=2;name="):
				color := accepted(req.Params.InputResponses, "step2", "color")
				if color == "" {
					return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "round 2 needs step2"}
				}
				return textResult(strings.TrimPrefix(state, "round=2;name=") + " likes " + color), nil, nil
			default:
				return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("requestState %q was never issued", state)}
			}
		})

	mcp.AddTool(srv, &mcp.Tool{Name: "add_tool", Description: "Add a tool, which changes the tool list."},
		func(ctx context.Context, req *mcp.CallToolRequest, args addToolArgs) (*mcp.CallToolResult, any, error) {
			addExtraTool(srv, args.Name)
			return textResult("added " + args.Name), nil, nil
		})

	if prompts {
		srv.AddPrompt(&mcp.Prompt{Name: "topic", Description: "Ask for a topic, then suggest a question about it."},
			func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				b.round("topic")
				if topic := accepted(req.Params.InputResponses, "topic", "topic"); topic != "" {
					return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
						{Role: "user", Content: &mcp.TextContent{Text: "Tell me about " + topic + "."}}}}, nil
				}
				return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{
					"topic": elicitText("Which topic?", "topic"),
				}}, nil
			})
	}
	if resources {
		srv.AddResource(&mcp.Resource{URI: CachedURI, Name: "cached", Description: "May be cached, privately, for a minute.", MIMEType: "text/plain"},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Cacheable: mcp.Cacheable{TTLMs: 60000, CacheScope: "private"},
					Contents: []*mcp.ResourceContents{{URI: CachedURI, MIMEType: "text/plain", Text: "cached"}}}, nil
			})
		srv.AddResource(&mcp.Resource{URI: VaultURI, Name: "vault", Description: "Opens with a passphrase.", MIMEType: "text/plain"},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				b.round(VaultURI)
				if p := accepted(req.Params.InputResponses, "passphrase", "passphrase"); p != "" {
					return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
						URI: VaultURI, MIMEType: "text/plain", Text: "opened with " + p}}}, nil
				}
				return &mcp.ReadResourceResult{InputRequests: mcp.InputRequestMap{
					"passphrase": elicitText("The passphrase?", "passphrase"),
				}}, nil
			})
	}
}

// round records one round a modern tool, prompt or resource served.
func (b *Backend) round(what string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rounds[what]++
	b.notifyLocked()
}

// Rounds reports how many rounds of a modern tool, prompt or resource
// (by name or URI) the backend served: every call of its handler, the
// first and each retry. A request the gateway refused never gets here.
func (b *Backend) Rounds(what string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rounds[what]
}
