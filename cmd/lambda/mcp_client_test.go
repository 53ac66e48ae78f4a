package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// mcpClient speaks the Streamable HTTP transport by hand over any
// endpoint, so that one session's requests can go through different ones.
type mcpClient struct {
	t     testing.TB
	vhost string
	token string
	sid   string
	next  int
}

// message is one JSON-RPC message as the gateway sent it.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// reply is an HTTP answer with the JSON-RPC messages in its body: one for
// application/json, every data event for text/event-stream.
type reply struct {
	*response
	messages []message
	sse      bool
}

// final is the reply's response message (the last one with no method).
func (r *reply) final() *message {
	for i := len(r.messages) - 1; i >= 0; i-- {
		if r.messages[i].Method == "" {
			return &r.messages[i]
		}
	}
	return nil
}

func (c *mcpClient) path() string { return "/servers/" + c.vhost + "/mcp" }

func (c *mcpClient) headers(accept string) http.Header {
	h := http.Header{}
	h.Set("Accept", accept)
	h.Set("Mcp-Protocol-Version", "2025-11-25")
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	if c.sid != "" {
		h.Set("Mcp-Session-Id", c.sid)
	}
	return h
}

// post sends one JSON-RPC message.
func (c *mcpClient) post(ep endpoint, msg map[string]any) *reply {
	c.t.Helper()
	h := c.headers("application/json, text/event-stream")
	h.Set("Content-Type", "application/json")
	res := ep.do(c.t, http.MethodPost, c.path(), h, mustJSON(c.t, msg))
	return parseReply(c.t, res)
}

func parseReply(t testing.TB, res *response) *reply {
	t.Helper()
	r := &reply{response: res}
	body := bytes.TrimSpace(res.body)
	switch ct := res.header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "text/event-stream"):
		r.sse = true
		sc := bufio.NewScanner(bytes.NewReader(res.body))
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok || strings.TrimSpace(data) == "" {
				continue
			}
			var m message
			if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &m); err != nil {
				t.Fatalf("SSE data %q: %v", data, err)
			}
			r.messages = append(r.messages, m)
		}
	case len(body) > 0 && strings.HasPrefix(ct, "application/json"):
		var m message
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("JSON body %q: %v", body, err)
		}
		r.messages = append(r.messages, m)
	}
	return r
}

// initialize opens a session with the given client capabilities.
func (c *mcpClient) initialize(ep endpoint, caps map[string]any) {
	c.t.Helper()
	if caps == nil {
		caps = map[string]any{}
	}
	r := c.post(ep, map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": caps,
		"clientInfo": map[string]any{"name": "lambda-test", "version": "1"},
	}})
	if r.status != http.StatusOK || r.final() == nil || r.final().Error != nil {
		c.t.Fatalf("initialize via %s: status %d body %s", ep.name(), r.status, r.body)
	}
	c.sid = r.header.Get("Mcp-Session-Id")
	if c.sid == "" {
		c.t.Fatalf("initialize via %s: no Mcp-Session-Id", ep.name())
	}
	if r := c.post(ep, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); r.status != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized via %s: status %d body %s", ep.name(), r.status, r.body)
	}
}

// call sends a request and fails the test unless it gets a result.
func (c *mcpClient) call(ep endpoint, method string, params map[string]any) *reply {
	c.t.Helper()
	r := c.request(ep, method, params)
	if r.status != http.StatusOK || r.final() == nil || r.final().Error != nil {
		c.t.Fatalf("%s via %s: status %d body %s", method, ep.name(), r.status, r.body)
	}
	return r
}

func (c *mcpClient) request(ep endpoint, method string, params map[string]any) *reply {
	c.t.Helper()
	c.next++
	msg := map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method}
	if params != nil {
		msg["params"] = params
	}
	return c.post(ep, msg)
}

// delete ends the session.
func (c *mcpClient) delete(ep endpoint) int {
	c.t.Helper()
	return ep.do(c.t, http.MethodDelete, c.path(), c.headers("application/json"), nil).status
}

// toolNames lists the tools of a tools/list result.
func toolNames(t testing.TB, r *reply) []string {
	t.Helper()
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.final().Result, &res); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// resultText is the concatenated text content of a tools/call result.
func resultText(t testing.TB, r *reply) string {
	t.Helper()
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(r.final().Result, &res); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}
