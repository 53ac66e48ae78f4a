package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// progressParams is a tools/call of the streaming backend's "progress"
// tool with a progress token, which makes the gateway answer as SSE.
func progressParams(token string, steps int) map[string]any {
	return map[string]any{
		"name":      "gateway-one-progress",
		"arguments": map[string]any{"steps": steps},
		"_meta":     map[string]any{"progressToken": token},
	}
}

// checkProgressReply asserts an SSE answer of `steps` progress
// notifications carrying the client's token, in order, then the result.
func checkProgressReply(t *testing.T, r *testsupport.Reply, token string, steps int) {
	t.Helper()
	if !r.SSE {
		t.Fatalf("tools/call with a progress token: Content-Type %q, want text/event-stream; body %s", r.Header.Get("Content-Type"), r.Body)
	}
	if len(r.Messages) != steps+1 {
		t.Fatalf("got %d SSE messages, want %d progress + the result: %s", len(r.Messages), steps, r.Body)
	}
	for i, m := range r.Messages[:steps] {
		var p struct {
			ProgressToken string  `json:"progressToken"`
			Progress      float64 `json:"progress"`
		}
		if m.Method != "notifications/progress" || json.Unmarshal(m.Params, &p) != nil || p.ProgressToken != token || p.Progress != float64(i+1) {
			t.Fatalf("message %d = %s %s, want progress %d with token %q", i, m.Method, m.Params, i+1, token)
		}
	}
	if got := r.Text(); got != "done" {
		t.Fatalf("result %q, want done", got)
	}
}

func sessionInRedis(t *testing.T, sid string) bool {
	t.Helper()
	n, err := redisSrv.Client().Exists(t.Context(), "mcpgw:{"+sid+"}:session").Result()
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// A whole session through a Function URL in the default mode: initialize,
// tools/list, a tools/call answered as an SSE stream with progress, and
// DELETE, against a real Redis.
func TestFunctionURL_SessionWithStreamedProgressOnRedis(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rie := startRIE(t, f.lambdaEnv("")...) // MCPGW_LAMBDA_MODE unset: url
	ep := &functionURL{rie: rie, domain: functionURLDomain}
	c := f.client(t, "alice")

	c.Initialize(ep, nil)
	if !sessionInRedis(t, c.SessionID) {
		t.Fatalf("session %s is not in Redis", c.SessionID)
	}
	if !strings.Contains(rie.Output(), `"mode":"url"`) {
		t.Errorf("init line does not name mode url:\n%s", rie.Output())
	}

	tools := c.Call(ep, "tools/list", nil).ToolNames()
	for _, want := range []string{"gateway-one-progress", "gateway-one-echo", "gateway-two-echo"} {
		if !slices.Contains(tools, want) {
			t.Errorf("tools/list lacks %s: %v", want, tools)
		}
	}

	checkProgressReply(t, c.Call(ep, "tools/call", progressParams("tok-1", 3)), "tok-1", 3)
	// The backend credential came from the environment (a secret on
	// Lambda) through the config's ${ENV} expansion.
	if got := f.backends["gateway-one"].LastHeaders("tools/call").Get("X-Backend-Token"); got != backendToken {
		t.Errorf("backend got X-Backend-Token %q, want the value of %s", got, backendTokenEnv)
	}

	if st := c.Delete(ep); st != http.StatusOK {
		t.Fatalf("DELETE: %d", st)
	}
	if sessionInRedis(t, c.SessionID) {
		t.Error("session still in Redis after DELETE")
	}
	if r := c.Request(ep, "tools/list", nil); r.Status != http.StatusNotFound {
		t.Errorf("tools/list after DELETE: %d, want 404", r.Status)
	}

	// Host is the Function URL's domain: a config whose allowed_hosts
	// does not list it refuses every request.
	other := &functionURL{rie: rie, domain: "zzzz.lambda-url.eu-west-1.on.aws"}
	if r := c.Request(other, "tools/list", nil); r.Status != http.StatusForbidden {
		t.Errorf("request for a domain not in allowed_hosts: %d, want 403", r.Status)
	}
}

// The same session through API Gateway HTTP API events (payload 2.0),
// with the config from a file: the SSE answer arrives whole, GET streams
// are refused with 405, and a backend's sampling request during a call
// fails at once instead of hanging the buffered call.
func TestHTTPAPI_SessionBufferedOnRedis(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rie := startRIE(t, append(f.secrets(),
		envMode+"=apigw-v2", envConfig+"="+f.configPath, envRedisURL+"="+redisSrv.URL())...)
	ep := &httpAPI{rie: rie}
	c := f.client(t, "bob")

	// The client says it can sample; in a buffered mode it never could
	// answer in time, so the gateway's session records that it cannot.
	c.Initialize(ep, map[string]any{"sampling": map[string]any{}, "roots": map[string]any{}})
	if !sessionInRedis(t, c.SessionID) {
		t.Fatalf("session %s is not in Redis", c.SessionID)
	}
	if tools := c.Call(ep, "tools/list", nil).ToolNames(); !slices.Contains(tools, "gateway-two-echo") {
		t.Errorf("tools/list: %v", tools)
	}
	checkProgressReply(t, c.Call(ep, "tools/call", progressParams("tok-2", 2)), "tok-2", 2)

	start := time.Now()
	r := c.Call(ep, "tools/call", map[string]any{"name": "gateway-one-sample", "arguments": map[string]any{"prompt": "hi"}})
	if got := r.Text(); !strings.HasPrefix(got, "sampling failed") {
		t.Errorf("sample tool: %q, want the backend to see sampling refused", got)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the sampling call took %v: it waited for a client that cannot answer", d)
	}

	g := ep.do(t, http.MethodGet, c.Path(), c.Header("text/event-stream"), nil)
	checkGETRefused(t, ep, g)

	if st := c.Delete(ep); st != http.StatusOK {
		t.Fatalf("DELETE: %d", st)
	}
	if r := c.Request(ep, "tools/list", nil); r.Status != http.StatusNotFound {
		t.Errorf("tools/list after DELETE: %d, want 404", r.Status)
	}
}

func checkGETRefused(t *testing.T, ep endpoint, r *response) {
	t.Helper()
	if r.status != http.StatusMethodNotAllowed {
		t.Fatalf("GET stream via %s: %d, want 405; body %s", ep.name(), r.status, r.body)
	}
	var body testsupport.Message
	if err := json.Unmarshal(r.body, &body); err != nil || body.Error == nil ||
		!strings.Contains(body.Error.Message, "Function URL") || !strings.Contains(string(r.body), `"id":null`) {
		t.Errorf("GET stream via %s: body %s, want a JSON-RPC error (id null) pointing to the Function URL", ep.name(), r.body)
	}
	if allow := r.header.Get("Allow"); allow != "POST, DELETE" {
		t.Errorf("Allow: %q", allow)
	}
}

// REST API and ALB events (both header formats of a target group): a
// session works, health checks pass, and GET streams and 2026-07-28
// listens are refused rather than left hanging.
func TestBufferedModes_RefuseGETStreams(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct {
		mode string
		ep   func(*rieProcess) endpoint
	}{
		{"apigw-v1", func(r *rieProcess) endpoint { return &restAPI{rie: r} }},
		{"alb", func(r *rieProcess) endpoint { return &alb{rie: r} }},
		{"alb", func(r *rieProcess) endpoint { return &alb{rie: r, multiValue: true} }},
	} {
		ep := tc.ep(nil)
		t.Run(ep.name(), func(t *testing.T) {
			t.Parallel()
			ep := tc.ep(startRIE(t, f.lambdaEnv(tc.mode)...))
			c := f.client(t, "carol")
			c.Initialize(ep, nil)
			if got := c.Call(ep, "tools/call", map[string]any{
				"name": "gateway-two-echo", "arguments": map[string]any{"text": "hi"}}).Text(); !strings.Contains(got, "hi") {
				t.Errorf("echo: %q", got)
			}
			checkGETRefused(t, ep, ep.do(t, http.MethodGet, c.Path(), c.Header("text/event-stream"), nil))
			start := time.Now()
			listen := f.client(t, "carol").ModernRequest(ep, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
			checkListenRefused(t, listen, time.Since(start))
			if r := ep.do(t, http.MethodGet, "/healthz", nil, nil); r.status != http.StatusOK {
				t.Errorf("/healthz: %d %s", r.status, r.body)
			}
			if st := c.Delete(ep); st != http.StatusOK {
				t.Errorf("DELETE: %d", st)
			}
		})
	}
}

// A session is the store's, not the process's: started through the
// Function URL it continues on the plain HTTP server on the same Redis and
// config, and the other way round.
func TestSession_MovesBetweenLambdaAndPlainServer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	lam := &functionURL{rie: startRIE(t, f.lambdaEnv("url")...), domain: functionURLDomain}
	plain := f.startPlain()

	for _, dir := range []struct {
		name, user  string
		start, next endpoint
	}{
		{"lambda then plain", "dave", lam, plain},
		{"plain then lambda", "erin", plain, lam},
	} {
		t.Run(dir.name, func(t *testing.T) {
			c := f.client(t, dir.user)
			c.Initialize(dir.start, nil)
			token := "p-" + dir.user
			checkProgressReply(t, c.Call(dir.next, "tools/call", progressParams(token, 2)), token, 2)
			if tools := c.Call(dir.start, "tools/list", nil).ToolNames(); len(tools) == 0 {
				t.Error("no tools")
			}
			if st := c.Delete(dir.next); st != http.StatusOK {
				t.Fatalf("DELETE on the second endpoint: %d", st)
			}
			if r := c.Request(dir.start, "tools/list", nil); r.Status != http.StatusNotFound {
				t.Errorf("first endpoint after DELETE on the second: %d, want 404", r.Status)
			}
		})
	}
	t.Run("another principal gets 404", func(t *testing.T) {
		c := f.client(t, "frank")
		c.Initialize(lam, nil)
		mallory := f.client(t, "mallory")
		mallory.SessionID = c.SessionID
		if r := mallory.Request(plain, "tools/list", nil); r.Status != http.StatusNotFound {
			t.Errorf("foreign principal: %d, want 404", r.Status)
		}
	})
}
