// Package wire is the wire format every layer of the gateway shares:
// JSON-RPC decoding and encoding for the request path, and the tables of
// JSON-RPC error codes (codes.go) and MCP protocol versions
// (protocol_versions.go) that the handler, the router and the backend
// client all read.
//
// Decoding produces the go-sdk's own jsonrpc types, but decodes with
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
// notification when it has no id) or a *jsonrpc.Response. Ids follow the
// MCP rule (see request_id.go): a present id that is not a string or an
// int64 integer, null included, is an error wrapping ErrInvalidID.
func Decode(data []byte) (jsonrpc.Message, error) {
	msg, _, err := DecodeWithID(data)
	return msg, err
}

// DecodeOwned is Decode for bytes the caller hands over and never writes
// to again (a backend's answer, read for this call): a large message's
// result or params is data's own memory instead of a copy, one copy of a
// list page fewer.
func DecodeOwned(data []byte) (jsonrpc.Message, error) {
	var w wireMessage
	if len(data) >= bigMessage && decodeBig(data, &w, false) {
		msg, _, err := w.message()
		return msg, err
	}
	return Decode(data)
}

// DecodeWithID is Decode that also returns the message's id exactly as the
// sender wrote it (nil when absent), for echoing it byte for byte
// (EncodeResponseAs).
func DecodeWithID(data []byte) (jsonrpc.Message, json.RawMessage, error) {
	var w wireMessage
	if len(data) >= bigMessage && decodeBig(data, &w, true) {
		return w.message()
	}
	if err := json.Unmarshal(data, &w); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || !json.Valid(data) {
			return nil, nil, fmt.Errorf("%w: %v", ErrParse, err)
		}
		return nil, nil, errors.New("invalid JSON-RPC message: " + shapeError(err))
	}
	return w.message()
}

// message is the decoded message w holds.
func (w *wireMessage) message() (jsonrpc.Message, json.RawMessage, error) {
	if w.JSONRPC != "2.0" {
		return nil, nil, fmt.Errorf("invalid JSON-RPC version %s", Quote(w.JSONRPC))
	}
	var id jsonrpc.ID
	if w.ID != nil { // present, null included
		var err error
		if id, err = ParseID(w.ID); err != nil {
			return nil, nil, err
		}
	}
	if w.Method != nil {
		return &jsonrpc.Request{ID: id, Method: *w.Method, Params: w.Params}, w.ID, nil
	}
	if !id.IsValid() {
		return nil, nil, errors.New("invalid JSON-RPC message: a response needs an id")
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, w.ID, nil
}

// bigMessage is the size from which decodeBig is tried.
const bigMessage = 4 << 10

// wireKeys are the members wireMessage decodes.
var wireKeys = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// decodeBig decodes a large message as encoding/json would, in one pass:
// the message is validated whole while its top level is walked
// (ValidMembers), and its result or params, which is what makes a
// message large (a list page of 10,000 tools), taken as its bytes instead
// of being scanned again by the decoder; the other members, a few bytes,
// are decoded by encoding/json. false, with w untouched, when
// the message is not valid JSON, not an object, or names a member in a
// way only encoding/json's rules settle (a key differing from one of
// wireKeys in case only, the large member twice): the caller then
// decodes it as usual. With clone the large member is copied out of data,
// as encoding/json copies a RawMessage; without, it is data's own bytes.
func decodeBig(data []byte, w *wireMessage, clone bool) bool {
	var big []byte
	bigKey, bail := "", false
	small := make([]byte, 0, 256)
	small = append(small, '{')
	ok := ValidMembers(data, func(k, v []byte) bool {
		switch string(k) {
		case "params", "result":
			if big != nil {
				bail = true
				return false
			}
			big, bigKey = v, string(k)
			return true
		case "jsonrpc", "id", "method", "error":
			if len(small) > 1 {
				small = append(small, ',')
			}
			small = append(small, '"')
			small = append(small, k...)
			small = append(small, '"', ':')
			small = append(small, v...)
			return true
		}
		for _, name := range wireKeys {
			if bytes.EqualFold(k, []byte(name)) {
				bail = true // encoding/json matches keys without case
				return false
			}
		}
		return true // ignored, as encoding/json ignores it
	})
	if !ok || bail || big == nil {
		return false
	}
	var sw wireMessage
	if json.Unmarshal(append(small, '}'), &sw) != nil {
		return false
	}
	if clone {
		big = bytes.Clone(big)
	}
	if bigKey == "result" {
		sw.Result = big
	} else {
		sw.Params = big
	}
	*w = sw
	return true
}

// shapeError says which member of a message has the wrong type, without
// encoding/json's Go type names.
func shapeError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		switch te.Field {
		case "jsonrpc", "method":
			return te.Field + " must be a string"
		case "error", "error.code", "error.message", "error.data":
			return "error must be an object with an integer code and a string message"
		}
		return te.Field + " has the wrong type"
	}
	return "a message must be a JSON object"
}
