package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// e2eHTTP bounds the wait for response headers, so a gateway that never
// answers fails the test in a minute rather than at the package timeout;
// reading a stream's body is bounded by the SSE reader's own deadlines.
var e2eHTTP = func() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = time.Minute
	return &http.Client{Transport: tr}
}()

// rawClient speaks the Streamable HTTP transport by hand, so a test can
// send each request of one session to a different gateway instance.
type rawClient struct {
	t     *testing.T
	token string
	sid   string
	next  int
}

type rpcResult struct {
	status int
	Result map[string]any `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *rawClient) post(base, body string) (*rpcResult, http.Header) {
	c.t.Helper()
	res := c.open(http.MethodPost, base, body, nil)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := &rpcResult{status: res.StatusCode}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		// A call that ran past the keep-alive interval answers as a
		// stream: the answer is its last event.
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				b = []byte(d)
			}
		}
	}
	_ = json.Unmarshal(b, out)
	return out, res.Header
}

func (c *rawClient) initialize(base string) {
	c.t.Helper()
	r, h := c.post(base, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r.status != 200 || r.Error != nil {
		c.t.Fatalf("initialize: %d %+v", r.status, r.Error)
	}
	c.sid = h.Get("Mcp-Session-Id")
	c.post(base, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func (c *rawClient) call(base, method string, params any) *rpcResult {
	c.t.Helper()
	c.next++
	p, _ := json.Marshal(params)
	if params == nil {
		p = []byte(`{}`)
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": json.RawMessage(p)})
	r, _ := c.post(base, string(body))
	return r
}

// mustCall fails the test unless the call succeeds.
func (c *rawClient) mustCall(base, method string, params any) map[string]any {
	c.t.Helper()
	r := c.call(base, method, params)
	if r.status != 200 || r.Error != nil {
		c.t.Fatalf("%s on %s: status %d error %+v", method, base, r.status, r.Error)
	}
	return r.Result
}

func (c *rawClient) delete(base string) int {
	req, _ := http.NewRequest(http.MethodDelete, mcpURL(base), nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Mcp-Session-Id", c.sid)
	res, err := e2eHTTP.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
