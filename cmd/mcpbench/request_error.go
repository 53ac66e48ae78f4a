package main

// How a benchmark request fails, classified so a report counts failures by
// kind ("http 503", "jsonrpc -32601", "timeout") rather than by message:
// the error type the MCP client (mcp_client.go) returns, and the helpers
// that build one from an HTTP answer or a transport failure.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// Error kinds, the first word of ErrorKind keys in reports.
const (
	KindHTTP      = "http"       // a non-2xx status: "http 404"
	KindJSONRPC   = "jsonrpc"    // a JSON-RPC error response: "jsonrpc -32602"
	KindToolError = "tool-error" // a tools/call result with isError: true
	KindTransport = "transport"  // connect, write or read failed
	KindTimeout   = "timeout"    // the request took longer than -timeout
	KindProtocol  = "protocol"   // an answer that is not a valid MCP response
)

// RequestError is a failed MCP request, classified for the error counts.
type RequestError struct {
	Kind    string // one of the Kind constants
	Status  int    // HTTP status for KindHTTP
	Code    int64  // JSON-RPC error code for KindJSONRPC
	Method  string
	Message string // the server's message (or the start of its body)
	Err     error  // the underlying error for transport and timeout errors
}

// Key is the label errors are counted under: "http 503", "jsonrpc -32601",
// "transport", ...
func (e *RequestError) Key() string {
	switch e.Kind {
	case KindHTTP:
		return KindHTTP + " " + strconv.Itoa(e.Status)
	case KindJSONRPC:
		return KindJSONRPC + " " + strconv.FormatInt(e.Code, 10)
	}
	return e.Kind
}

func (e *RequestError) Error() string {
	var b strings.Builder
	b.WriteString(e.Method)
	b.WriteString(": ")
	switch e.Kind {
	case KindHTTP:
		fmt.Fprintf(&b, "HTTP %d %s", e.Status, http.StatusText(e.Status))
	case KindJSONRPC:
		fmt.Fprintf(&b, "JSON-RPC error %d", e.Code)
	case KindToolError:
		b.WriteString("tool returned isError")
	default:
		b.WriteString(e.Kind)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *RequestError) Unwrap() error { return e.Err }

// errorKey classifies any error for the error counts.
func errorKey(err error) string {
	var re *RequestError
	if errors.As(err, &re) {
		return re.Key()
	}
	return KindTransport
}

// httpError reads the start of the body: servers put their reason there.
func httpError(method string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	msg := strings.TrimSpace(string(b))
	// A JSON-RPC error in the body says it best.
	var e rpcMessage
	if json.Unmarshal(b, &e) == nil && e.Error != nil {
		msg = fmt.Sprintf("JSON-RPC error %d: %s", e.Error.Code, e.Error.Message)
	}
	return &RequestError{Kind: KindHTTP, Status: resp.StatusCode, Method: method, Message: oneLine(msg, 200)}
}

func transportError(ctx context.Context, method string, err error) error {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &RequestError{Kind: KindTimeout, Method: method, Err: err}
		}
	}
	// Drop the "Post \"URL\":" prefix: the URL is in every report already.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &RequestError{Kind: KindTransport, Method: method, Err: err}
}

// closeBody drains what is left (bounded) so the connection is reused.
func closeBody(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

func snippet(b []byte) string { return oneLine(string(b), 200) }

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// newHTTPClient returns an HTTP client whose idle pool holds a connection
