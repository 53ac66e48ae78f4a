package testsupport

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// RoundRobin is a plain load balancer with no affinity: each request goes
// to the next live target in turn. A target that refuses the connection is
// skipped for that request (as a health-checked balancer would), so tests
// can kill a gateway instance mid-session.
type RoundRobin struct {
	URL string

	mu      sync.Mutex
	targets []*url.URL
	next    atomic.Uint64
	hits    map[string]int
	log     []Forwarded
	srv     *httptest.Server
}

// Forwarded is one request the balancer passed to a target.
type Forwarded struct {
	// Target is the host:port of the target that answered.
	Target string
	// Method is the JSON-RPC method of a POSTed request ("" for anything
	// else: a GET, a response, a batch).
	Method string
	// Body is the request's body as the client sent it.
	Body []byte
}

// StartRoundRobin starts a balancer in front of the given base URLs.
func StartRoundRobin(t testing.TB, targets ...string) *RoundRobin {
	t.Helper()
	rr := &RoundRobin{hits: map[string]int{}}
	rr.SetTargets(targets...)
	rr.srv = httptest.NewServer(http.HandlerFunc(rr.serve))
	rr.URL = rr.srv.URL
	t.Cleanup(rr.srv.Close)
	return rr
}

// SetTargets replaces the target set (e.g. after restarting instances).
func (rr *RoundRobin) SetTargets(targets ...string) {
	var us []*url.URL
	for _, t := range targets {
		u, err := url.Parse(t)
		if err != nil {
			panic(err)
		}
		us = append(us, u)
	}
	rr.mu.Lock()
	rr.targets = us
	rr.mu.Unlock()
}

// Forwarded returns every request passed on so far, in the order the
// targets answered them (started them, for streams).
func (rr *RoundRobin) Forwarded() []Forwarded {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]Forwarded(nil), rr.log...)
}

// Hits returns how many requests each target served.
func (rr *RoundRobin) Hits() map[string]int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	out := map[string]int{}
	for k, v := range rr.hits {
		out[k] = v
	}
	return out
}

var errRefused = errors.New("target refused")

func (rr *RoundRobin) serve(w http.ResponseWriter, r *http.Request) {
	rr.mu.Lock()
	targets := append([]*url.URL(nil), rr.targets...)
	rr.mu.Unlock()
	if len(targets) == 0 {
		http.Error(w, "no targets", http.StatusBadGateway)
		return
	}
	// Buffer the body so a retry on the next target can resend it.
	body, err := readAllAndClose(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	start := rr.next.Add(1)
	for i := range targets {
		target := targets[(int(start)+i)%len(targets)]
		refused := false
		proxy := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				pr.Out.Host = r.Host // keep the client's Host, like a real balancer
			},
			FlushInterval: -1,
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				refused = true
			},
		}
		r.Body = newBody(body)
		rec := &refusalGuard{ResponseWriter: w, answered: func() { rr.record(target.Host, r.Method, body) }}
		proxy.ServeHTTP(rec, r)
		if !refused {
			rec.answer() // an answer with no body nor explicit header
			return
		}
		if rec.wrote {
			return // response already started: cannot retry
		}
	}
	http.Error(w, errRefused.Error(), http.StatusBadGateway)
}

// record counts a request a target answered.
func (rr *RoundRobin) record(target, httpMethod string, body []byte) {
	f := Forwarded{Target: target, Body: body}
	if httpMethod == http.MethodPost {
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &m) == nil {
			f.Method = m.Method
		}
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.hits[target]++
	rr.log = append(rr.log, f)
}

// refusalGuard records whether anything reached the client, and reports
// the answer once when it starts (so a long stream is recorded when it
// opens, not when it ends).
type refusalGuard struct {
	http.ResponseWriter
	wrote    bool
	answered func()
}

func (g *refusalGuard) answer() {
	if g.answered != nil {
		g.answered()
		g.answered = nil
	}
}

func (g *refusalGuard) WriteHeader(code int) {
	g.wrote = true
	g.answer()
	g.ResponseWriter.WriteHeader(code)
}
func (g *refusalGuard) Write(b []byte) (int, error) {
	g.wrote = true
	g.answer()
	return g.ResponseWriter.Write(b)
}
func (g *refusalGuard) Unwrap() http.ResponseWriter { return g.ResponseWriter }
