package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// Unmodified MCP clients sign in through the gateway (issue 41): the
// TypeScript SDK v2 client's own OAuth code and mcp-remote, each against
// the two instances behind the balancer, Hydra upstream, access tokens
// that live 10 s so refresh is seen. The test is the person: it opens
// each authorization URL the client prints, signs in at Hydra, approves
// the consent page, and the redirect reaches the client's own callback.

// lineReader turns a process's output into JSON objects, one a line.
func lineReader(t *testing.T, r io.Reader) <-chan map[string]any {
	ch := make(chan map[string]any, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				ch <- m
			}
		}
	}()
	return ch
}

func TestAuthServer_TypeScriptSDKClient(t *testing.T) {
	node, dir := interopNode(t, "@modelcontextprotocol/client")
	r := startAuthServer(t, "10s")
	alice := r.browser("alice", "ops")
	// The script resolves its packages from the fixture cache.
	script, err := os.ReadFile(filepath.Join("interop", "oauth-client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(filepath.Dir(filepath.Dir(dir)), "..", fmt.Sprintf("oauth-client-%d.mjs", time.Now().UnixNano()))
	if err := os.WriteFile(path, script, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	cmd := exec.Command(node, path, r.lb)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := lineReader(t, stdout)
	authorizations := map[string]int{}
	// next returns the next step line, opening authorization URLs as a
	// person would on the way.
	next := func(step string) map[string]any {
		t.Helper()
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("the client ended before %s; stderr:\n%s", step, stderr.String())
				}
				if e, ok := m["error"]; ok {
					t.Fatalf("client error before %s: %v\nstderr:\n%s", step, e, stderr.String())
				}
				t.Logf("client: %.200v", m)
				if u, ok := m["authorize"].(string); ok {
					checkAuthorizeURL(t, r, u)
					authorizations[m["vhost"].(string)]++
					if st, _, body := alice.visit(u); st != http.StatusOK {
						t.Fatalf("authorization in the browser: %d %.300s", st, body)
					}
					continue
				}
				if m["step"] == step {
					return m
				}
				t.Fatalf("want step %s, got %v", step, m)
			case <-time.After(90 * time.Second):
				t.Fatalf("no %s within 90s; stderr:\n%s", step, stderr.String())
			}
		}
	}
	m := next("a")
	if !strings.Contains(m["echo"].(string), "hi") || !strings.Contains(strings.Join(toStrings(m["tools"]), ","), "increment") {
		t.Fatalf("vhost a: %v", m)
	}
	m = next("step-up")
	if m["isError"] != false || !strings.Contains(m["scope"].(string), "admin") || m["authorizations"].(float64) != 2 {
		t.Fatalf("step-up: %v", m)
	}
	if m = next("b"); len(toStrings(m["tools"])) == 0 {
		t.Fatalf("vhost b: %v", m)
	}
	m = next("refresh")
	if !strings.Contains(m["echo"].(string), "again") || m["rotated"] != true || m["authorizations"].(float64) != 2 {
		t.Fatalf("refresh: %v", m)
	}
	// Revoke the client's grant (RFC 7009) as its user would, then let the
	// access token expire: the SDK's refresh fails and it authorizes again.
	revoked := m["refresh_token"].(string)
	st, _ := r.postForm("/oauth2/revoke", url.Values{"token": {revoked}, "client_id": {m["client_id"].(string)}})
	if st != http.StatusOK {
		t.Fatalf("revoke: %d", st)
	}
	_, _ = io.WriteString(stdin, "go\n")
	if m = next("revoked"); m["reauthorized"] != true || !strings.Contains(m["echo"].(string), "after") {
		t.Fatalf("after revocation: %v", m)
	}
	if authorizations["a"] != 3 || authorizations["b"] != 1 {
		t.Errorf("authorizations %v, want a:3 (sign-in, step-up, after revocation) b:1", authorizations)
	}
	asNoSecrets(t, r, []string{revoked, asLoginSecret, asKeyB64})
}

// checkAuthorizeURL: what the client asks for is what the spec says.
func checkAuthorizeURL(t *testing.T, r *asRig, raw string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || !strings.HasPrefix(raw, r.lb+"/oauth2/authorize?") {
		t.Fatalf("authorization URL %q is not the gateway's", raw)
	}
	q := u.Query()
	if q.Get("code_challenge_method") != "S256" || !strings.HasPrefix(q.Get("resource"), r.lb+"/servers/") || q.Get("client_id") == "" {
		t.Fatalf("authorization request %v", q)
	}
}

func toStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

var _ = testsupport.BaseURL("")
