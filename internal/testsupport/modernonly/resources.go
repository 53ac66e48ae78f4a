package modernonly

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fixture's resources: two static ones, a template, and WatchedURI,
// whose content names its revision.
const (
	staticTextURI   = "test://static-text"
	staticBinaryURI = "test://static-binary"
	templatePrefix  = "test://template/"
	templateSuffix  = "/data"
)

func (s *Server) addResources() {
	srv := s.mcp
	srv.AddResource(&mcp.Resource{Name: "static-text", Description: "A static text resource", MIMEType: "text/plain", URI: staticTextURI},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return contents(req.Params.URI, "text/plain", "This is the content of the static text resource.", nil), nil
		})
	srv.AddResource(&mcp.Resource{Name: "static-binary", Description: "A static binary resource (a PNG)", MIMEType: "image/png", URI: staticBinaryURI},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return contents(req.Params.URI, "image/png", "", png()), nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "template", Description: "A resource template: {id} is substituted",
		MIMEType: "application/json", URITemplate: templatePrefix + "{id}" + templateSuffix},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id, ok := templateID(req.Params.URI)
			if !ok {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			return contents(req.Params.URI, "application/json",
				fmt.Sprintf(`{"id": %q, "templateTest": true, "data": "Data for ID: %s"}`, id, id), nil), nil
		})
	srv.AddResource(&mcp.Resource{Name: "watched-resource", Description: "A resource that changes on its own (subscribe to it)", MIMEType: "text/plain", URI: WatchedURI},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return contents(req.Params.URI, "text/plain", fmt.Sprintf("Watched resource content, revision %d", s.watched.Load()), nil), nil
		})
}

func contents(uri, mimeType, text string, blob []byte) *mcp.ReadResourceResult {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mimeType, Text: text, Blob: blob}}}
}

// isResource reports whether uri names one of the fixture's resources.
func isResource(uri string) bool {
	switch uri {
	case staticTextURI, staticBinaryURI, WatchedURI:
		return true
	}
	_, ok := templateID(uri)
	return ok
}

// templateID is {id} of a URI of the template, test://template/{id}/data.
func templateID(uri string) (string, bool) {
	id, ok := strings.CutPrefix(uri, templatePrefix)
	if !ok {
		return "", false
	}
	id, ok = strings.CutSuffix(id, templateSuffix)
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

// complete acknowledges completion/complete with no values: the suite only
// checks that the answer has a values array.
func complete(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
}
