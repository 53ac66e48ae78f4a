package demobackend

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/internal/localserve"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where [Start] serves the MCP endpoint, matching the conventional
// Streamable HTTP path so that configured backend URLs look like real ones.
const Path = "/mcp"

// Handler serves srv over Streamable HTTP. In stateless mode the backend
// issues no Mcp-Session-Id, which is the shape of backend the gateway's
// per-request session mode is designed for; stateful mode lets tests check
// session reuse and DELETE on close.
func Handler(srv *mcp.Server, stateless bool) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: stateless})
}

// withLatency holds every POST d before next serves it (d 0: next). A
// request whose client gives up meanwhile is not served.
func withLatency(d time.Duration, next http.Handler) http.Handler {
	if d <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// withInitDelay holds every POST that carries an initialize request d
// before next serves it (d 0: next), as FastMCP answers initialize only
// after about a second; other requests are not held.
func withInitDelay(d time.Duration, next http.Handler) http.Handler {
	if d <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				http.Error(w, "demo backend: reading body: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(body, &msg) == nil && wire.MethodOf(msg.Method).Handshake {
				t := time.NewTimer(d)
				defer t.Stop()
				select {
				case <-t.C:
				case <-r.Context().Done():
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Start serves a new demo server named name on addr ("127.0.0.1:0" picks a
// free port) and returns the URL of its MCP endpoint. The server stops when
// stop is called or ctx is done, whichever comes first; stop waits until
// every goroutine Start created, including the MCP sessions, has finished,
// and may be called more than once.
func Start(ctx context.Context, addr, name string, opts Options) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := NewServer(name, opts)
	mux := http.NewServeMux()
	mux.Handle(Path, withLatency(opts.Latency, withInitDelay(opts.InitDelay, Handler(srv, opts.Stateless))))
	url, stop = localserve.Serve(ctx, ln, mux, localserve.Options{
		Path: Path,
		OnServeError: func(err error) {
			if opts.Logger != nil {
				opts.Logger.Error("demo backend stopped serving", "name", name, "err", err)
			}
		},
		// Stateful sessions outlive their HTTP requests; close them so
		// their goroutines end with the server.
		AfterStop: func() {
			for ss := range srv.Sessions() {
				ss.Close()
			}
		},
	})
	return url, stop, nil
}
