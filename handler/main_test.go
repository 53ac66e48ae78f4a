package handler_test

import (
	"log/slog"
	"path/filepath"

	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/audit"

	"github.com/mcpgw/gateway/handler"
	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/internal/metrics"
	"github.com/mcpgw/gateway/internal/routertest"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"

	"github.com/mcpgw/gateway/plugins"
)

var redisSrv *testsupport.RedisServer

func TestMain(m *testing.M) {
	redisSrv = testsupport.MustStartRedis()
	code := m.Run()
	redisSrv.Stop()
	os.Exit(code)
}

var jwtSecret = []byte("handler-test-secret-0123456789abcdef")

// gw is a gateway handler on an httptest server, over real backends and
// the shared real Redis.
type gw struct {
	t     testing.TB
	url   string // base URL
	srv   *httptest.Server
	store store.Store
	one   *testsupport.Backend // gateway-one, with the streaming tools
	two   *testsupport.Backend // gateway-two
	// client sends do's requests: http.DefaultClient unless
	// gwOptions.clientTimeout is set.
	client *http.Client
	// audit and auditPath: the audit writer and its file (gwOptions.audit).
	audit     *audit.Writer
	auditPath string
}

type gwOptions struct {
	maxBody   int64
	origins   []string
	hosts     []string
	keepAlive time.Duration
	prm       *config.ResourceMetadata
	metrics   *metrics.Metrics // also the router's observer
	// stateless backends speak 2026-07-28 as well as the session protocol.
	stateless bool
	// oneTimeout is gateway-one's backend timeout (default 5s).
	oneTimeout time.Duration
	// redis is the store's server (default: the shared one); storeTimeout
	// its store.timeout; clientTimeout bounds every request of do.
	redis                       *testsupport.RedisServer
	storeTimeout, clientTimeout time.Duration
	// readTimeout bounds request bodies (handler.Options.ReadTimeout).
	readTimeout time.Duration
	// twoTimeout is gateway-two's backend timeout (default 5s).
	twoTimeout time.Duration
	// budget bounds backend answer bytes (handler.Options.ResponseBudget).
	budget *upstream.Budget
	// status serves GET /status; twoListCache is gateway-two's list_cache.
	status       bool
	twoListCache time.Duration
	// policy gives vhost demo access rules and the Policy section's plugins and, with
	// rateLimit, a per-principal rate limit of rateLimitN calls an hour
	// (default: more than any test makes).
	policy, rateLimit bool
	// stepUp gives vhost other rules that show increment only to tokens
	// granting scope admin, and echo and get_stats to everyone.
	stepUp         bool
	rateLimitN     int64
	rateLimitBatch int64 // the limit's batch (router.RateLimit.Batch)
	// audit writes the audit trail to a file of the test's.
	audit bool
	// log is the handler's logger (default slog.Default()).
	log *slog.Logger
	// watchPatterns starts the router's pattern watch (Router.WatchPatterns).
	watchPatterns bool
}

func startGateway(t testing.TB, o gwOptions) *gw {
	t.Helper()
	testsupport.SkipShort(t)
	st, err := store.NewRedis(cmp.Or(o.redis, redisSrv).URL(),
		store.RedisOptions{KeyPrefix: fmt.Sprintf("h%d", time.Now().UnixNano()), Timeout: o.storeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	one := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "gateway-one", StreamingTools: true, Stateless: o.stateless})
	two := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "gateway-two", Stateless: o.stateless})
	vhosts := map[string]*router.VirtualHost{
		"demo": {Name: "demo", Backends: map[string]*router.Backend{
			"gateway-one": {Config: upstream.Config{Key: "gateway-one", URL: one.URL, Timeout: cmp.Or(o.oneTimeout, 5*time.Second)}},
			"gateway-two": {Config: upstream.Config{Key: "gateway-two", URL: two.URL, Timeout: cmp.Or(o.twoTimeout, 5*time.Second)},
				ListCacheTTL: o.twoListCache},
		}},
		"other": {Name: "other", Backends: map[string]*router.Backend{
			"only": {Config: upstream.Config{Key: "only", URL: one.URL, Timeout: 5 * time.Second}},
		}},
	}
	if o.policy {
		demo := vhosts["demo"]
		var err error
		if demo.Access, err = policy.CompileAccess([]policy.AccessRule{
			{When: "'admins' in claims.groups", Allow: []string{"*"}},
			{When: "claims.sub == 'alice'", Allow: []string{"gateway-one-*", "gateway-two-*"}, Deny: []string{"*delete*"}},
		}); err != nil {
			t.Fatal(err)
		}
		if demo.Hooks, err = plugins.Compile([]plugins.Spec{
			{Type: plugins.TypeDenyPattern, In: plugins.InArguments, Patterns: []string{`(?i)drop\s+table`}},
			{Type: plugins.TypeRedact, Builtin: []string{"secrets", "email"}},
		}); err != nil {
			t.Fatal(err)
		}
		if o.rateLimit {
			if demo.RateLimits, err = policy.CompileRateLimits([]policy.RateLimit{
				{Per: policy.RatePerPrincipal, Limit: cmp.Or(o.rateLimitN, 1_000_000_000), Window: time.Hour, Batch: o.rateLimitBatch}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if o.stepUp {
		var err error
		if vhosts["other"].Access, err = policy.CompileAccess([]policy.AccessRule{
			{Allow: []string{"increment"}, Scopes: []string{"admin"}},
			{Allow: []string{"echo", "get_stats"}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	opts := router.Options{Store: st}
	if o.metrics != nil {
		opts.Observer = o.metrics
	}
	in := routertest.StartInstance(t, st, vhosts, routertest.Options{Router: opts}, nil)
	if o.watchPatterns {
		in.Router.WatchPatterns()
	}
	v, err := auth.New(config.Auth{Mode: config.ModeJWT, JWT: &config.JWTSettings{
		Issuer: "mcpgateway", Audience: "mcpgateway-api", HMACSecret: jwtSecret,
		Algorithms: []string{"HS256"}, Leeway: time.Second,
	}})
	if err != nil {
		t.Fatal(err)
	}
	var aud *handler.Audit
	var aw *audit.Writer
	auditPath := filepath.Join(t.TempDir(), "audit.log")
	if o.audit {
		var err error
		aw, err = audit.Open(auditPath, config.DefaultAuditBuffer, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(aw.Close)
		aud = &handler.Audit{Writer: aw, Arguments: config.AuditArgumentsHash}
	}
	h := handler.New(handler.Options{Router: in.Router, Audit: aud, Sessions: in.Sessions, Parks: in.Parks, Auth: v, MaxBodyBytes: o.maxBody,
		AllowedOrigins: o.origins, AllowedHosts: o.hosts, KeepAlive: o.keepAlive, ResourceMetadata: o.prm, Metrics: o.metrics,
		ReadTimeout: o.readTimeout, ResponseBudget: o.budget, Status: o.status, Logger: o.log})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client := http.DefaultClient
	if o.clientTimeout > 0 {
		client = &http.Client{Timeout: o.clientTimeout}
	}
	return &gw{t: t, url: srv.URL, srv: srv, store: st, one: one, two: two, client: client, audit: aw, auditPath: auditPath}
}

func (g *gw) token(sub string) string {
	return testsupport.MintJWT(g.t, jwtSecret, testsupport.StdClaims(sub))
}

// req describes one HTTP request to the gateway.
type req struct {
	method, path, body string
	headers            map[string]string
	sub                string // JWT subject; "" = alice; "-" = no token
	session            string
}

type resp struct {
	status int
	header http.Header
	body   string
	rpc    struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
}

func (g *gw) do(r req) *resp {
	g.t.Helper()
	if r.method == "" {
		r.method = http.MethodPost
	}
	if r.path == "" {
		r.path = "/servers/demo/mcp"
	}
	hr, err := http.NewRequest(r.method, g.url+r.path, strings.NewReader(r.body))
	if err != nil {
		g.t.Fatal(err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json, text/event-stream")
	switch r.sub {
	case "-":
	case "":
		hr.Header.Set("Authorization", "Bearer "+g.token("alice"))
	default:
		hr.Header.Set("Authorization", "Bearer "+g.token(r.sub))
	}
	if r.session != "" {
		hr.Header.Set("Mcp-Session-Id", r.session)
	}
	for k, v := range r.headers {
		if k == "Host" {
			hr.Host = v
			continue
		}
		if v == "" {
			hr.Header.Del(k)
			continue
		}
		hr.Header.Set(k, v)
	}
	res, err := g.client.Do(hr)
	if err != nil {
		g.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := &resp{status: res.StatusCode, header: res.Header, body: string(b)}
	payload := b
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				payload = []byte(d)
			}
		}
	}
	_ = json.Unmarshal(bytes.TrimSpace(payload), &out.rpc)
	return out
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// initialize opens a session as sub on vhost and returns its id.
func (g *gw) initialize(sub, vhost string) string {
	g.t.Helper()
	r := g.do(req{body: initBody, sub: sub, path: "/servers/" + vhost + "/mcp"})
	if r.status != http.StatusOK || r.rpc.Error != nil {
		g.t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	sid := r.header.Get("Mcp-Session-Id")
	if len(sid) < 22 {
		g.t.Fatalf("session id %q is too short for 128 bits", sid)
	}
	return sid
}
