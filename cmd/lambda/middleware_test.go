package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
	"github.com/mcpgw/gateway/cmd/internal/app"
)

// In-process tests of the package's pieces; they run under -race.

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseMode(t *testing.T) {
	for in, want := range map[string]mode{"": modeURL, "url": modeURL, " APIGW-V2 ": modeAPIGWv2, "apigw-v1": modeAPIGWv1, "alb": modeALB} {
		if got, err := parseMode(in); err != nil || got != want {
			t.Errorf("parseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := parseMode("apigw"); err == nil || !strings.Contains(err.Error(), "url, apigw-v2, apigw-v1, alb") {
		t.Errorf("parseMode(apigw): %v", err)
	}
}

func TestNewLogger_Levels(t *testing.T) {
	for _, tc := range []struct {
		env       map[string]string
		debug     bool
		warnLines int
	}{
		{nil, false, 0},
		{map[string]string{envLogLevel: "debug"}, true, 0},
		{map[string]string{envLambdaLevel: "TRACE"}, true, 0},
		{map[string]string{envLambdaLevel: "DEBUG", envLogLevel: "warn"}, false, 0},
		{map[string]string{envLogLevel: "loud"}, false, 1},
	} {
		var buf bytes.Buffer
		log := newLogger(&buf, envMap(tc.env))
		if got := log.Enabled(context.Background(), slog.LevelDebug); got != tc.debug {
			t.Errorf("%v: debug enabled = %v", tc.env, got)
		}
		if n := strings.Count(buf.String(), "\n"); n != tc.warnLines {
			t.Errorf("%v: %d log lines at start-up: %s", tc.env, n, buf.String())
		}
	}
}

func TestRefuseGETStreams(t *testing.T) {
	var reached atomic.Int32
	h := refuseGETStreams(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	for _, tc := range []struct {
		method, path string
		refused      bool
	}{
		{http.MethodGet, "/servers/demo/mcp", true},
		{http.MethodHead, "/servers/demo/mcp", true},
		{http.MethodPost, "/servers/demo/mcp", false},
		{http.MethodDelete, "/servers/demo/mcp", false},
		{http.MethodGet, "/healthz", false},
		{http.MethodGet, "/readyz", false},
	} {
		reached.Store(0)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if refused := rec.Code == http.StatusMethodNotAllowed; refused != tc.refused || (reached.Load() == 1) == tc.refused {
			t.Errorf("%s %s: status %d, reached handler %v", tc.method, tc.path, rec.Code, reached.Load() == 1)
		}
		if tc.refused && tc.method == http.MethodGet {
			var body struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.JSONRPC != "2.0" || string(body.ID) != "null" ||
				body.Error.Code != codeInvalidRequest || !strings.Contains(body.Error.Message, "Function URL") {
				t.Errorf("405 body %s", rec.Body)
			}
			if rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Allow") != "POST, DELETE" {
				t.Errorf("405 headers %v", rec.Header())
			}
		}
	}
}

func TestStripServerRequestCapabilities(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{"sampling":{},"elicitation":{"form":{}},"roots":{"listChanged":true},"experimental":{"x":1}},"clientInfo":{"name":"c","version":"1"}}}`
	out, changed := stripServerRequestCapabilities([]byte(in))
	if !changed {
		t.Fatal("not changed")
	}
	var msg struct {
		ID     int    `json:"id"`
		Method string `json:"method"`
		Params struct {
			ProtocolVersion string                     `json:"protocolVersion"`
			Capabilities    map[string]json.RawMessage `json:"capabilities"`
			ClientInfo      struct{ Name string }      `json:"clientInfo"`
		} `json:"params"`
	}
	if err := json.Unmarshal(out, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.ID != 1 || msg.Method != "initialize" || msg.Params.ProtocolVersion != "2025-11-25" || msg.Params.ClientInfo.Name != "c" {
		t.Errorf("other fields changed: %s", out)
	}
	if len(msg.Params.Capabilities) != 1 || string(msg.Params.Capabilities["experimental"]) != `{"x":1}` {
		t.Errorf("capabilities %s", out)
	}

	for _, unchanged := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"initialize","arguments":{"sampling":{}}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"sampling":{}}}}]`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize"`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":null}}`,
	} {
		if out, changed := stripServerRequestCapabilities([]byte(unchanged)); changed || string(out) != unchanged {
			t.Errorf("%s was changed to %s", unchanged, out)
		}
	}
}

func TestWithoutServerRequests_RewritesTheBody(t *testing.T) {
	var got []byte
	var gotLen int64
	h := withoutServerRequests(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		gotLen = r.ContentLength
	}))
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"sampling":{}}}}`
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/servers/demo/mcp", strings.NewReader(body)))
	if strings.Contains(string(got), "sampling") || gotLen != int64(len(got)) {
		t.Errorf("handler saw %q (ContentLength %d)", got, gotLen)
	}
}

func TestEndBeforeDeadline(t *testing.T) {
	var seen time.Time
	var hasDeadline bool
	h := endBeforeDeadline(5*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, hasDeadline = r.Context().Deadline()
	}))
	serveAs := func(method, mcpMethod string, deadline time.Time) {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if !deadline.IsZero() {
			ctx, cancel = context.WithDeadline(ctx, deadline)
		}
		defer cancel()
		r := httptest.NewRequestWithContext(ctx, method, "/servers/demo/mcp", nil)
		if mcpMethod != "" {
			r.Header.Set("Mcp-Method", mcpMethod)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	serve := func(method string, deadline time.Time) { serveAs(method, "", deadline) }
	near := func(a, b time.Time) bool { return a.Sub(b).Abs() < 100*time.Millisecond }

	d := time.Now().Add(60 * time.Second)
	serve(http.MethodPost, d)
	if !hasDeadline || !near(seen, d.Add(-deadlineMargin)) {
		t.Errorf("POST: deadline %v, want %v", seen, d.Add(-deadlineMargin))
	}
	serve(http.MethodGet, d)
	if !near(seen, time.Now().Add(5*time.Second)) {
		t.Errorf("GET with a stream limit: deadline %v, want in 5s", seen)
	}
	serveAs(http.MethodPost, "subscriptions/listen", d)
	if !near(seen, time.Now().Add(5*time.Second)) {
		t.Errorf("subscriptions/listen with a stream limit: deadline %v, want in 5s", seen)
	}
	serveAs(http.MethodPost, "tools/call", d)
	if !near(seen, d.Add(-deadlineMargin)) {
		t.Errorf("a 2026-07-28 call: deadline %v, want %v", seen, d.Add(-deadlineMargin))
	}
	d = time.Now().Add(time.Second)
	serve(http.MethodPost, d)
	if !near(seen, d.Add(-200*time.Millisecond)) {
		t.Errorf("short time limit: deadline %v, want a fifth of the time left earlier", seen)
	}
	serve(http.MethodPost, time.Time{})
	if hasDeadline {
		t.Error("a deadline appeared from nowhere")
	}
}

func TestRecoverPanics(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))
	rec := httptest.NewRecorder()
	recoverPanics(log, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })).
		ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"code":-32603`) || !strings.Contains(logged.String(), "boom") {
		t.Errorf("panic before the response: %d %s; log %s", rec.Code, rec.Body, logged.String())
	}

	rec = httptest.NewRecorder()
	recoverPanics(log, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("data: x\n\n"))
		panic("late")
	})).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "data: x\n\n" {
		t.Errorf("panic mid-response: %d %q", rec.Code, rec.Body)
	}

	logged.Reset()
	recoverPanics(log, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", nil))
	if logged.Len() > 0 {
		t.Errorf("ErrAbortHandler logged: %s", logged.String())
	}
}

// noFlushWriter is a ResponseWriter without Flush, like lambdaurl's.
type noFlushWriter struct{ http.ResponseWriter }

func TestWithFlush(t *testing.T) {
	var flushErr, deadlineErr error
	h := withFlush(recoverPanics(discardLogger(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		flushErr = rc.Flush()
		deadlineErr = rc.SetWriteDeadline(time.Now())
	})))
	h.ServeHTTP(noFlushWriter{httptest.NewRecorder()}, httptest.NewRequest(http.MethodGet, "/", nil))
	if flushErr != nil {
		t.Errorf("Flush through the middleware: %v", flushErr)
	}
	if !errors.Is(deadlineErr, http.ErrNotSupported) {
		t.Errorf("other controls must still reach the adapter's writer: %v", deadlineErr)
	}
}

func TestLazyApp_BuildsOnceAndRetriesFailures(t *testing.T) {
	calls := 0
	fail := true
	l := &lazyApp{log: discardLogger(), build: func() (*app.App, error) {
		calls++
		if fail {
			return nil, errors.New("no store")
		}
		return &app.App{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })}, nil
	}}
	rec := httptest.NewRecorder()
	l.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "no store") {
		t.Errorf("failed build: %d %s", rec.Code, rec.Body)
	}
	fail = false
	for range 3 {
		rec = httptest.NewRecorder()
		l.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if rec.Code != http.StatusTeapot {
			t.Errorf("after a good build: %d", rec.Code)
		}
	}
	if calls != 2 {
		t.Errorf("build called %d times, want 2 (one failure, one success)", calls)
	}
}

// The adapters in process, on the real Redis: the url mode streams through
// lambdaurl (with withFlush), apigw-v2 buffers through httpadapter.
func TestSetup_AdaptersInProcess(t *testing.T) {
	f := newFixture(t)
	env := map[string]string{
		envConfigYAML: f.configYAML, envRedisURL: redisSrv.URL(),
	}
	for _, kv := range f.secrets() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v) // the config reads secrets from the process environment
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+f.client(t, "ivan").Token)
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Content-Type", "application/json")
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

	t.Run("url", func(t *testing.T) {
		env[envMode] = "url"
		fn, err := setup(envMap(env), discardLogger())
		if err != nil {
			t.Fatal(err)
		}
		defer fn.lazy.close()
		wrapped := lambdaurl.Wrap(fn.handler)
		ev := &events.LambdaFunctionURLRequest{
			RawPath: "/servers/demo/mcp", Headers: lowerHeaders(h, functionURLDomain), Body: initBody,
			RequestContext: events.LambdaFunctionURLRequestContext{DomainName: functionURLDomain,
				HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: http.MethodPost}},
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := wrapped(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || res.Headers["Mcp-Session-Id"] == "" || !bytes.Contains(body, []byte(`"serverInfo"`)) {
			t.Errorf("initialize: %d %v %s", res.StatusCode, res.Headers, body)
		}
	})
	t.Run("apigw-v2", func(t *testing.T) {
		env[envMode] = "apigw-v2"
		fn, err := setup(envMap(env), discardLogger())
		if err != nil {
			t.Fatal(err)
		}
		defer fn.lazy.close()
		a := httpadapter.NewV2(fn.handler)
		ev := events.APIGatewayV2HTTPRequest{RawPath: "/servers/demo/mcp", Headers: lowerHeaders(h, httpAPIDomain), Body: initBody,
			RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: httpAPIDomain,
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost}}}
		res, err := a.ProxyWithContext(t.Context(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK || !strings.Contains(res.Body, `"serverInfo"`) {
			t.Errorf("initialize: %d %s", res.StatusCode, res.Body)
		}
		ev.RequestContext.HTTP.Method = http.MethodGet
		if res, _ := a.ProxyWithContext(t.Context(), ev); res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("GET: %d", res.StatusCode)
		}
	})
}
