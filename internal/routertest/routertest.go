// Package routertest builds gateway instances for tests: a router and its
// session runtime over one store, on real go-sdk backends and a real
// redis-server, composed the way the handler composes them. The tests of
// router and handler/session share it.
package routertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/gateway/handler/session"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Spec describes one backend of the fixture's virtual host.
type Spec struct {
	Key     string
	Opts    testsupport.BackendOptions
	Aliases map[string]string
	Adjust  func(*router.Backend)
}

// Options configure each part of an instance.
type Options struct {
	Router   router.Options
	Sessions session.Options
	// Parks configures the instance's parked calls (its Store is the
	// instance's).
	Parks router.ParkOptions
}

// Instance is one gateway instance: what cmd/internal/app assembles.
type Instance struct {
	Store    store.Store
	Router   *router.Router
	Sessions *session.Runtime
	// Parks holds the 2026-07-28 calls parked on this instance
	// (router.ModernClient.Parks).
	Parks *router.Parking
}

// Fixture is a virtual host over real backends, with a first instance on a
// Redis store of its own key prefix; NewInstance adds more on the same keys.
type Fixture struct {
	*Instance
	T        testing.TB
	RedisURL string
	Prefix   string
	VHost    string
	Config   *router.VirtualHost
	Backends map[string]*testsupport.Backend
}

var prefixes atomic.Int64

// New starts the backends and the first instance. opts.Router.Store, when
// set, is used as the first instance's store instead of a new one.
func New(t testing.TB, redisURL string, opts Options, specs ...Spec) *Fixture {
	testsupport.SkipShort(t)
	t.Helper()
	f := &Fixture{T: t, RedisURL: redisURL, VHost: "vh", Backends: map[string]*testsupport.Backend{},
		Prefix: fmt.Sprintf("t%d-%d", time.Now().UnixNano(), prefixes.Add(1))}
	vh := &router.VirtualHost{Name: f.VHost, Backends: map[string]*router.Backend{}}
	for _, s := range specs {
		if s.Opts.Name == "" {
			s.Opts.Name = s.Key
		}
		b := testsupport.StartBackend(t, s.Opts)
		f.Backends[s.Key] = b
		cfg := &router.Backend{
			Config:  upstream.Config{Key: s.Key, URL: b.URL, Transport: upstream.TransportStreamableHTTP, Timeout: 5 * time.Second},
			Session: router.SessionPerRequest, ToolNameAliases: s.Aliases}
		if s.Opts.LegacySSE {
			cfg.Transport = upstream.TransportSSE
		}
		if s.Adjust != nil {
			s.Adjust(cfg)
		}
		vh.Backends[s.Key] = cfg
	}
	f.Config = vh
	st, _ := opts.Router.Store.(store.Store) // a test's own store, whole; nil: a new one
	f.Instance = f.NewInstanceOn(st, opts)
	return f
}

// NewStore opens a Redis store on the fixture's keys: another instance's
// view of the same sessions.
func (f *Fixture) NewStore() store.Store {
	f.T.Helper()
	st, err := store.NewRedis(f.RedisURL, store.RedisOptions{KeyPrefix: f.Prefix})
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() { st.Close() })
	return st
}

// NewInstance starts another gateway instance on the same store keys and
// virtual host: another instance, as far as anyone can tell.
func (f *Fixture) NewInstance(opts Options) *Instance { return f.NewInstanceOn(nil, opts) }

// NewInstanceOn is NewInstance on a given store (nil: a new one).
func (f *Fixture) NewInstanceOn(st store.Store, opts Options) *Instance {
	f.T.Helper()
	return StartInstance(f.T, st, f.vhosts(), opts, f.NewStore)
}

func (f *Fixture) vhosts() map[string]*router.VirtualHost {
	return map[string]*router.VirtualHost{f.VHost: f.Config}
}

// StartInstance assembles and starts an instance over vhosts on st (when
// nil, newStore makes one), closing it when the test ends.
func StartInstance(t testing.TB, st store.Store, vhosts map[string]*router.VirtualHost, opts Options, newStore func() store.Store) *Instance {
	t.Helper()
	if st == nil {
		st = newStore()
	}
	opts.Router.Store = st
	if opts.Sessions.SessionTTL == 0 {
		opts.Sessions.SessionTTL = opts.Router.SessionTTL
	}
	in := &Instance{Store: st, Router: router.New(vhosts, opts.Router)}
	in.Sessions = session.New(st, in.Router, opts.Sessions)
	opts.Parks.Store = st
	parks, err := router.NewParking(opts.Parks)
	if err != nil {
		t.Fatal(err)
	}
	in.Parks = parks
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := in.Router.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := in.Sessions.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := in.Parks.Subscribe(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Sessions.Close()
		in.Parks.Close()
		in.Router.Close()
	})
	return in
}

// Initialize opens a session of principal "alice" on the first instance
// and returns its id and the initialize result.
func (f *Fixture) Initialize(hdr http.Header) (store.SessionID, map[string]any) {
	f.T.Helper()
	return f.InitializeAs("alice", hdr)
}

// InitializeAs opens a session of principal.
func (f *Fixture) InitializeAs(principal string, hdr http.Header) (store.SessionID, map[string]any) {
	f.T.Helper()
	sid, res := f.initialize(principal, `{}`, hdr)
	return sid, res
}

// InitCaps opens a session of "alice" whose client advertises caps.
func (f *Fixture) InitCaps(caps string) store.SessionID {
	f.T.Helper()
	sid, _ := f.initialize("alice", caps, nil)
	return sid
}

func (f *Fixture) initialize(principal, caps string, hdr http.Header) (store.SessionID, map[string]any) {
	f.T.Helper()
	if hdr == nil {
		hdr = http.Header{}
	}
	req := &jsonrpc.Request{ID: MustID(1), Method: "initialize",
		Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"test","version":"1"}}`)}
	sess, resp := f.Router.Initialize(context.Background(), f.VHost, principal, hdr, req)
	if resp.Error != nil || sess == nil {
		f.T.Fatalf("initialize: %v", resp.Error)
	}
	var res map[string]any
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		f.T.Fatal(err)
	}
	return sess.ID, res
}

// Call sends one request (id 7) on a session through the first instance.
// The session is read back from the store first, as a fresh instance would.
func (f *Fixture) Call(sid store.SessionID, method string, params any) *jsonrpc.Response {
	f.T.Helper()
	return f.CallHdr(sid, nil, method, params)
}

// CallHdr is Call with the client's request headers.
func (f *Fixture) CallHdr(sid store.SessionID, hdr http.Header, method string, params any) *jsonrpc.Response {
	f.T.Helper()
	return f.Instance.Call(f.T, sid, MustID(7), hdr, method, params, nil)
}

// Call runs one request of session sid on this instance as the handler
// does: tracked for cancellation, with the session runtime for the
// backend's server-to-client requests, s (may be nil) for its stream.
func (in *Instance) Call(t testing.TB, sid store.SessionID, id jsonrpc.ID, hdr http.Header, method string, params any, s router.Stream) *jsonrpc.Response {
	t.Helper()
	return in.call(t, sid, id, hdr, nil, method, params, s)
}

// CallClaims runs one request of session sid on this instance for a
// caller whose token carried claims (what access rules judge).
func (in *Instance) CallClaims(t testing.TB, sid store.SessionID, claims map[string]any, method string, params any) *jsonrpc.Response {
	t.Helper()
	return in.call(t, sid, MustID(7), nil, claims, method, params, nil)
}

func (in *Instance) call(t testing.TB, sid store.SessionID, id jsonrpc.ID, hdr http.Header, claims map[string]any, method string, params any, s router.Stream) *jsonrpc.Response {
	t.Helper()
	sess := in.Load(t, sid)
	var raw json.RawMessage
	if params != nil {
		raw, _ = json.Marshal(params)
	}
	if hdr == nil {
		hdr = http.Header{}
	}
	ctx, done := in.Sessions.Track(context.Background(), sess, id)
	defer done()
	return in.Router.Handle(ctx, &router.Call{Caller: &router.SessionCaller{Session: sess, Runtime: in.Sessions}, Claims: claims, Header: hdr, Stream: s,
		Request: &jsonrpc.Request{ID: id, Method: method, Params: raw}})
}

// Notify posts a client notification of session sid to this instance.
func (in *Instance) Notify(t testing.TB, sid store.SessionID, method string, params any) {
	t.Helper()
	raw, _ := json.Marshal(params)
	if err := in.Sessions.Notify(context.Background(), in.Load(t, sid), &jsonrpc.Request{Method: method, Params: raw}); err != nil {
		t.Fatal(err)
	}
}

// Load reads session sid back from the store.
func (in *Instance) Load(t testing.TB, sid store.SessionID) *store.Session {
	t.Helper()
	sess, err := in.Store.LoadSession(context.Background(), sid, time.Hour)
	if err != nil {
		t.Fatalf("load session: %v", err)
	}
	return sess
}

// CallOn sends one request through a bare router (no session runtime).
func CallOn(t testing.TB, r *router.Router, st store.Store, sid store.SessionID, hdr http.Header, method string, params any) *jsonrpc.Response {
	t.Helper()
	in := &Instance{Store: st, Router: r}
	sess := in.Load(t, sid)
	var raw json.RawMessage
	if params != nil {
		raw, _ = json.Marshal(params)
	}
	if hdr == nil {
		hdr = http.Header{}
	}
	return r.Handle(context.Background(), &router.Call{Caller: &router.SessionCaller{Session: sess}, Header: hdr,
		Request: &jsonrpc.Request{ID: MustID(7), Method: method, Params: raw}})
}

// Result decodes a successful response or fails the test.
func Result(t testing.TB, resp *jsonrpc.Response) map[string]any {
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

// RPCErr returns the JSON-RPC error of a response or fails the test.
func RPCErr(t testing.TB, resp *jsonrpc.Response) *jsonrpc.Error {
	t.Helper()
	if resp.Error == nil {
		t.Fatalf("expected an error, got result %s", resp.Result)
	}
	var e *jsonrpc.Error
	if !errors.As(resp.Error, &e) {
		t.Fatalf("error %T is not a *jsonrpc.Error", resp.Error)
	}
	return e
}

// Names lists the "name" of each item of a list result field.
func Names(t testing.TB, res map[string]any, field string) []string {
	t.Helper()
	items, _ := res[field].([]any)
	var out []string
	for _, it := range items {
		out = append(out, it.(map[string]any)["name"].(string))
	}
	return out
}

// Text returns the first text content of a tools/call result.
func Text(t testing.TB, res map[string]any) string {
	t.Helper()
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("no content in %v", res)
	}
	return content[0].(map[string]any)["text"].(string)
}

// ToJSON encodes v, for messages and substring checks.
func ToJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// MustID is the integer JSON-RPC id n.
func MustID(n int) jsonrpc.ID {
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		panic(err)
	}
	return id
}
