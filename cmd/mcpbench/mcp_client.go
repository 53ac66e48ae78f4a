package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
)

// This file is a minimal MCP client over Streamable HTTP, written for load:
// one POST per JSON-RPC message, an answer as application/json or as a
// text/event-stream read until the response with the request's id, the
// Mcp-Session-Id and MCP-Protocol-Version headers, and a DELETE at the end.
// It never opens the standalone GET stream, decodes only the JSON-RPC
// members of an answer, and reuses its read buffers, so the generator
// spends its CPU on sending requests rather than on itself.
//
// With a protocol version of 2026-07-28 or later (modern) there is no
// session: no initialize, no notifications/initialized, no Mcp-Session-Id,
// no DELETE. Every request carries the version and the client in
// params._meta, and mirrors its method (Mcp-Method) and, for tools/call,
// prompts/get and resources/read, its target (Mcp-Name) in headers beside
// MCP-Protocol-Version.

// ModernProto is the first protocol version without sessions.
const ModernProto = "2026-07-28"

// IsModern reports whether protocol version v is sessionless. The
// revision compares versions as text: every version that sorts at or
// after 2026-07-28 is modern.
func IsModern(v string) bool { return v >= ModernProto }

// ClientConfig is shared by every session a run opens.
type ClientConfig struct {
	URL     string
	HTTP    *http.Client
	Headers http.Header // extra headers on every request (Authorization, ...)
	// Proto is the protocolVersion sent in initialize; the version the
	// server answers with goes in MCP-Protocol-Version afterwards. A
	// modern version (IsModern) is sent on every request instead, and
	// there is no initialize.
	Proto string
}

// Client is one MCP session, or, with a modern version, one client with
// no session. It is not safe for concurrent use: each worker has its own.
type Client struct {
	cfg       *ClientConfig
	sessionID string
	proto     string // negotiated, "" before initialize; modern: cfg.Proto
	meta      []byte // modern: the params._meta of every request; nil otherwise
	nextID    int64
	br        *bufio.Reader // for event streams, made on first use
	body      bytes.Buffer  // a JSON answer, reused
	data      []byte        // an SSE event's data, reused
	env       rpcMessage    // the decoded answer, reused
}

// NewClient returns a client with no session yet: call Open.
func NewClient(cfg *ClientConfig) *Client {
	c := &Client{cfg: cfg}
	if IsModern(cfg.Proto) {
		c.proto = cfg.Proto
		c.meta, _ = json.Marshal(map[string]any{
			"io.modelcontextprotocol/protocolVersion":    cfg.Proto,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         json.RawMessage(clientInfo),
		})
	}
	return c
}

// clientInfo is how mcpbench names itself, in initialize or in _meta.
const clientInfo = `{"name":"mcpbench","version":"1"}`

// Modern reports whether the client speaks a sessionless protocol version.
func (c *Client) Modern() bool { return c.meta != nil }

// SessionID is the Mcp-Session-Id the server issued ("" for a stateless server).
func (c *Client) SessionID() string { return c.sessionID }

// ProtocolVersion is the version the server chose in initialize, or the
// modern version every request carries.
func (c *Client) ProtocolVersion() string { return c.proto }

// Open gets the client ready before it is timed: Initialize, or for a
// modern client Discover (the revision's first request, which also opens
// the connection and fails fast on a server that does not speak it).
func (c *Client) Open(ctx context.Context) error {
	if c.Modern() {
		return c.Discover(ctx)
	}
	return c.Initialize(ctx)
}

// Discover sends server/discover and checks that the server supports the
// client's version. Modern clients only.
func (c *Client) Discover(ctx context.Context) error {
	if !c.Modern() {
		return fmt.Errorf("server/discover: protocol %s has sessions: use Initialize", c.cfg.Proto)
	}
	raw, _, err := c.call(ctx, "server/discover", nil)
	if err != nil {
		return err
	}
	var res struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || !slices.Contains(res.SupportedVersions, c.proto) {
		return &RequestError{Kind: KindProtocol, Method: "server/discover", Message: "the server does not list " + c.proto + " in supportedVersions: " + snippet(raw)}
	}
	return nil
}

// Initialize opens the session: initialize, then notifications/initialized.
// Errors carry the server's own message (JSON-RPC error or HTTP body).
// A modern client has no session to open.
func (c *Client) Initialize(ctx context.Context) error {
	if c.Modern() {
		return fmt.Errorf("initialize: protocol %s has no initialize", c.cfg.Proto)
	}
	c.sessionID, c.proto = "", ""
	params, _ := json.Marshal(map[string]any{
		"protocolVersion": c.cfg.Proto,
		"capabilities":    map[string]any{},
		"clientInfo":      json.RawMessage(clientInfo),
	})
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	raw, hdr, err := c.call(ctx, "initialize", params)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.ProtocolVersion == "" {
		return &RequestError{Kind: KindProtocol, Method: "initialize", Message: "result has no protocolVersion: " + snippet(raw)}
	}
	c.sessionID = hdr.Get("Mcp-Session-Id")
	c.proto = res.ProtocolVersion
	return c.Notify(ctx, "notifications/initialized", nil)
}

// Call sends a request and returns its result, which stays valid until the
// next call on c. A JSON-RPC error is a *RequestError of KindJSONRPC. A
// modern client adds params._meta (params must not carry one) and the
// headers.
func (c *Client) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	raw, _, err := c.call(ctx, method, params)
	return raw, err
}

// Notify sends a notification; the server answers 202 with no body.
func (c *Client) Notify(ctx context.Context, method string, params json.RawMessage) error {
	resp, err := c.post(ctx, method, "", encodeMessage(0, method, params, false, nil))
	if err != nil {
		return err
	}
	defer closeBody(resp)
	if resp.StatusCode/100 != 2 {
		return httpError(method, resp)
	}
	return nil
}

// Close ends the session with DELETE (a stateless server issued no session
// and gets nothing). A 405 is fine: the server does not let clients end
// sessions.
func (c *Client) Close(ctx context.Context) error {
	if c.sessionID == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.cfg.URL, nil)
	if err != nil {
		return err
	}
	c.setHeaders(req)
	c.sessionID = ""
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return transportError(ctx, "DELETE", err)
	}
	defer closeBody(resp)
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusMethodNotAllowed {
		return httpError("DELETE", resp)
	}
	return nil
}

// call POSTs one request and finds its response in the answer.
func (c *Client) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, http.Header, error) {
	c.nextID++
	id := c.nextID
	var name string
	if c.Modern() {
		name = mcpName(method, params)
	}
	resp, err := c.post(ctx, method, name, encodeMessage(id, method, params, true, c.meta))
	if err != nil {
		return nil, nil, err
	}
	defer closeBody(resp)
	if resp.StatusCode/100 != 2 {
		return nil, nil, httpError(method, resp)
	}
	ct := resp.Header.Get("Content-Type")
	var e *rpcMessage
	switch {
	case hasMediaType(ct, "application/json"):
		c.body.Reset()
		if _, err := c.body.ReadFrom(resp.Body); err != nil {
			return nil, nil, transportError(ctx, method, err)
		}
		e = &c.env
		e.reset()
		if err := json.Unmarshal(c.body.Bytes(), e); err != nil {
			return nil, nil, &RequestError{Kind: KindProtocol, Method: method, Message: "not a JSON-RPC message: " + snippet(c.body.Bytes())}
		}
	case hasMediaType(ct, "text/event-stream"):
		if e, err = c.readSSE(ctx, method, resp.Body, id); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, &RequestError{Kind: KindProtocol, Method: method,
			Message: fmt.Sprintf("HTTP %d with Content-Type %q", resp.StatusCode, ct)}
	}
	result, err := e.result(method, id)
	return result, resp.Header, err
}

// post sends one message; a modern client mirrors its method, and name
// when not "", in headers.
func (c *Client) post(ctx context.Context, method, name string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header["Content-Type"] = contentTypeJSON
	req.Header["Accept"] = acceptBoth
	c.setHeaders(req)
	if c.Modern() {
		req.Header["Mcp-Method"] = []string{method}
		if name != "" {
			req.Header["Mcp-Name"] = []string{headerValue(name)}
		}
	}
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return nil, transportError(ctx, method, err)
	}
	return resp, nil
}

var (
	contentTypeJSON = []string{"application/json"}
	acceptBoth      = []string{"application/json, text/event-stream"}
)

func (c *Client) setHeaders(req *http.Request) {
	for k, vs := range c.cfg.Headers {
		req.Header[k] = vs
	}
	if c.sessionID != "" {
		req.Header["Mcp-Session-Id"] = []string{c.sessionID}
	}
	if c.proto != "" {
		req.Header["Mcp-Protocol-Version"] = []string{c.proto}
	}
}

// streamEndWait bounds the wait for the end of an event stream after the
// response: a server should end it there, but one that keeps it open must
// not stall the worker.
const streamEndWait = time.Second

// readSSE reads events until the JSON-RPC response with the given id;
// notifications and server requests on the way are skipped. It then reads
// the stream to its end (servers close it after the response), so the
// connection can be reused; a stream still open after streamEndWait is
// closed instead, and its connection is lost.
func (c *Client) readSSE(ctx context.Context, method string, body io.ReadCloser, id int64) (*rpcMessage, error) {
	if c.br == nil {
		c.br = bufio.NewReaderSize(body, 16<<10)
	} else {
		c.br.Reset(body)
	}
	defer c.br.Reset(nil)
	c.data = c.data[:0]
	hasData := false
	for {
		line, err := c.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer: collect it whole.
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = c.br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return nil, transportError(ctx, method, err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			if hasData {
				c.data = append(c.data, '\n')
			}
			c.data, hasData = append(c.data, v...), true
		}
		// A blank line ends an event; so does the end of the stream.
		if (len(line) == 0 || err == io.EOF) && hasData {
			e := &c.env
			e.reset()
			if json.Unmarshal(c.data, e) != nil {
				return nil, &RequestError{Kind: KindProtocol, Method: method, Message: "event is not a JSON-RPC message: " + snippet(c.data)}
			}
			if e.Method == "" && idEquals(e.ID, id) {
				if err == nil {
					t := time.AfterFunc(streamEndWait, func() { body.Close() })
					_, _ = io.Copy(io.Discard, c.br)
					t.Stop()
				}
				return e, nil
			}
			c.data, hasData = c.data[:0], false
		}
		if err == io.EOF {
			return nil, &RequestError{Kind: KindProtocol, Method: method, Message: "event stream ended without a response"}
		}
	}
}

// rpcMessage is the part of a JSON-RPC message the client looks at.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// reset empties e but keeps the capacity of its buffers: json.Unmarshal
// appends into a RawMessage's existing array.
func (e *rpcMessage) reset() {
	e.ID, e.Result, e.Method, e.Error = e.ID[:0], e.Result[:0], "", nil
}

// result returns the result of the response to request id.
func (e *rpcMessage) result(method string, id int64) (json.RawMessage, error) {
	if e.Error != nil {
		return nil, &RequestError{Kind: KindJSONRPC, Method: method, Code: e.Error.Code, Message: e.Error.Message}
	}
	if !idEquals(e.ID, id) {
		return nil, &RequestError{Kind: KindProtocol, Method: method, Message: fmt.Sprintf("response id %s, want %d", e.ID, id)}
	}
	if len(e.Result) == 0 {
		return nil, &RequestError{Kind: KindProtocol, Method: method, Message: "response has neither result nor error"}
	}
	return e.Result, nil
}

func idEquals(raw json.RawMessage, id int64) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 1 && raw[0] == '"' { // an echoed id must keep its type, but be lenient
		raw = raw[1 : len(raw)-1]
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && n == id
}

// encodeMessage builds a JSON-RPC request (withID) or notification. With
// meta, params get a "_meta" member of that value (params that are not an
// object are sent as they are, for the server to refuse).
func encodeMessage(id int64, method string, params json.RawMessage, withID bool, meta []byte) []byte {
	// A fresh slice per message: the transport may still be reading the
	// previous body when its response has already arrived.
	b := make([]byte, 0, 64+len(method)+len(params)+len(meta))
	b = append(b, `{"jsonrpc":"2.0",`...)
	if withID {
		b = append(b, `"id":`...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	b = strconv.AppendQuote(b, method) // method names are plain ASCII
	if len(params) > 0 || meta != nil {
		b = append(b, `,"params":`...)
		b = appendParams(b, params, meta)
	}
	return append(b, '}')
}

// appendParams appends params, with a "_meta" member first when meta is
// set: spliced into the object's text, never decoded.
func appendParams(b []byte, params json.RawMessage, meta []byte) []byte {
	p := bytes.TrimSpace(params)
	if meta == nil {
		return append(b, params...)
	}
	if len(p) == 0 || string(p) == "null" {
		p = []byte("{}")
	}
	if len(p) < 2 || p[0] != '{' || p[len(p)-1] != '}' {
		return append(b, params...)
	}
	b = append(b, `{"_meta":`...)
	b = append(b, meta...)
	if inner := bytes.TrimSpace(p[1 : len(p)-1]); len(inner) > 0 {
		b = append(b, ',')
		b = append(b, inner...)
	}
	return append(b, '}')
}

// mcpName is the value a modern request mirrors in Mcp-Name: params.name
// of tools/call and prompts/get, params.uri of resources/read; "" for other
// methods, or when params do not say.
func mcpName(method string, params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	field := wire.MethodOf(method).NameField
	if (field != "name" && field != "uri") || json.Unmarshal(params, &p) != nil {
		return "" // (a task's id it does not mirror)
	}
	if field == "uri" {
		return p.URI
	}
	return p.Name
}

// Base64 sentinel of a header value that cannot be sent as it is.
const (
	b64Prefix = "=?base64?"
	b64Suffix = "?="
)

// headerValue is v as an Mcp-Name value: as it is when it is printable
// ASCII (space and tab included) with no whitespace at either end and not
// itself in the sentinel form; otherwise the Base64 of its UTF-8 in the
// sentinel form.
func headerValue(v string) string {
	safe := !strings.HasPrefix(v, b64Prefix) &&
		(v == "" || v[0] != ' ' && v[0] != '\t' && v[len(v)-1] != ' ' && v[len(v)-1] != '\t')
	for i := 0; safe && i < len(v); i++ {
		safe = v[i] == '\t' || v[i] >= 0x20 && v[i] <= 0x7e
	}
	if safe {
		return v
	}
	return b64Prefix + base64.StdEncoding.EncodeToString([]byte(v)) + b64Suffix
}

func hasMediaType(contentType, want string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), want)
}

// for every worker, so a run measures requests rather than TCP handshakes.
// Proxies from the environment are ignored: a benchmark talks to the URL.
func newHTTPClient(conns int, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: conns + 4,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}
