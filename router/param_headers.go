package router

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A 2026-07-28 tools/call mirrors some arguments in Mcp-Param-{X} headers:
// those whose property in the tool's inputSchema carries an x-mcp-header
// annotation naming X (SEP-2243). The server must refuse a request whose
// headers and arguments disagree (-32020, HTTP 400): a header missing for
// an argument that is there, one present for an argument that is not, a
// malformed Base64 sentinel, a different value.
//
// A 2026-07-28 backend checks its own: the gateway passes the client's
// headers on unchanged (renaming never touches arguments), and makes them
// from the arguments when the client sent none for them (a 2025-era
// session's call) or a hook rewrote the arguments (withParamHeaders). A 2025-era
// backend never looks at them, so for a call translated to one the
// gateway checks, against the schema the backend lists (the same per
// instance cache validate_arguments reads, router/tool_schemas.go). When
// that schema cannot be read the call goes on unchecked: the backend it
// would protect does not read the headers either.

// paramHeaderPrefix starts the header of an annotated argument.
const paramHeaderPrefix = "Mcp-Param-"

// paramBinding is one annotated property: its path in the arguments and
// the header suffix it is mirrored in.
type paramBinding struct {
	path   []string
	header string
}

// checkParamHeaders checks a translated tools/call's Mcp-Param-* headers
// against its arguments; nil when they agree, or nothing can be checked.
func (rc *routedCalls) checkParamHeaders(ctx context.Context, v *vhost, c *Call, t *target) *jsonrpc.Error {
	bindings := rc.toolParamBindings(ctx, v, c, t)
	if len(bindings) == 0 {
		return nil
	}
	var args map[string]json.RawMessage
	_ = json.Unmarshal(t.params["arguments"], &args)
	if msg := paramHeaderMismatch(c.Header, bindings, args); msg != "" {
		return &jsonrpc.Error{Code: wire.CodeHeaderMismatch, Message: msg}
	}
	return nil
}

// withParamHeaders returns t carrying the Mcp-Param-* headers of a
// tools/call from a 2025-era session to a 2026-07-28 backend, made from
// its arguments (params, as the backend gets them) and the tool's
// annotations: the session's client sent none, and the backend refuses a
// call that lacks one. Without the schema, t is returned as it is; t
// itself is never changed (a task's rounds share it).
func (rc *routedCalls) withParamHeaders(ctx context.Context, v *vhost, c *Call, t *target, params json.RawMessage) *target {
	bindings := rc.toolParamBindings(ctx, v, c, t)
	if len(bindings) == 0 {
		return t
	}
	var p struct {
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(params, &p)
	h := http.Header{}
	for _, b := range bindings {
		if arg, ok := argumentAt(p.Arguments, b.path); ok {
			if s, ok := primitiveString(arg); ok {
				h.Set(paramHeaderPrefix+b.header, wire.EncodeHeaderValue(s))
			}
		}
	}
	if len(h) == 0 {
		return t
	}
	with := *t
	with.headers = h
	return &with
}

// toolParamBindings are the annotated arguments of the call's tool, from
// the schema its backend lists; none when that cannot be read (logged at
// debug: the call goes on as if the tool had none).
func (rc *routedCalls) toolParamBindings(ctx context.Context, v *vhost, c *Call, t *target) []paramBinding {
	schema, err := rc.fed.toolInputSchema(ctx, v, c, t.backend, t.name)
	if err != nil {
		rc.log.Debug("Mcp-Param-* headers neither checked nor made: the tool's schema is not available", "vhost", v.name, "backend", t.backend, "error", err)
		return nil
	}
	return paramBindings(schema)
}

// paramBindings reads the x-mcp-header annotations of an inputSchema, at
// any depth of nested object properties.
func paramBindings(schema json.RawMessage) []paramBinding {
	if !bytes.Contains(schema, []byte(`"x-mcp-header"`)) {
		return nil // the common case costs one scan
	}
	var walk func(raw json.RawMessage, path []string, out []paramBinding) []paramBinding
	walk = func(raw json.RawMessage, path []string, out []paramBinding) []paramBinding {
		var p struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if json.Unmarshal(raw, &p) != nil {
			return out
		}
		for name, sub := range p.Properties {
			at := append(append([]string(nil), path...), name)
			var h struct {
				Header string `json:"x-mcp-header"`
			}
			if json.Unmarshal(sub, &h) == nil && h.Header != "" {
				out = append(out, paramBinding{path: at, header: h.Header})
			}
			out = walk(sub, at, out)
		}
		return out
	}
	return walk(schema, nil, nil)
}

// paramHeaderMismatch says how hdr and args disagree on the bindings, ""
// when they agree.
func paramHeaderMismatch(hdr http.Header, bindings []paramBinding, args map[string]json.RawMessage) string {
	for _, b := range bindings {
		name := paramHeaderPrefix + b.header
		got := hdr.Get(name)
		arg, present := argumentAt(args, b.path)
		where := strings.Join(b.path, ".")
		if !present || string(arg) == "null" {
			if got != "" {
				return "header mismatch: " + name + " is set, but argument " + wire.Quote(where) + " is absent"
			}
			continue
		}
		if got == "" {
			return "header mismatch: " + name + " is missing for argument " + wire.Quote(where)
		}
		decoded, ok := wire.DecodeHeaderValue(got)
		if !ok {
			return "header mismatch: " + name + " holds malformed Base64"
		}
		if !primitiveMatches(decoded, arg) {
			return "header mismatch: " + name + " does not match argument " + wire.Quote(where)
		}
	}
	return ""
}

// argumentAt follows path through nested argument objects.
func argumentAt(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	cur, ok := json.RawMessage(nil), false
	obj := args
	for i, key := range path {
		if cur, ok = obj[key]; !ok {
			return nil, false
		}
		if i < len(path)-1 {
			obj = nil
			if json.Unmarshal(cur, &obj) != nil {
				return nil, false
			}
		}
	}
	return cur, ok
}

// primitiveString is a JSON argument as a header states it: a string as
// is, a boolean as true/false, an integer within ±(2^53−1) in decimal; ok
// is false for anything else (null, numbers with a fraction, objects).
func primitiveString(arg json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(arg, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > maxSafeInteger {
			return "", false
		}
		return strconv.FormatInt(int64(v), 10), true
	}
	return "", false
}

// maxSafeInteger bounds the integers a header may mirror.
const maxSafeInteger = 1<<53 - 1

// primitiveMatches compares a decoded header with a JSON argument: a
// string as is, a boolean as true/false, an integer (within ±(2^53−1)) by
// value. Anything else never matches: only those types may be mirrored.
func primitiveMatches(header string, arg json.RawMessage) bool {
	want, ok := primitiveString(arg)
	if !ok {
		return false
	}
	var n float64
	if json.Unmarshal(arg, &n) == nil {
		// An integer compares by value: "7" and "7.0" both state 7.
		h, err := strconv.ParseFloat(header, 64)
		return err == nil && h == n
	}
	return header == want
}
