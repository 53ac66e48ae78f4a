package demobackend

import (
	"context"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// CounterURI is the resource holding the counter value.
	CounterURI = "test://counter"
	// DataTemplate is the URI template of the template-data resource.
	DataTemplate = "test://template/{id}/data"

	dataPrefix = "test://template/"
	dataSuffix = "/data"
)

func addResources(srv *mcp.Server, st *state) {
	srv.AddResource(&mcp.Resource{
		URI:         CounterURI,
		Name:        "counter",
		Description: "The current value of this backend's counter.",
		MIMEType:    "text/plain",
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		st.mu.Lock()
		value := st.counter
		st.mu.Unlock()
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
			URI: CounterURI, MIMEType: "text/plain", Text: strconv.Itoa(value),
		}}}, nil
	})

	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: DataTemplate,
		Name:        "template-data",
		Description: "Data for an id; the text names the id so routing can be checked.",
		MIMEType:    "text/plain",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		id, ok := strings.CutPrefix(uri, dataPrefix)
		if ok {
			id, ok = strings.CutSuffix(id, dataSuffix)
		}
		if !ok || id == "" || strings.Contains(id, "/") {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
			URI: uri, MIMEType: "text/plain", Text: "data for " + id,
		}}}, nil
	})
}
