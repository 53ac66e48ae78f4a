package openapi

// An API's answer as a tool result. A 2xx JSON body is the result's
// structuredContent (an object as it is, anything else under "result")
// and, as MCP advises, its text too; other text is text; images and audio
// are their content blocks; other bytes an embedded blob. Any other
// status is a result with isError, carrying the status and a bounded
// excerpt of the body, so the model can read why. A body is read up to
// max_response_bytes and no further: a larger one is refused.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"
)

// errorExcerptBytes bounds the body excerpt of a non-2xx result.
const errorExcerptBytes = 2048

// TooLargeError is a response body over max_response_bytes.
type TooLargeError struct {
	Limit    int64
	Declared int64 // Content-Length, or -1
}

func (e *TooLargeError) Error() string {
	if e.Declared >= 0 {
		return fmt.Sprintf("the response is %d bytes, more than max_response_bytes (%d)", e.Declared, e.Limit)
	}
	return fmt.Sprintf("the response is larger than max_response_bytes (%d)", e.Limit)
}

// ReadBody reads a response body of at most the API's max_response_bytes:
// a declared length past it is refused before reading, an undeclared one
// as soon as it passes.
func (a *API) ReadBody(resp *http.Response, r io.Reader) ([]byte, error) {
	if resp.ContentLength > a.maxBytes {
		return nil, &TooLargeError{Limit: a.maxBytes, Declared: resp.ContentLength}
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	n, err := buf.ReadFrom(io.LimitReader(r, a.maxBytes+1))
	if err != nil {
		return nil, err
	}
	if n > a.maxBytes {
		return nil, &TooLargeError{Limit: a.maxBytes, Declared: -1}
	}
	return buf.Bytes(), nil
}

// Result is the CallToolResult of a response whose body was read.
func (t *Tool) Result(resp *http.Response, body []byte) json.RawMessage {
	status := fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		text := status
		if ex := excerpt(resp.Header.Get("Content-Type"), body); ex != "" {
			text += "\n\n" + ex
		}
		return errorResult(text)
	}
	if len(body) == 0 {
		return textResult(status+" (no body)", nil)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case (mt == "" || kindOf(mt) == bodyJSON) && json.Valid(body):
		return textResult(string(body), t.structured(body))
	case textual(mt):
		return textResult(toValidUTF8(body), nil)
	case strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "audio/"):
		kind := "image"
		if strings.HasPrefix(mt, "audio/") {
			kind = "audio"
		}
		return marshal(map[string]any{"content": []any{map[string]any{"type": kind, "mimeType": mt,
			"data": base64.StdEncoding.EncodeToString(body)}}})
	default:
		if mt == "" {
			mt = "application/octet-stream"
		}
		return marshal(map[string]any{"content": []any{map[string]any{"type": "resource", "resource": map[string]any{
			"uri": "openapi:response/" + t.name, "mimeType": mt, "blob": base64.StdEncoding.EncodeToString(body)}}}})
	}
}

// structured is a JSON body as structuredContent.
func (t *Tool) structured(body []byte) json.RawMessage {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if !t.wrap && len(trimmed) > 0 && trimmed[0] == '{' {
		return trimmed
	}
	out := make([]byte, 0, len(trimmed)+len(`{"result":}`))
	out = append(out, `{"result":`...)
	out = append(out, trimmed...)
	return append(out, '}')
}

// TooLargeResult is the result of a response refused for its size.
func (t *Tool) TooLargeResult(status int, err *TooLargeError) json.RawMessage {
	return errorResult(fmt.Sprintf("HTTP %d %s: %s; nothing of it is returned (ask for less, e.g. a smaller page)",
		status, http.StatusText(status), err.Error()))
}

// RedirectResult is the result of a redirect the gateway did not follow.
func (t *Tool) RedirectResult(status int) json.RawMessage {
	return errorResult(fmt.Sprintf("HTTP %d %s: a redirect to another origin, which the gateway does not follow", status, http.StatusText(status)))
}

func textResult(text string, structured json.RawMessage) json.RawMessage {
	m := map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
	if structured != nil {
		m["structuredContent"] = structured
	}
	return marshal(m)
}

func errorResult(text string) json.RawMessage {
	return marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": true})
}

func marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil { // only strings, maps and checked JSON go in
		return errorResult("cannot encode the result")
	}
	return b
}

// excerpt is the start of an error body when it is text.
func excerpt(contentType string, body []byte) string {
	mt, _, _ := mime.ParseMediaType(contentType)
	if len(body) == 0 || (mt != "" && !textual(mt) && kindOf(mt) != bodyJSON) {
		return ""
	}
	cut := body
	suffix := ""
	if len(cut) > errorExcerptBytes {
		cut, suffix = cut[:errorExcerptBytes], fmt.Sprintf("… (%d bytes in all)", len(body))
	}
	return toValidUTF8(cut) + suffix
}

func textual(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"), kindOf(mt) == bodyJSON, strings.HasSuffix(mt, "+xml"),
		mt == "application/xml", mt == "application/yaml", mt == "application/x-yaml",
		mt == "application/javascript", mt == "application/x-www-form-urlencoded":
		return true
	}
	return false
}

func toValidUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// ErrInvalidArguments marks arguments a request cannot be built from.
var ErrInvalidArguments = errors.New("invalid arguments")
