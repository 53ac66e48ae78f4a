package demobackend

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where [Start] serves the MCP endpoint, matching the conventional
// Streamable HTTP path so that configured backend URLs look like real ones.
const Path = "/mcp"

// shutdownTimeout bounds a graceful stop; requests still running after it
// are cut off so that stop never hangs a test or a container.
const shutdownTimeout = 5 * time.Second

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
	mux.Handle(Path, withLatency(opts.Latency, Handler(srv, opts.Stateless)))

	// Request contexts derive from baseCtx so that cancelling it ends the
	// long-lived SSE GETs that would otherwise make Shutdown wait.
	baseCtx, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && opts.Logger != nil {
			opts.Logger.Error("demo backend stopped serving", "name", name, "err", err)
		}
	}()

	stopped := make(chan struct{})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(stopped)
			cancelBase()
			sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			if hs.Shutdown(sctx) != nil {
				hs.Close()
			}
			<-served
			// Stateful sessions outlive their HTTP requests; close them so
			// their goroutines end with the server.
			for ss := range srv.Sessions() {
				ss.Close()
			}
		})
	}
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-stopped:
		}
	}()
	return "http://" + dialableAddr(ln.Addr()) + Path, stop, nil
}

// dialableAddr turns a wildcard listen address (":9001") into one a client
// can connect to, so the URL Start returns is usable as is.
func dialableAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}
