package wire

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Plain is resp with its error as the *jsonrpc.Error it wraps (a typed
// failure, such as the router's Failure, wraps one): the SDK's encoder
// keeps a wrapped error's code but drops its data. Any other message is
// returned as it is.
func Plain[M jsonrpc.Message](msg M) M {
	resp, ok := any(msg).(*jsonrpc.Response)
	if !ok || resp == nil || resp.Error == nil {
		return msg
	}
	var e *jsonrpc.Error
	if _, plain := resp.Error.(*jsonrpc.Error); plain || !errors.As(resp.Error, &e) {
		return msg
	}
	cp := *resp
	cp.Error = e
	return any(&cp).(M)
}

// EncodeMessage is jsonrpc.EncodeMessage of Plain(msg): a response's
// typed error encodes as the JSON-RPC error it wraps, data and all.
func EncodeMessage(msg jsonrpc.Message) ([]byte, error) {
	return jsonrpc.EncodeMessage(Plain(msg))
}

// EncodeResponse encodes a response like jsonrpc.EncodeMessage, but writes
// a successful result's bytes as they are instead of re-validating and
// compacting them through encoding/json: on a gateway the result is a
// backend's answer, already checked when Decode parsed it, or JSON the
// gateway built itself, and it is most of the bytes of most responses.
// The caller guarantees resp.Result is valid JSON. Errors, and responses
// without a usable id, go through the SDK's encoder.
func EncodeResponse(resp *jsonrpc.Response) ([]byte, error) {
	if resp.Error != nil || len(resp.Result) == 0 {
		return jsonrpc.EncodeMessage(Plain(resp))
	}
	var id []byte
	switch v := resp.ID.Raw().(type) {
	case int64:
		id = strconv.AppendInt(nil, v, 10)
	case string:
		var err error
		if id, err = json.Marshal(v); err != nil {
			return nil, err
		}
	default:
		return jsonrpc.EncodeMessage(Plain(resp))
	}
	b := make([]byte, 0, len(resp.Result)+len(id)+32)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, resp.Result...)
	return append(b, '}'), nil
}

// EncodeResponseAs is EncodeResponse with the id written as rawID, the
// request's id exactly as the client spelled it (from DecodeWithID): the
// client gets back the very bytes it sent, whatever escapes it chose. An
// empty rawID means resp.ID.
func EncodeResponseAs(resp *jsonrpc.Response, rawID json.RawMessage) ([]byte, error) {
	if len(rawID) == 0 {
		return EncodeResponse(resp)
	}
	var body []byte
	key := `,"result":`
	if resp.Error != nil {
		var err error
		if body, err = json.Marshal(resp.Error); err != nil {
			return nil, err
		}
		key = `,"error":`
	} else {
		body = resp.Result
		if len(body) == 0 {
			body = []byte("null")
		}
	}
	b := make([]byte, 0, len(body)+len(rawID)+32)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, rawID...)
	b = append(b, key...)
	b = append(b, body...)
	return append(b, '}'), nil
}

// AppendResponseHead appends to dst the bytes of EncodeResponseAs(resp,
// rawID) that come before a successful response's result; the result's
// bytes and a closing brace complete it. A writer can then send a large
// result (a list page of 1,000 tools, 770 kB) as it is, instead of
// copying it into an encoded message first and that into a framed one.
// ok is false, with dst as it was, for anything but a response with a
// result and an id that encodes without the SDK (an error, an empty
// result): encode those with EncodeResponseAs.
func AppendResponseHead(dst []byte, resp *jsonrpc.Response, rawID json.RawMessage) (_ []byte, ok bool) {
	if resp.Error != nil || len(resp.Result) == 0 {
		return dst, false
	}
	n := len(dst)
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	switch v := resp.ID.Raw().(type) {
	case nil:
		if len(rawID) == 0 {
			return dst[:n], false
		}
	case int64:
		if len(rawID) == 0 {
			dst = strconv.AppendInt(dst, v, 10)
		}
	case string:
		if len(rawID) == 0 {
			id, err := json.Marshal(v)
			if err != nil {
				return dst[:n], false
			}
			dst = append(dst, id...)
		}
	default:
		if len(rawID) == 0 {
			return dst[:n], false
		}
	}
	dst = append(dst, rawID...)
	return append(dst, `,"result":`...), true
}

// ErrorBodyOf is the body of a transport-level answer: an HTTP status with
// a JSON-RPC error, which every MCP client can display. rawID is the id of
// the request it answers as the client wrote it, or empty for null (the
// request was never decoded, or was refused before its id mattered). The
// body ends with a newline. It is the one writer of such bodies: the
// handler's errors, handler/auth's 401 and cmd/lambda's adapters all use
// it (through WriteError), with codes from codes.go.
func ErrorBodyOf(rawID json.RawMessage, e *jsonrpc.Error) []byte {
	if len(rawID) == 0 {
		rawID = json.RawMessage("null")
	}
	body, err := EncodeResponseAs(&jsonrpc.Response{Error: e}, rawID)
	if err != nil { // not reachable: an error object always encodes
		body = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":` + strconv.FormatInt(CodeInternalError, 10) + `,"message":"internal error"}}`)
	}
	return append(body, '\n')
}

// WriteError answers an HTTP request with status and the JSON-RPC error e
// for the request whose id is rawID (empty: null), with Retry-After in
// whole seconds (rounded up, at least 1) when retryAfter is positive. It
// is the one writer of error answers: the handler's, handler/auth's and
// cmd/lambda's all end here.
func WriteError(w http.ResponseWriter, status int, rawID json.RawMessage, e *jsonrpc.Error, retryAfter time.Duration) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(retryAfter.Seconds()))), 10))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(ErrorBodyOf(rawID, e))
}
