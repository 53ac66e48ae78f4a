package main

import (
	"context"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// The debug listener serves Go's runtime profiles (net/http/pprof) on an
// address of its own, off unless --debug-listen names one. A gateway's CPU
// cost is measured on the running process (make bench's BENCH_PROFILE
// fetches /debug/pprof/profile from it), and a production instance that
// burns CPU can be asked where without a rebuild. It is a separate
// listener, never the gateway's port, because profiles show request data
// and symbol names: bind it to localhost or a private interface.

// startDebugListener serves the profiles on addr until ctx ends; it
// returns the address it listens on (addr may ask for port 0).
func startDebugListener(ctx context.Context, addr string) (net.Addr, func(), error) {
	mux := http.NewServeMux()
	routeProfiles(mux)
	return serveAside(ctx, addr, mux)
}

// routeProfiles registers Go's runtime profiles under /debug/pprof/.
func routeProfiles(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// serveAside serves h on a listener of its own at addr until ctx ends or
// the returned stop is called (which waits for the server to end); it
// returns the address it listens on.
func serveAside(ctx context.Context, addr string, h http.Handler) (net.Addr, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	stop := func() {
		_ = srv.Close() // a profile in progress is cut short
		<-done
	}
	return ln.Addr(), stop, nil
}
