package tests

// The log as an operator reads it: JSON lines from the binary, the
// per-request line, and no secret anywhere, at debug level.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// logLines parses a gateway's output, stdout and stderr together as a
// container's log collector reads them: every line must be a JSON object,
// the listening announcement included.
func logLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a log line is not JSON (%v): %q\n%s", err, l, out)
		}
		keys := []string{"time", "level", "msg"}
		if _, ok := m["outcome"]; ok {
			keys = []string{"time", "vhost", "outcome"} // an audit line (audit.output: stdout)
		}
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				t.Fatalf("log line without %q: %s", k, l)
			}
		}
		lines = append(lines, m)
	}
	return lines
}

// findLine is the first line whose fields include every one of want.
func findLine(lines []map[string]any, want map[string]any) map[string]any {
	for _, l := range lines {
		ok := true
		for k, v := range want {
			if l[k] != v {
				ok = false
				break
			}
		}
		if ok {
			return l
		}
	}
	return nil
}

// At debug level with JSON logs, every request has a line naming what an
// operator needs (vhost, JSON-RPC method, published name, backend, status,
// JSON-RPC error code, duration, a short session hash), failures are at
// info, a failed protocol negotiation says why, go-redis's own lines are
// JSON too, and no configured or presented secret appears anywhere: not
// the JWT secret, the cursor secret, a backend token, the Redis password,
// the client's bearer token (valid or not), nor a session id.
func TestLogs_JSONRequestLinesCarryNoSecret(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	const (
		jwtSecret     = "jwt-secret-LOGTEST-0123456789abcdef0123456789"
		cursorSecret  = "cursor-secret-LOGTEST-0123456789abcdef012345"
		backendToken  = "backend-token-LOGTEST-9876543210"
		redisPassword = "redis-password-LOGTEST-42"
		badToken      = "not-a-jwt-LOGTEST-presented-by-a-client"
	)
	rs, err := testsupport.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	if err := rs.Client().ConfigSet(t.Context(), "requirepass", redisPassword).Err(); err != nil {
		t.Fatal(err)
	}
	one := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "gateway-one"})
	two := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "gateway-two"})
	cfg := fmt.Sprintf(`session_ttl: 10m
allowed_hosts: [127.0.0.1, localhost]
cursor_secret_env: LOGTEST_CURSOR_SECRET
auth:
  mode: jwt
  jwt: {issuer: mcpgateway, audience: mcpgateway-api, hs_secret_env: LOGTEST_JWT_SECRET}
virtual_hosts:
  demo:
    backends:
      gateway-one:
        url: %s
        add_headers: {Authorization: "Bearer ${LOGTEST_BACKEND_TOKEN}"}
        tool_name_aliases: {Public.Tool: get_stats}
      gateway-two:
        url: %s
`, one.URL, two.URL)
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	redisURL := "redis://:" + redisPassword + "@" + rs.Addr
	p := testsupport.StartGateway(t, bin,
		[]string{"--config", path, "--redis-url", redisURL, "--log-level", "debug"},
		[]string{"MCPGW_LOG_FORMAT=json", "LOGTEST_JWT_SECRET=" + jwtSecret, "LOGTEST_CURSOR_SECRET=" + cursorSecret, "LOGTEST_BACKEND_TOKEN=" + backendToken})

	token := testsupport.MintJWT(t, []byte(jwtSecret), testsupport.StdClaims("alice"))
	c := &testsupport.Client{T: t, Token: token}
	c.Initialize(p, nil)
	c.Call(p, "tools/call", map[string]any{"name": "gateway-one-increment", "arguments": map[string]any{"by": 1}})
	c.Call(p, "tools/call", map[string]any{"name": "Public.Tool"})
	if e := c.Request(p, "tools/call", map[string]any{"name": "nobody-has-this"}).Error(); e == nil || e.Code != -32602 {
		t.Fatalf("unknown tool: %+v", e)
	}
	modern := &testsupport.Client{T: t, Token: token}
	if r := modern.ModernRequest(p, "tools/call", map[string]any{"name": "gateway-two-echo", "arguments": map[string]any{"text": "hi"}}, nil); r.Status != http.StatusOK {
		t.Fatalf("modern call: %d %s", r.Status, r.Body)
	}
	res := modern.Open(p, http.MethodPost, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, map[string]string{"Mcp-Protocol-Version": "1999-01-01"})
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("unsupported version: %d", res.StatusCode)
	}
	stranger := &testsupport.Client{T: t, Token: badToken}
	res = stranger.Open(p, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad token: %d", res.StatusCode)
	}
	// The store goes away: go-redis's complaints come through the same
	// JSON logger.
	rs.Stop()
	if r := c.Request(p, "tools/list", nil); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("with the store down: %d %s", r.Status, r.Body)
	}
	if !testsupport.Eventually(t, 20*time.Second, func() bool { return strings.Contains(p.Output(), `"msg":"redis client"`) }) {
		t.Fatalf("no go-redis line in the log:\n%s", p.Output())
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	out := p.Output()
	lines := logLines(t, out)
	hash := regexp.MustCompile(`^[0-9a-f]{8}$`)
	for _, want := range []struct {
		fields map[string]any
		level  string
	}{
		{map[string]any{"msg": "request", "rpc_method": "initialize", "status": float64(200)}, "DEBUG"},
		{map[string]any{"msg": "request", "rpc_method": "tools/call", "name": "gateway-one-increment", "backend": "gateway-one", "status": float64(200)}, "DEBUG"},
		{map[string]any{"msg": "request", "rpc_method": "tools/call", "name": "Public.Tool", "backend": "gateway-one"}, "DEBUG"},
		{map[string]any{"msg": "request", "rpc_method": "tools/call", "name": "nobody-has-this", "rpc_code": float64(-32602)}, "INFO"},
		{map[string]any{"msg": "request", "rpc_method": "tools/call", "name": "gateway-two-echo", "backend": "gateway-two", "status": float64(200)}, "DEBUG"},
		{map[string]any{"msg": "request", "rpc_method": "ping", "status": float64(400), "rpc_code": float64(-32022)}, "INFO"},
		{map[string]any{"msg": "request", "status": float64(401)}, "INFO"},
		{map[string]any{"msg": "request", "rpc_method": "tools/list", "status": float64(503)}, "INFO"},
		{map[string]any{"msg": "protocol negotiation failed", "protocol_version": "1999-01-01", "rpc_code": float64(-32022)}, "INFO"},
	} {
		l := findLine(lines, want.fields)
		if l == nil {
			t.Errorf("no log line with %v", want.fields)
			continue
		}
		if l["level"] != want.level || (l["msg"] == "request" && (l["vhost"] != "demo" || l["duration_ms"] == nil)) {
			t.Errorf("line %v: want level %s, vhost demo and a duration", l, want.level)
		}
		if s, ok := l["session_hash"].(string); ok && !hash.MatchString(s) {
			t.Errorf("session_hash %q is not a short hash", s)
		}
	}
	if l := findLine(lines, map[string]any{"msg": "request", "rpc_method": "tools/call", "name": "gateway-one-increment"}); l == nil || l["session_hash"] == nil {
		t.Errorf("a session's request line names no session hash: %v", l)
	}
	if l := findLine(lines, map[string]any{"msg": "protocol negotiation failed"}); l == nil || !strings.Contains(fmt.Sprint(l["reason"]), "unsupported protocol version") {
		t.Errorf("the negotiation line does not say why: %v", l)
	}

	for name, secret := range map[string]string{
		"JWT secret": jwtSecret, "cursor secret": cursorSecret, "backend token": backendToken,
		"Redis password": redisPassword, "client's bearer token": token, "client's bad token": badToken,
		"session id": c.SessionID,
	} {
		if strings.Contains(out, secret) {
			t.Errorf("the %s appears in the log", name)
		}
	}
}
