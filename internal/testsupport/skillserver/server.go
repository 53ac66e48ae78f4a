package skillserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Extension is the Skills extension's id.
const Extension = "io.modelcontextprotocol/skills"

// Options configure a skills server.
type Options struct {
	// Name is the serverInfo name.
	Name string
	// PageSize caps skills/list and resources/list pages (0: every skill
	// on one page, and go-sdk's default for resources).
	PageSize int
	// NoDirectoryRead leaves directoryRead out of the declaration; the
	// server then answers resources/directory/read -32601 as the SEP says
	// an undeclared server may.
	NoDirectoryRead bool
	// Stateful serves 2025-era sessions with Mcp-Session-Id (go-sdk's
	// stateful handler, which speaks no 2026-07-28); the default is
	// stateless, which serves both generations.
	Stateful bool
}

// NewServer is the go-sdk server of a catalog: every file a resource,
// the extension declared (with directoryRead unless noDirectoryRead).
func NewServer(name string, c *Catalog, pageSize int, noDirectoryRead bool) *mcp.Server {
	caps := &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{ListChanged: true}}
	settings := map[string]any{}
	if !noDirectoryRead {
		settings["directoryRead"] = true
	}
	caps.AddExtension(Extension, settings)
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"},
		&mcp.ServerOptions{Capabilities: caps, PageSize: pageSize})
	skillMDs := map[string]*Skill{}
	for _, s := range c.Skills() {
		skillMDs[s.Path+"/"+skillFile] = s
	}
	for _, f := range c.Files() {
		r := &mcp.Resource{URI: f.URI(), Name: f.Path, MIMEType: f.MIMEType}
		if s := skillMDs[f.Path]; s != nil {
			r.Name, r.Description = s.Name, s.Description // the SEP's SHOULDs
		}
		text := string(f.Data)
		srv.AddResource(r, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.URI, MIMEType: r.MIMEType, Text: text}}}, nil
		})
	}
	return srv
}

// Handler serves a catalog over Streamable HTTP: go-sdk's handler behind
// the front that answers the extension's methods. srv is the go-sdk
// server behind it.
func Handler(name string, c *Catalog, opts Options) (h http.Handler, srv *mcp.Server) {
	srv = NewServer(name, c, opts.PageSize, opts.NoDirectoryRead)
	h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: !opts.Stateful, JSONResponse: true})
	return &front{next: h, catalog: c, pageSize: opts.PageSize, directoryRead: !opts.NoDirectoryRead}, srv
}

// Serve serves a catalog on addr (port 0: a free one) at /mcp until ctx
// ends or stop is called; url is its MCP endpoint.
func Serve(ctx context.Context, addr string, c *Catalog, opts Options) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	h, _ := Handler(opts.Name, c, opts)
	mux.Handle("/mcp", h)
	base, cancel := context.WithCancel(ctx)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return
		}
	}()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-base.Done()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = hs.Shutdown(sctx)
		<-done
	}()
	return "http://" + ln.Addr().String() + "/mcp", func() { cancel(); <-stopped }, nil
}
