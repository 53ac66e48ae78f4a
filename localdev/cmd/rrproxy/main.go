// Command rrproxy is a tiny round-robin HTTP reverse proxy with no affinity,
// for local development and the conformance run (scripts/conformance.sh):
// it spreads one MCP session's requests over several gateway instances.
// docker-compose uses a real proxy instead.
//
//	rrproxy --listen 127.0.0.1:0 --target http://127.0.0.1:8081 --target http://127.0.0.1:8082
//
// Each request goes to the next target in turn. Responses are streamed
// (SSE works), the client's Host header is kept, and a target that refuses
// the connection (or resets a kept-alive one before answering: it died) is
// skipped: the request is retried on the next target, as a real balancer's
// "next upstream on error" does; nothing reached the client yet.
// Once ready it prints "rrproxy: listening on http://ADDR" on stdout; it
// stops on SIGINT or SIGTERM.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

type targets []*url.URL

func (t *targets) String() string { return fmt.Sprint(*t) }
func (t *targets) Set(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	*t = append(*t, u)
	return nil
}

func main() {
	var ts targets
	listen := flag.String("listen", "127.0.0.1:0", "listen `address`")
	flag.Var(&ts, "target", "backend base `URL` (repeat for each target)")
	flag.Parse()
	log.SetPrefix("rrproxy: ")
	if len(ts) == 0 {
		log.Fatal("at least one --target is required")
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: &balancer{targets: ts}, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		// Open SSE streams never finish on their own: give in-flight
		// requests a moment, then cut the rest.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	}()
	fmt.Printf("rrproxy: listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

type balancer struct {
	targets targets
	next    atomic.Uint64
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Buffer the body so that a retry on the next target can resend it.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "rrproxy: read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	start := b.next.Add(1)
	for i := range b.targets {
		target := b.targets[(int(start)+i)%len(b.targets)]
		refused := false
		proxy := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				pr.Out.Host = pr.In.Host // keep the client's Host, like a real balancer
				pr.SetXForwarded()
			},
			FlushInterval: -1, // flush every write: SSE must not be buffered
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				if isRefused(err) {
					refused = true // nothing was written: the caller tries the next target
					return
				}
				if r.Context().Err() == nil {
					log.Printf("%s %s via %s: %v", r.Method, r.URL.Path, target.Host, err)
				}
				w.WriteHeader(http.StatusBadGateway)
			},
		}
		req := r.Clone(r.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		proxy.ServeHTTP(w, req)
		if !refused {
			return
		}
		log.Printf("%s could not be reached; trying the next target", target.Host)
	}
	http.Error(w, "rrproxy: every target refused the connection", http.StatusBadGateway)
}

// isRefused reports whether err means the target could not be reached, so
// no answer came back: the dial failed, or a kept-alive connection to a
// target that has since died was reset or closed before any response (the
// ErrorHandler runs only before the response started). Like a real
// balancer's "next upstream on error", the request then goes to the next
// target; a dead target processed nothing.
func isRefused(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial") ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
