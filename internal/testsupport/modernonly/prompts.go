package modernonly

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (s *Server) addPrompts() {
	srv := s.mcp
	srv.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A prompt without arguments"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A simple test prompt", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "This is a simple prompt for testing."}},
			}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Title: "Prompt With Arguments", Description: "A prompt with two required arguments",
		Arguments: []*mcp.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			a := req.Params.Arguments
			return &mcp.GetPromptResult{Description: "A prompt with arguments", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])}},
			}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource", Description: "A prompt that embeds the resource it is given",
		Arguments: []*mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A prompt with an embedded resource", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
					URI: req.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."}}},
				{Role: "user", Content: &mcp.TextContent{Text: "Please process the embedded resource above."}},
			}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Title: "Prompt With Image", Description: "A prompt with image content"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A prompt with an image", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.ImageContent{Data: png(), MIMEType: "image/png"}},
				{Role: "user", Content: &mcp.TextContent{Text: "Please analyze the image above."}},
			}}, nil
		})
	// MRTR on a request that is not a tool call (SEP-2322).
	srv.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt", Description: "MRTR: asks for context (elicitation) before it returns its messages"},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if answer := accepted(req.Params.InputResponses, "user_context"); answer != nil {
				c, _ := answer["context"].(string)
				return &mcp.GetPromptResult{Description: "A prompt with elicited context", Messages: []*mcp.PromptMessage{
					{Role: "user", Content: &mcp.TextContent{Text: "Context: " + c}},
				}}, nil
			}
			return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"user_context": &mcp.ElicitParams{
				Message: "Please provide context for the prompt", RequestedSchema: nameSchema("context")}}}, nil
		})
}
