package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/tests/testsupport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var redisSrv *testsupport.RedisServer

func TestMain(m *testing.M) {
	redisSrv = testsupport.MustStartRedis()
	code := m.Run()
	redisSrv.Stop()
	os.Exit(code)
}

// newStore opens a Redis store on the shared test server, with a key
// prefix of its own so tests do not see each other's keys.
func newStore(t testing.TB) store.Store {
	st, _ := newPrefixedStore(t)
	return st
}

func newPrefixedStore(t testing.TB) (store.Store, string) {
	t.Helper()
	prefix := "t" + fmt.Sprint(time.Now().UnixNano())
	st, err := store.NewRedis(redisSrv.URL(), store.RedisOptions{KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, prefix
}

// fixture is a router over real backends and a real Redis store.
type fixture struct {
	t        testing.TB
	store    store.Store
	router   *router.Router
	vhost    string
	prefix   string // store key prefix, for a second instance on the same keys
	backends map[string]*testsupport.Backend
	config   *router.VirtualHost // what the router was given, for a second instance
}

type backendSpec struct {
	key     string
	opts    testsupport.BackendOptions
	aliases map[string]string
	adjust  func(*router.Backend)
}

func newFixture(t testing.TB, specs ...backendSpec) *fixture {
	return newFixtureOpts(t, router.Options{}, specs...)
}

func newFixtureOpts(t testing.TB, opts router.Options, specs ...backendSpec) *fixture {
	t.Helper()
	f := &fixture{t: t, vhost: "vh", backends: map[string]*testsupport.Backend{}}
	if opts.Store == nil {
		opts.Store, f.prefix = newPrefixedStore(t)
	}
	f.store = opts.Store
	vh := &router.VirtualHost{Name: f.vhost, Backends: map[string]*router.Backend{}}
	for _, s := range specs {
		if s.opts.Name == "" {
			s.opts.Name = s.key
		}
		b := testsupport.StartBackend(t, s.opts)
		f.backends[s.key] = b
		cfg := &router.Backend{Key: s.key, URL: b.URL, Transport: router.TransportStreamableHTTP,
			Timeout: 5 * time.Second, Session: router.SessionPerRequest, ToolNameAliases: s.aliases}
		if s.opts.LegacySSE {
			cfg.Transport = router.TransportSSE
		}
		if s.adjust != nil {
			s.adjust(cfg)
		}
		vh.Backends[s.key] = cfg
	}
	f.config = vh
	f.router = router.New(map[string]*router.VirtualHost{f.vhost: vh}, opts)
	t.Cleanup(f.router.Close)
	return f
}

// initialize opens a session of principal "alice" and returns its id and
// the initialize result.
func (f *fixture) initialize(hdr http.Header) (string, map[string]any) {
	f.t.Helper()
	return f.initializeAs("alice", hdr)
}

// initializeAs opens a session of principal.
func (f *fixture) initializeAs(principal string, hdr http.Header) (string, map[string]any) {
	f.t.Helper()
	req := &jsonrpc.Request{ID: mustID(1), Method: "initialize",
		Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}`)}
	sess, resp := f.router.Initialize(context.Background(), f.vhost, principal, hdr, req)
	if resp.Error != nil || sess == nil {
		f.t.Fatalf("initialize: %v", resp.Error)
	}
	var res map[string]any
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		f.t.Fatal(err)
	}
	return sess.ID, res
}

// call sends one request on a session. The session is read back from the
// store first, as a fresh instance would.
func (f *fixture) call(sid, method string, params any) *jsonrpc.Response {
	f.t.Helper()
	return f.callHdr(sid, nil, method, params)
}

func (f *fixture) callHdr(sid string, hdr http.Header, method string, params any) *jsonrpc.Response {
	f.t.Helper()
	return callOn(f.t, f.router, f.store, sid, hdr, method, params)
}

func callOn(t testing.TB, r *router.Router, st store.Store, sid string, hdr http.Header, method string, params any) *jsonrpc.Response {
	t.Helper()
	sess, err := st.LoadSession(context.Background(), sid, time.Hour)
	if err != nil {
		t.Fatalf("load session: %v", err)
	}
	var raw json.RawMessage
	if params != nil {
		raw, _ = json.Marshal(params)
	}
	if hdr == nil {
		hdr = http.Header{}
	}
	return r.Handle(context.Background(), &router.Call{Session: sess, Header: hdr,
		Request: &jsonrpc.Request{ID: mustID(7), Method: method, Params: raw}})
}

// result decodes a successful response or fails the test.
func result(t testing.TB, resp *jsonrpc.Response) map[string]any {
	t.Helper()
	if resp.Error != nil {
		t.Fatalf("unexpected error: %v", resp.Error)
	}
	var m map[string]any
	if err := json.Unmarshal(resp.Result, &m); err != nil {
		t.Fatalf("decode result %s: %v", resp.Result, err)
	}
	return m
}

// rpcErr returns the JSON-RPC error of a response or fails the test.
func rpcErr(t testing.TB, resp *jsonrpc.Response) *jsonrpc.Error {
	t.Helper()
	if resp.Error == nil {
		t.Fatalf("expected an error, got result %s", resp.Result)
	}
	e, ok := resp.Error.(*jsonrpc.Error)
	if !ok {
		t.Fatalf("error %T is not a *jsonrpc.Error", resp.Error)
	}
	return e
}

// names lists the "name" of each item of a list result field.
func names(t testing.TB, res map[string]any, field string) []string {
	t.Helper()
	items, _ := res[field].([]any)
	var out []string
	for _, it := range items {
		out = append(out, it.(map[string]any)["name"].(string))
	}
	return out
}

// text returns the first text content of a tools/call result.
func text(t testing.TB, res map[string]any) string {
	t.Helper()
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("no content in %v", res)
	}
	return content[0].(map[string]any)["text"].(string)
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func mustID(n int) jsonrpc.ID {
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		panic(err)
	}
	return id
}
