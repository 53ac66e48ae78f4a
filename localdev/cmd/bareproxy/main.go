// Command bareproxy is the baseline of make bench's CPU comparison: a bare
// net/http/httputil.ReverseProxy in front of the same backends the gateway
// fronts, flushing every write (SSE works), with nothing else. What the
// gateway spends per relayed call beyond what this spends is the
// gateway's own cost (docs/design/benchmarks-history.md, issue 24).
//
//	bareproxy --listen 127.0.0.1:0 --route /stateless=http://127.0.0.1:9001/mcp
//
// A request whose path starts with a route's prefix goes to its URL (the
// prefix replaced by the URL's path). Once ready it prints "bareproxy:
// listening on http://ADDR" on stdout; it stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

type routes map[string]*url.URL

func (r routes) String() string { return fmt.Sprint(map[string]*url.URL(r)) }
func (r routes) Set(s string) error {
	prefix, target, ok := strings.Cut(s, "=")
	u, err := url.Parse(target)
	if !ok || !strings.HasPrefix(prefix, "/") || err != nil || u.Host == "" {
		return fmt.Errorf("want /prefix=http://host:port/path, not %q", s)
	}
	r[prefix] = u
	return nil
}

func main() {
	rs := routes{}
	listen := flag.String("listen", "127.0.0.1:0", "listen `address`")
	flag.Var(rs, "route", "`/prefix=URL`: requests under prefix go to URL (repeatable)")
	flag.Parse()
	if len(rs) == 0 {
		log.Fatal("bareproxy: no --route")
	}
	// The gateway's backend transport keeps up to 64 idle connections per
	// backend (router/upstream/client.go); http.DefaultTransport keeps 2,
	// so at make bench's 16 workers a default proxy would open and close
	// a connection for most calls and look dearer than it is.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns, transport.MaxIdleConnsPerHost = 256, 64
	mux := http.NewServeMux()
	for prefix, u := range rs {
		target := u
		rp := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL.Scheme, pr.Out.URL.Host = target.Scheme, target.Host
				pr.Out.URL.Path = target.Path + strings.TrimPrefix(pr.In.URL.Path, prefix)
				pr.Out.Host = target.Host
			},
			FlushInterval: -1, // every write: event streams pass as they come
			Transport:     transport,
		}
		mux.Handle(prefix, rp)
		mux.Handle(prefix+"/", rp)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); _ = srv.Shutdown(context.Background()) }()
	fmt.Printf("bareproxy: listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
