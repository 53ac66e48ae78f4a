package router_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/mcpgw/gateway/internal/routertest"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var redisSrv *testsupport.RedisServer

func TestMain(m *testing.M) {
	redisSrv = testsupport.MustStartRedis()
	code := m.Run()
	redisSrv.Stop()
	testsupport.Cleanup()
	os.Exit(code)
}

// The fixture is routertest's: a virtual host over real backends and a
// gateway instance on the shared Redis, keys under a prefix of its own.
type (
	fixture     = routertest.Fixture
	backendSpec = routertest.Spec
)

func newFixture(t testing.TB, specs ...backendSpec) *fixture {
	return newFixtureOpts(t, router.Options{}, specs...)
}

func newFixtureOpts(t testing.TB, opts router.Options, specs ...backendSpec) *fixture {
	t.Helper()
	return routertest.New(t, redisSrv.URL(), routertest.Options{Router: opts}, specs...)
}

// newStore opens a Redis store on the shared test server, with a key
// prefix of its own so tests do not see each other's keys.
func newStore(t testing.TB) store.Store {
	t.Helper()
	return newFixtureOpts(t, router.Options{}).NewStore()
}

func callOn(t testing.TB, r *router.Router, st store.Store, sid store.SessionID, hdr http.Header, method string, params any) *jsonrpc.Response {
	t.Helper()
	return routertest.CallOn(t, r, st, sid, hdr, method, params)
}

func result(t testing.TB, resp *jsonrpc.Response) map[string]any {
	t.Helper()
	return routertest.Result(t, resp)
}
func rpcErr(t testing.TB, resp *jsonrpc.Response) *jsonrpc.Error {
	t.Helper()
	return routertest.RPCErr(t, resp)
}
func names(t testing.TB, res map[string]any, field string) []string {
	t.Helper()
	return routertest.Names(t, res, field)
}
func text(t testing.TB, res map[string]any) string { t.Helper(); return routertest.Text(t, res) }
func toJSON(v any) string                          { return routertest.ToJSON(v) }
func mustID(n int) jsonrpc.ID                      { return routertest.MustID(n) }
