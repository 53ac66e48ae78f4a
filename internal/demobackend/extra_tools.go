package demobackend

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Extra tools make a demo backend list as many tools as a large real
// server does, with names, descriptions and input schemas of realistic
// size, so that list pages weigh what real ones weigh (make bench's
// list-scale scenarios: 200 a backend, about 760 bytes a tool). Each is
// a working tool that says which tool it is and what it was given.

var (
	extraVerbs = []string{"search", "get", "list", "create", "update", "delete", "archive", "export",
		"import", "summarize", "assign", "close", "reopen", "comment_on", "tag", "move", "copy", "share",
		"watch", "validate"}
	extraNouns = []string{"issues", "pull_requests", "invoices", "customers", "tickets",
		"documents", "calendar_events", "deployments", "alerts", "dashboards"}
)

// extraToolName is the i-th extra tool's name: every verb with every
// noun (200 names), then the same with a number.
func extraToolName(i int) string {
	n := len(extraVerbs) * len(extraNouns)
	name := extraVerbs[i%len(extraVerbs)] + "_" + extraNouns[i/len(extraVerbs)%len(extraNouns)]
	if i >= n {
		name = fmt.Sprintf("%s_%d", name, i/n+1)
	}
	return name
}

// extraTool describes the i-th extra tool.
func extraTool(i int) *mcp.Tool {
	verb := extraVerbs[i%len(extraVerbs)]
	noun := extraNouns[i/len(extraVerbs)%len(extraNouns)]
	props := map[string]any{
		"query": map[string]any{
			"type":        "string",
			"description": fmt.Sprintf("Free text matched against the %s' title, body and labels; quoted phrases match exactly.", noun),
		},
		"limit": map[string]any{
			"type": "integer", "minimum": 1, "maximum": 100, "default": 20,
			"description": "The most results to return.",
		},
		"state": map[string]any{
			"type": "string", "enum": []string{"open", "closed", "all"}, "default": "open",
		},
	}
	required := []string{"query"}
	if i%3 == 0 {
		props["project_id"] = map[string]any{
			"type": "string", "pattern": "^[a-z0-9-]{3,40}$",
			"description": "The project the request is about, as it appears in its URL.",
		}
		required = append(required, "project_id")
	}
	return &mcp.Tool{
		Name:  extraToolName(i),
		Title: fmt.Sprintf("%s %s", verb, noun),
		Description: fmt.Sprintf("Use this tool to %s %s in the workspace the user is signed in to. "+
			"Results are paginated and sorted by last update; fields the caller may not see are left out.", verb, noun),
		InputSchema: map[string]any{
			"type":                 "object",
			"properties":           props,
			"required":             required,
			"additionalProperties": false,
		},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: verb == "search" || verb == "get" || verb == "list"},
	}
}

// addExtraTools adds n extra tools to srv.
func addExtraTools(srv *mcp.Server, n int) {
	for i := range n {
		t := extraTool(i)
		srv.AddTool(t, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content: []mcp.Content{&mcp.TextContent{Text: t.Name + " " + string(req.Params.Arguments)}},
			}, nil
		})
	}
}
