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
// to again (a backend's answer, read for this call): the message's params
// or result is data's own memory instead of a copy, one copy of a list
// page fewer.
func DecodeOwned(data []byte) (jsonrpc.Message, error) {
	var w wireMessage
	if decodeMembers(data, &w, false) {
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
	if decodeMembers(data, &w, true) {
		return w.message()
	}
	// What decodeMembers leaves (not JSON, not an object, a member of the
	// wrong type, a key only encoding/json's rules settle) is decoded as
	// it always was, for encoding/json's verdict and its errors.
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

// wireKeys are the members wireMessage decodes, in the order of the
// member* constants.
var wireKeys = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

const (
	memberJSONRPC = iota
	memberID
	memberMethod
	memberParams
	memberResult
	memberError
)

// decodeMembers decodes a message as encoding/json would, in one pass:
// the message is validated whole while its top level is walked
// (ValidMembers), its id, params and result are taken as their bytes, its
// jsonrpc and method read where they lie; only an error object goes
// through encoding/json. Every request and every backend answer is
// decoded here: encoding/json scanned each twice (once to validate, once
// to decode) and a list page's result a third time to copy it.
//
// false, with w untouched, when the message is not valid JSON, not an
// object, has a member of the wrong type, or names a member in a way only
// encoding/json's rules settle (a key differing from one of wireKeys in
// case only, or escaped, or a member twice): the caller then decodes it
// with encoding/json, whose verdict and error it keeps. With clone the
// raw members are copied out of data, as encoding/json copies a
// RawMessage; without, they are data's own bytes.
func decodeMembers(data []byte, w *wireMessage, clone bool) bool {
	return decodeMembersChecked(data, w, clone, nil)
}

// decodeMembersChecked is decodeMembers with the value of a member
// "result" checked by check, when set, instead of by the scanner
// (DecodeOwnedChecked).
func decodeMembersChecked(data []byte, w *wireMessage, clone bool, check func(data []byte, i int) int) bool {
	var sw wireMessage
	seen, bail := 0, false
	value := func(_ []byte, i int) int { return validValue(data, i, 1) }
	if check != nil {
		value = func(k []byte, i int) int {
			if string(k) != "result" {
				return validValue(data, i, 1)
			}
			if end := check(data, i); end > i && end <= len(data) {
				return end
			}
			return -1
		}
	}
	ok := membersWith(data, validString, value, func(k []byte, start, end int) bool {
		v := data[start:end]
		i := wireKeyIndex(k)
		if i < 0 {
			for _, name := range wireKeys {
				if bytes.EqualFold(k, []byte(name)) {
					bail = true // encoding/json matches keys without case
					return false
				}
			}
			return true // ignored, as encoding/json ignores it
		}
		if seen&(1<<i) != 0 {
			bail = true // the last one wins in encoding/json: let it decide
			return false
		}
		seen |= 1 << i
		null := len(v) == 4 && string(v) == "null"
		switch i {
		case memberJSONRPC:
			if null {
				return true // a null leaves a string as it is
			}
			if len(v) == 5 && string(v) == `"2.0"` {
				sw.JSONRPC = "2.0"
				return true
			}
			s, ok := String(v)
			sw.JSONRPC, bail = s, !ok
		case memberMethod:
			if null {
				return true
			}
			s, ok := String(v)
			sw.Method, bail = &s, !ok
		case memberError:
			if null {
				return true
			}
			var e jsonrpc.Error
			bail = json.Unmarshal(v, &e) != nil
			sw.Error = &e
		case memberID:
			sw.ID = v
		case memberParams:
			sw.Params = v
		case memberResult:
			sw.Result = v
		}
		return !bail
	})
	if !ok || bail {
		return false
	}
	if clone {
		sw.ID, sw.Params, sw.Result = cloneRaw(sw.ID), cloneRaw(sw.Params), cloneRaw(sw.Result)
	}
	*w = sw
	return true
}

// wireKeyIndex is k's index in wireKeys, -1 when it is none of them
// exactly (an escaped key such as "res\u0075lt" is none: encoding/json
// settles it).
func wireKeyIndex(k []byte) int {
	for i, name := range wireKeys {
		if string(k) == name {
			return i
		}
	}
	return -1
}

func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
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
