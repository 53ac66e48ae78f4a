package testsupport

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Client is the tests' hand-written MCP client: the Streamable HTTP
// transport spoken request by request. Tests use it for what a real MCP
// client (the go-sdk's, which tests use otherwise) hides or cannot do:
// send each request of one session through a different Endpoint (another
// gateway instance, a Lambda event source), see raw statuses and headers,
// read every event of a stream with its id, resume with Last-Event-ID,
// and choose request ids.
//
// Set T and Token (and VHost, if not "demo"); Initialize sets SessionID.
// A Client is used by one test; its request ids are safe to take from
// several goroutines.
type Client struct {
	T testing.TB
	// VHost is the virtual host: requests go to /servers/{VHost}/mcp
	// ("demo" when empty).
	VHost string
	// Token is the bearer token sent with every request ("" sends none).
	Token string
	// SessionID is sent as Mcp-Session-Id when not empty; Initialize sets
	// it.
	SessionID string

	lastID atomic.Int64 // the last id NextID gave
}

// ClientProtocolVersion is the MCP-Protocol-Version the client speaks.
const ClientProtocolVersion = "2025-11-25"

// Path is the MCP endpoint's path.
func (c *Client) Path() string {
	vh := c.VHost
	if vh == "" {
		vh = "demo"
	}
	return "/servers/" + vh + "/mcp"
}

// Header returns the transport headers of a request accepting accept:
// the protocol version, the token and the session id.
func (c *Client) Header(accept string) http.Header {
	h := http.Header{}
	h.Set("Accept", accept)
	h.Set("Mcp-Protocol-Version", ClientProtocolVersion)
	if c.Token != "" {
		h.Set("Authorization", "Bearer "+c.Token)
	}
	if c.SessionID != "" {
		h.Set("Mcp-Session-Id", c.SessionID)
	}
	return h
}

// NextID returns a request id the client has not used: 1, 2, ...
func (c *Client) NextID() int64 { return c.lastID.Add(1) }

// Open sends one request of the session through ep and returns the raw
// answer, for the caller to read and close. A POST carries body as
// application/json; every request accepts JSON and event streams unless
// extra says otherwise, and extra's headers are set last.
func (c *Client) Open(ep Endpoint, method, body string, extra map[string]string) *http.Response {
	c.T.Helper()
	req, err := http.NewRequestWithContext(c.T.Context(), method, c.Path(), strings.NewReader(body))
	if err != nil {
		c.T.Fatal(err)
	}
	req.Header = c.Header("application/json, text/event-stream")
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	return ep.Do(c.T, req)
}

// Post sends one JSON-RPC message, msg as JSON text (a string or []byte)
// or a value to encode, and reads the whole answer.
func (c *Client) Post(ep Endpoint, msg any) *Reply {
	c.T.Helper()
	var body string
	switch m := msg.(type) {
	case string:
		body = m
	case []byte:
		body = string(m)
	default:
		b, err := json.Marshal(m)
		if err != nil {
			c.T.Fatal(err)
		}
		body = string(b)
	}
	return ReadReply(c.T, c.Open(ep, http.MethodPost, body, nil))
}

// Initialize opens a session through ep with the given client
// capabilities (nil: none; JSON text or a value to encode), sets
// SessionID, and sends notifications/initialized. It fails the test
// unless both succeed, and returns the initialize answer.
func (c *Client) Initialize(ep Endpoint, caps any) *Reply {
	c.T.Helper()
	var raw json.RawMessage
	switch v := caps.(type) {
	case nil:
		raw = json.RawMessage(`{}`)
	case string:
		raw = json.RawMessage(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			c.T.Fatal(err)
		}
		raw = b
	}
	r := c.Post(ep, map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": ClientProtocolVersion, "capabilities": raw,
		"clientInfo": map[string]any{"name": "testsupport", "version": "1"},
	}})
	if r.Status != http.StatusOK || r.Final() == nil || r.Final().Error != nil {
		c.T.Fatalf("initialize: status %d body %s", r.Status, r.Body)
	}
	if c.SessionID = r.Header.Get("Mcp-Session-Id"); c.SessionID == "" {
		c.T.Fatalf("initialize: no Mcp-Session-Id")
	}
	if r := c.Post(ep, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.Status != http.StatusAccepted {
		c.T.Fatalf("notifications/initialized: status %d body %s", r.Status, r.Body)
	}
	return r
}

// Request sends a request with the next id (params nil: none) and returns
// the answer, whatever it is.
func (c *Client) Request(ep Endpoint, method string, params any) *Reply {
	c.T.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": c.NextID(), "method": method}
	if params != nil {
		msg["params"] = params
	}
	return c.Post(ep, msg)
}

// Call is Request that fails the test unless the answer is a result.
func (c *Client) Call(ep Endpoint, method string, params any) *Reply {
	c.T.Helper()
	r := c.Request(ep, method, params)
	if r.Status != http.StatusOK || r.Final() == nil || r.Final().Error != nil {
		c.T.Fatalf("%s: status %d body %.500s", method, r.Status, r.Body)
	}
	return r
}

// CallStreaming posts a request with the given id, accepting only an
// event stream, and returns the stream.
func (c *Client) CallStreaming(ep Endpoint, id int64, method string, params any) *SSEStream {
	c.T.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		c.T.Fatal(err)
	}
	res := c.Open(ep, http.MethodPost, string(body), map[string]string{"Accept": "text/event-stream"})
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		c.T.Fatalf("POST %s: %d", method, res.StatusCode)
	}
	return ReadSSE(c.T, res)
}

// Stream opens the session's GET stream, resuming after lastEventID when
// it is not empty.
func (c *Client) Stream(ep Endpoint, lastEventID string) *SSEStream {
	c.T.Helper()
	hdr := map[string]string{"Accept": "text/event-stream"}
	if lastEventID != "" {
		hdr["Last-Event-ID"] = lastEventID
	}
	res := c.Open(ep, http.MethodGet, "", hdr)
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		c.T.Fatalf("GET stream: %d", res.StatusCode)
	}
	return ReadSSE(c.T, res)
}

// Delete ends the session and returns the HTTP status.
func (c *Client) Delete(ep Endpoint) int {
	c.T.Helper()
	res := c.Open(ep, http.MethodDelete, "", map[string]string{"Accept": "application/json"})
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// An Endpoint carries one HTTP request to a gateway and returns its
// answer. Any request of a session may take any endpoint, as it may land
// on any instance: a gateway process (BaseURL, GatewayProcess), or in
// cmd/lambda's tests a Lambda event source under the emulator.
type Endpoint interface {
	// Do sends req, whose URL holds only the path, and returns the answer
	// for the caller to read and close. It fails t when none comes.
	Do(t testing.TB, req *http.Request) *http.Response
}

// BaseURL is the Endpoint of a gateway reached over HTTP at this base URL
// (http://host:port). It waits at most a minute for the answer's headers,
// so a gateway that never answers fails the test, not the package's
// timeout; a stream's body is the reader's to bound. Connections are not
// kept alive: nothing outlives the request.
type BaseURL string

// Do implements Endpoint.
func (u BaseURL) Do(t testing.TB, req *http.Request) *http.Response {
	t.Helper()
	target, err := url.Parse(strings.TrimRight(string(u), "/") + req.URL.RequestURI())
	if err != nil {
		t.Fatal(err)
	}
	req.URL, req.Host = target, target.Host
	hc := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: time.Minute, DisableKeepAlives: true}}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, target, err)
	}
	return res
}

// Do makes a gateway process an Endpoint: BaseURL(p.URL).
func (p *GatewayProcess) Do(t testing.TB, req *http.Request) *http.Response {
	t.Helper()
	return BaseURL(p.URL).Do(t, req)
}

// Reply is a whole answer to a POST: its status, headers and body, and the
// JSON-RPC messages the body holds, in order (the one of an
// application/json body, or every message event of a text/event-stream).
type Reply struct {
	Status   int
	Header   http.Header
	Body     []byte
	SSE      bool // the answer was an event stream
	Messages []Message

	t testing.TB
}

// Message is one JSON-RPC message as the gateway sent it.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// ReadReply reads and closes res and parses its messages.
func ReadReply(t testing.TB, res *http.Response) *Reply {
	t.Helper()
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return ParseReply(t, res.StatusCode, res.Header, body)
}

// ParseReply parses an answer already read whole.
func ParseReply(t testing.TB, status int, header http.Header, body []byte) *Reply {
	t.Helper()
	r := &Reply{Status: status, Header: header, Body: body, t: t}
	decode := func(data string) {
		var m Message
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("JSON-RPC message %q: %v", data, err)
		}
		r.Messages = append(r.Messages, m)
	}
	switch ct := header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "text/event-stream"):
		r.SSE = true
		_ = readSSEEvents(bytes.NewReader(body), func(ev SSEEvent) bool {
			if ev.Data != "" {
				decode(ev.Data)
			}
			return true
		})
	case strings.HasPrefix(ct, "application/json") && len(bytes.TrimSpace(body)) > 0:
		decode(string(body))
	}
	return r
}

// Final is the reply's response: its last message without a method, or
// nil (a 202, or a stream cut short).
func (r *Reply) Final() *Message {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Method == "" {
			return &r.Messages[i]
		}
	}
	return nil
}

// Error is the response's JSON-RPC error, or nil.
func (r *Reply) Error() *RPCError {
	if f := r.Final(); f != nil {
		return f.Error
	}
	return nil
}

// Result decodes the response's result; it fails the test when there is
// none.
func (r *Reply) Result() map[string]any {
	r.t.Helper()
	f := r.Final()
	if f == nil || f.Error != nil || len(f.Result) == 0 {
		r.t.Fatalf("no result: status %d body %.500s", r.Status, r.Body)
	}
	var res map[string]any
	if err := json.Unmarshal(f.Result, &res); err != nil {
		r.t.Fatalf("result %s: %v", f.Result, err)
	}
	return res
}

// ToolNames lists the tools of a tools/list result, in order.
func (r *Reply) ToolNames() []string {
	r.t.Helper()
	tools, _ := r.Result()["tools"].([]any)
	var names []string
	for _, tool := range tools {
		name, _ := tool.(map[string]any)["name"].(string)
		names = append(names, name)
	}
	return names
}

// Text is the text content of a tools/call result, concatenated.
func (r *Reply) Text() string {
	r.t.Helper()
	content, _ := r.Result()["content"].([]any)
	var b strings.Builder
	for _, c := range content {
		text, _ := c.(map[string]any)["text"].(string)
		b.WriteString(text)
	}
	return b.String()
}

// ModernProtocolVersion is the revision the client speaks in its modern
// requests: no initialize, no session, the client described in each
// request's _meta.
const ModernProtocolVersion = "2026-07-28"

// ModernMessage is a request of protocol 2026-07-28 with id: params (nil:
// none) and a _meta with the keys the revision requires, the version and
// the client's capabilities caps (JSON text or a value to encode; nil:
// none), which params' own _meta keys override. params is not modified.
func ModernMessage(id any, method string, params map[string]any, caps any) map[string]any {
	p := make(map[string]any, len(params)+1)
	for k, v := range params {
		p[k] = v
	}
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    ModernProtocolVersion,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "testsupport", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	switch v := caps.(type) {
	case nil:
	case string:
		meta["io.modelcontextprotocol/clientCapabilities"] = json.RawMessage(v)
	default:
		meta["io.modelcontextprotocol/clientCapabilities"] = v
	}
	if own, ok := params["_meta"].(map[string]any); ok {
		for k, v := range own {
			meta[k] = v
		}
	}
	p["_meta"] = meta
	return map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p}
}

// ModernHeaders are the headers a request of protocol 2026-07-28 adds to
// Header's: the version, Mcp-Method, and Mcp-Name for the methods that
// name their target (sent as is: tests use ASCII names).
func ModernHeaders(method string, params map[string]any) map[string]string {
	h := map[string]string{"Mcp-Protocol-Version": ModernProtocolVersion, "Mcp-Method": method}
	field := ""
	switch method {
	case "tools/call", "prompts/get":
		field = "name"
	case "resources/read":
		field = "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		field = "taskId"
	}
	if name, ok := params[field].(string); ok && field != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// ModernRequest sends a request of protocol 2026-07-28 with the next id
// (see ModernMessage) and returns the answer, whatever it is. The client
// must have no session.
func (c *Client) ModernRequest(ep Endpoint, method string, params map[string]any, caps any) *Reply {
	c.T.Helper()
	body, err := json.Marshal(ModernMessage(c.NextID(), method, params, caps))
	if err != nil {
		c.T.Fatal(err)
	}
	return ReadReply(c.T, c.Open(ep, http.MethodPost, string(body), ModernHeaders(method, params)))
}

// ModernStream posts a request of protocol 2026-07-28 with the given id
// (a subscriptions/listen), accepting only an event stream, and returns
// the stream.
func (c *Client) ModernStream(ep Endpoint, id any, method string, params map[string]any, caps any) *SSEStream {
	c.T.Helper()
	res := c.postModernStream(ep, id, method, params, caps)
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		c.T.Fatalf("POST %s: %d %s", method, res.StatusCode, b)
	}
	return ReadSSE(c.T, res)
}

// postModernStream posts a 2026-07-28 request accepting only an event
// stream and returns the answer unread.
func (c *Client) postModernStream(ep Endpoint, id any, method string, params map[string]any, caps any) *http.Response {
	c.T.Helper()
	body, err := json.Marshal(ModernMessage(id, method, params, caps))
	if err != nil {
		c.T.Fatal(err)
	}
	h := ModernHeaders(method, params)
	h["Accept"] = "text/event-stream"
	return c.Open(ep, http.MethodPost, string(body), h)
}
