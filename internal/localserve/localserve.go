// Package localserve runs an http.Handler on a listener for the gateway's
// local servers (the demo backends, the modern-only fixture): until its
// context ends or stop is called, with request contexts that stop cancels
// first, so long-lived streams (SSE GETs, listens) do not hold a graceful
// shutdown until its timeout, and a URL a client can dial.
package localserve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ShutdownTimeout bounds a graceful stop; requests still running after it
// are cut off, so a stop never hangs a test or a container.
const ShutdownTimeout = 5 * time.Second

// Options tune Serve.
type Options struct {
	// Path is appended to the URL Serve returns ("/mcp").
	Path string
	// OnServeError is told when serving ends other than by a stop.
	OnServeError func(error)
	// Run, when set, is started on a goroutine of its own with the base
	// context (ended by stop) and waited for by stop.
	Run func(base context.Context)
	// AfterStop runs once serving and Run have ended (closing what the
	// handler keeps beyond its requests).
	AfterStop func()
}

// Serve serves h on ln and returns its URL (a wildcard address becomes
// 127.0.0.1) and stop, which cancels the request contexts, shuts the
// server down within ShutdownTimeout, waits for every goroutine Serve
// started and runs AfterStop; it may be called more than once. The
// server also stops when ctx is done.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, opts Options) (url string, stop func()) {
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && opts.OnServeError != nil {
			opts.OnServeError(err)
		}
	})
	if opts.Run != nil {
		wg.Go(func() { opts.Run(base) })
	}
	stopped := make(chan struct{})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(stopped)
			cancelBase()
			sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
			defer cancel()
			if hs.Shutdown(sctx) != nil {
				hs.Close()
			}
			wg.Wait()
			if opts.AfterStop != nil {
				opts.AfterStop()
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
	return "http://" + DialableAddr(ln.Addr()) + opts.Path, stop
}

// DialableAddr turns a wildcard listen address (":9001") into one a client
// can connect to.
func DialableAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}
