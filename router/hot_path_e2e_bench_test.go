package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/plugins"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/policy"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkHandle_ToolsCall measures one routed tools/call through the
// router (session load from Redis included) against a real go-sdk
// backend, per backend session mode. The backend's own cost is in the
// figure; compare modes with each other, not with a bare function call.
// "stateless+access" is "stateless" with access rules whose conditions
// read the caller's claims (the first two do not hold, the third does):
// the difference is what access costs a call. "stateless+policy" adds two
// plugins (deny_pattern on arguments, redact with the built-in secret and
// e-mail detectors on the result) and a rate limit per principal that the
// loop never reaches (one store round trip per call): the difference with
// "stateless" is what the policy costs a call; "stateless+plugins"
// is the same without the rate limit (no store round trip). "stateless+tracing"
// traces every call (a request span and a backend span, batched to an
// exporter that drops them): what tracing costs a call when it is on.
func BenchmarkHandle_ToolsCall(b *testing.B) {
	for _, mode := range []struct {
		name                    string
		opts                    testsupport.BackendOptions
		sess                    router.SessionMode
		access, policy, tracing bool
		noLimit                 bool // policy without its rate limit
	}{
		{"per-request", testsupport.BackendOptions{}, router.SessionPerRequest, false, false, false, false},
		{"stateless", testsupport.BackendOptions{Stateless: true}, router.SessionPerRequest, false, false, false, false},
		{"stateless+access", testsupport.BackendOptions{Stateless: true}, router.SessionPerRequest, true, false, false, false},
		{"stateless+tracing", testsupport.BackendOptions{Stateless: true}, router.SessionPerRequest, false, false, true, false},
		{"stateless+policy", testsupport.BackendOptions{Stateless: true}, router.SessionPerRequest, true, true, false, false},
		{"stateless+plugins", testsupport.BackendOptions{Stateless: true}, router.SessionPerRequest, true, true, false, true},
		{"reuse", testsupport.BackendOptions{}, router.SessionReuse, false, false, false, false},
	} {
		b.Run(mode.name, func(b *testing.B) {
			var opts router.Options
			if mode.tracing {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				opts.TracerProvider = tp
			}
			f := newFixtureOpts(b, opts, backendSpec{Key: "only", Opts: mode.opts, Adjust: func(be *router.Backend) { be.Session = mode.sess }})
			var claims map[string]any
			if mode.access {
				f.Config.Access = compileRules(b, benchRules)
				claims = benchClaims
			}
			if mode.policy {
				f.Config.Hooks, f.Config.RateLimits = benchPolicy(b)
				if mode.noLimit {
					f.Config.RateLimits = nil
				}
			}
			if mode.access || mode.policy {
				f.Router.Reload(map[string]*router.VirtualHost{f.VHost: f.Config})
			}
			sid, _ := f.Initialize(nil)
			args := map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if resp := f.Instance.CallClaims(b, sid, claims, "tools/call", args); resp.Error != nil {
					b.Fatal(resp.Error)
				}
			}
		})
	}
}

// benchRules and benchClaims: a caller decided by the third rule, as a
// realistic policy makes most callers fall through a rule or two.
var (
	benchRules = []policy.AccessRule{
		{When: "'admins' in claims.groups", Allow: []string{"*"}},
		{When: "claims.email.endsWith('@ops.example.com')", Allow: []string{"ops-*"}},
		{When: "'dev' in claims.groups && claims.level >= 2", Allow: []string{"echo", "get_*"}, Deny: []string{"*delete*"}},
	}
	benchClaims = map[string]any{"sub": "bob", "email": "bob@example.com", "groups": []any{"dev", "staff"}, "level": 3.0,
		"iss": "mcpgateway", "aud": "mcpgateway-api", "exp": 1.9e9, "iat": 1.7e9}
)

// benchPolicy is two plugins and a rate limit the benchmark never reaches.
func benchPolicy(b *testing.B) ([]hook.Hook, *policy.RateLimitPolicy) {
	hooks, err := plugins.Compile([]plugins.Spec{
		{Type: plugins.TypeDenyPattern, In: plugins.InArguments, Patterns: []string{`(?i)drop\s+table`}},
		{Type: plugins.TypeRedact, Builtin: []string{"secrets", "email"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	limits, err := policy.CompileRateLimits([]policy.RateLimit{{Per: policy.RatePerPrincipal, Limit: 1_000_000_000, Window: time.Hour}})
	if err != nil {
		b.Fatal(err)
	}
	return hooks, limits
}

// BenchmarkHandle_ToolsListCached walks tools/list (2 pages) over vhosts of
// 1 and 8 backends whose pages are all cached: what is left is the
// gateway's own work per walk (session load, cursor, merge, encoding).
func BenchmarkHandle_ToolsListCached(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("backends=%d", n), func(b *testing.B) {
			specs := make([]backendSpec, n)
			for i := range specs {
				specs[i] = backendSpec{Key: fmt.Sprintf("b%d", i+1), Opts: testsupport.BackendOptions{PageSize: 2},
					Adjust: func(be *router.Backend) { be.ListCacheTTL = time.Hour }}
			}
			f := newFixture(b, specs...)
			sid, _ := f.Initialize(nil)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				var params any
				for {
					resp := f.Call(sid, "tools/list", params)
					if resp.Error != nil {
						b.Fatal(resp.Error)
					}
					var page struct{ NextCursor string }
					_ = json.Unmarshal(resp.Result, &page)
					if page.NextCursor == "" {
						break
					}
					params = map[string]any{"cursor": page.NextCursor}
				}
			}
		})
	}
}
