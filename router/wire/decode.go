// Package wire decodes JSON-RPC messages for the request path.
//
// It produces the go-sdk's own jsonrpc types, but decodes with
// encoding/json into raw fields instead of calling jsonrpc.DecodeMessage,
// whose decoder allocates a 64 KiB buffer per message: on a gateway that
// decodes every request and every backend answer, that buffer was almost
// all of the request path's allocation.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ErrParse marks input that is not JSON at all (JSON-RPC -32700); any other
// decoding error is an invalid message (-32600).
var ErrParse = errors.New("invalid JSON")

type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

// Decode parses one JSON-RPC 2.0 message: a *jsonrpc.Request (a
// notification when its ID is invalid) or a *jsonrpc.Response.
func Decode(data []byte) (jsonrpc.Message, error) {
	var w wireMessage
	if err := json.Unmarshal(data, &w); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || !json.Valid(data) {
			return nil, fmt.Errorf("%w: %v", ErrParse, err)
		}
		return nil, fmt.Errorf("invalid JSON-RPC message: %v", err)
	}
	if w.JSONRPC != "2.0" {
		return nil, fmt.Errorf("invalid JSON-RPC version %q", w.JSONRPC)
	}
	id, err := decodeID(w.ID)
	if err != nil {
		return nil, err
	}
	if w.Method != nil {
		return &jsonrpc.Request{ID: id, Method: *w.Method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("invalid JSON-RPC message: a response needs an id")
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, nil
}

// decodeID accepts what jsonrpc.MakeID does: absent or null (no id), a
// string, or a number (kept as an integer).
func decodeID(raw json.RawMessage) (jsonrpc.ID, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return jsonrpc.ID{}, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return jsonrpc.ID{}, fmt.Errorf("invalid JSON-RPC id: %v", err)
		}
		return jsonrpc.MakeID(s)
	default:
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || math.IsInf(f, 0) {
			return jsonrpc.ID{}, fmt.Errorf("invalid JSON-RPC id %s", raw)
		}
		return jsonrpc.MakeID(f)
	}
}
