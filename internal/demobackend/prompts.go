package demobackend

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// GreetingNames are the completion suggestions for the greeting prompt's
// name argument. They share prefixes on purpose so prefix filtering is
// visible (e.g. "Al" matches two).
var GreetingNames = []string{"Alice", "Alicia", "Bob", "Carol", "Dave"}

// TemplateIDs are the completion suggestions for the template's id.
var TemplateIDs = []string{"123", "456"}

func addPrompts(srv *mcp.Server) {
	srv.AddPrompt(&mcp.Prompt{
		Name:        "greeting",
		Description: "Greet someone by name.",
		Arguments: []*mcp.PromptArgument{{
			Name:        "name",
			Description: "who to greet",
			Required:    true,
		}},
	}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		name := req.Params.Arguments["name"]
		if name == "" {
			// The SDK does not enforce required prompt arguments; answering
			// invalid params matches what real servers do.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `missing required argument "name"`}
		}
		return &mcp.GetPromptResult{
			Description: "A greeting",
			Messages: []*mcp.PromptMessage{{
				Role:    "user",
				Content: &mcp.TextContent{Text: "Hello, " + name + "!"},
			}},
		}, nil
	})
}

// completionHandler answers completion/complete for the features the
// server actually has. Unknown references get an empty list rather than an
// error, as the spec suggests, so that the gateway's fan-out is simple.
func completionHandler(prompts, resources bool) func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		ref, arg := req.Params.Ref, req.Params.Argument
		values := []string{}
		switch {
		case prompts && ref.Type == "ref/prompt" && ref.Name == "greeting" && arg.Name == "name":
			for _, n := range GreetingNames {
				if strings.HasPrefix(strings.ToLower(n), strings.ToLower(arg.Value)) {
					values = append(values, n)
				}
			}
		case resources && ref.Type == "ref/resource" && ref.URI == DataTemplate && arg.Name == "id":
			// Deliberately unfiltered: a fixed answer makes it easy to tell
			// which backend a completion was routed to.
			values = append(values, TemplateIDs...)
		}
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{
			Values: values,
			Total:  len(values),
		}}, nil
	}
}
