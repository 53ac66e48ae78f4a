// Package envelope is the 2026-07-28 result envelope, both ways: what a
// result for a 2026-07-28 client carries (resultType, the gateway's
// serverInfo in _meta, and for cacheable results ttlMs and cacheScope),
// and its removal from a result on its way to a 2025-era session.
package envelope

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/mcpgw/gateway/internal/wire"
)

// Every result of protocol 2026-07-28 says whether it is final
// (resultType "complete") or asks for input ("input_required"), names the
// server that produced it (_meta serverInfo: the gateway's, never a
// backend's), and the results of lists and resources/read say how long a
// client or shared cache may keep them (ttlMs) and for whom (cacheScope).

// Result types, and the _meta key of serverInfo.
const (
	ResultComplete      = "complete"
	ResultInputRequired = "input_required"
	// ResultTask is a CreateTaskResult (the Tasks extension): its ttlMs
	// is the task's lifetime, not a caching hint.
	ResultTask = "task"

	MetaServerInfo = "io.modelcontextprotocol/serverInfo"

	scopePublic  = "public"
	scopePrivate = "private"
)

// Hints are the caching fields of a cacheable result.
type Hints struct {
	TTLMs   int64
	Private bool
	// FromResult: the result is one backend's (a routed resources/read),
	// whose own ttlMs and cacheScope stand (Private still wins).
	FromResult bool
}

// Cacheable reports whether a method's complete results carry Hints.
func Cacheable(method string) bool { return wire.MethodOf(method).Cacheable }

// HintsOf reads a backend result's caching fields: a backend that sends
// none (a legacy one) allows no caching (ttlMs 0), as the revision says a
// client must assume.
func HintsOf(result map[string]json.RawMessage) Hints {
	var h Hints
	if n, err := strconv.ParseInt(string(result["ttlMs"]), 10, 64); err == nil && n > 0 {
		h.TTLMs = n
	}
	var scope string
	_ = json.Unmarshal(result["cacheScope"], &scope)
	h.Private = scope == scopePrivate
	return h
}

// Merge combines the hints of two results served together: the shorter
// lifetime, and private if either is.
func (h Hints) Merge(o Hints) Hints {
	return Hints{TTLMs: min(h.TTLMs, o.TTLMs), Private: h.Private || o.Private}
}

// Decorate adds what a 2026-07-28 result needs to a result the gateway
// built or a backend sent (DecorateFields), serverInfo being the
// gateway's. Top-level fields are decoded, not their values: a tool's
// content passes through byte for byte.
func Decorate(result json.RawMessage, hints *Hints, serverInfo json.RawMessage) (json.RawMessage, error) {
	if hints == nil {
		if out, ok := decorateRaw(result, serverInfo); ok {
			return out, nil
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	DecorateFields(m, hints, serverInfo)
	return wire.RawObject(m), nil
}

// decorateRaw is Decorate without hints, on the result's bytes: one pass
// to read resultType and _meta, one to write, every other member copied
// as it is (a routed tools/call's result, the hot path, is never decoded
// into a map). ok is false for what it leaves to the decoding path: a
// result that is not a well-formed object, a resultType that is not a
// string, a _meta that is not an object.
func decorateRaw(result, serverInfo []byte) (_ json.RawMessage, ok bool) {
	kind, meta := ResultComplete, []byte(nil)
	hasKind, good := false, true
	if !wire.MembersBytes(result, func(k, val []byte) bool {
		switch string(k) {
		case "resultType":
			s, isString := wire.String(val)
			if !isString {
				good = false
			} else if s != "" {
				kind = s
			}
			hasKind = true
		case "_meta":
			meta = val
		}
		return good
	}) || !good {
		return nil, false
	}
	if meta != nil {
		if string(meta) == "null" {
			meta = nil
		} else if meta, good = wire.WithMember(meta, MetaServerInfo, serverInfo); !good {
			return nil, false
		}
	}
	out := make([]byte, 0, len(result)+len(serverInfo)+80)
	out = append(out, '{')
	n := 0
	member := func(key string, val []byte) {
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(out, wire.Quoted(key)...)
		out = append(out, ':')
		out = append(out, val...)
	}
	wire.MembersBytes(result, func(k, val []byte) bool {
		switch string(k) {
		case "resultType":
			member("resultType", wire.Quoted(kind))
		case "_meta":
			if meta != nil {
				member("_meta", meta)
			}
		case "ttlMs", "cacheScope":
			// A task's ttlMs is its lifetime; interim results carry no
			// hints; a complete one without hints keeps the backend's.
			if kind == ResultComplete || kind == ResultTask && string(k) == "ttlMs" {
				member(string(k), val)
			}
		default:
			member(string(k), val)
		}
		return true
	})
	if !hasKind {
		member("resultType", wire.Quoted(kind))
	}
	if meta == nil {
		member("_meta", []byte(`{"`+MetaServerInfo+`":`+string(serverInfo)+`}`))
	}
	return append(out, '}'), true
}

// DecorateFields sets a 2026-07-28 result's own fields in m, its
// top-level fields: resultType (kept when the backend set one), the
// gateway's serverInfo in _meta, and for a complete cacheable result
// hints (nil: none to set). A list page calls it on the fields it
// assembles, so the page is never parsed again to be decorated (in a
// cached walk over 8 backends that parse was half the router's time).
func DecorateFields(m map[string]json.RawMessage, hints *Hints, serverInfo json.RawMessage) {
	kind := ResultComplete
	if err := json.Unmarshal(m["resultType"], &kind); err != nil || kind == "" {
		kind = ResultComplete
	}
	m["resultType"], _ = json.Marshal(kind)
	meta := map[string]json.RawMessage{}
	if raw, ok := m["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
	}
	meta[MetaServerInfo] = serverInfo
	m["_meta"] = wire.RawObject(meta)
	switch {
	case kind == ResultTask:
		delete(m, "cacheScope") // ttlMs is the task's: kept as the backend set it
	case kind != ResultComplete:
		// Interim results are never cached, so they carry no hints.
		delete(m, "ttlMs")
		delete(m, "cacheScope")
	case hints != nil:
		if hints.FromResult {
			own := HintsOf(m)
			hints = &Hints{TTLMs: own.TTLMs, Private: own.Private || hints.Private}
		}
		m["ttlMs"] = json.RawMessage(strconv.FormatInt(hints.TTLMs, 10))
		scope := scopePublic
		if hints.Private {
			scope = scopePrivate
		}
		m["cacheScope"], _ = json.Marshal(scope)
	}
}

// A 2026-07-28 backend's results carry the revision's envelope: resultType,
// ttlMs and cacheScope at the top, and its own serverInfo in _meta. A
// 2025-era session has no such fields (its client may refuse or misread
// them), and the server it talks to is the gateway, never a backend: so
// a routed result on its way to a 2025 session loses them. A 2026-07-28
// client's results get the gateway's serverInfo instead
// (Decorate).

// modernEnvelopeFields are the top-level fields only the 2026-07-28
// revision has.
var modernEnvelopeFields = [...]string{"resultType", "ttlMs", "cacheScope"}

// Strip drops the 2026-07-28 envelope from a result for a 2025-era
// session; a result with none passes byte for byte.
func Strip(result json.RawMessage) json.RawMessage {
	if !bytes.Contains(result, []byte(`"resultType"`)) && !bytes.Contains(result, []byte(`"ttlMs"`)) &&
		!bytes.Contains(result, []byte(`"cacheScope"`)) && !bytes.Contains(result, []byte(MetaServerInfo)) {
		return result
	}
	if out, ok := stripRaw(result); ok {
		return out
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil || m == nil {
		return result
	}
	changed := false
	for _, f := range modernEnvelopeFields {
		if _, ok := m[f]; ok {
			delete(m, f)
			changed = true
		}
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(m["_meta"], &meta) == nil && meta != nil {
		if _, ok := meta[MetaServerInfo]; ok {
			delete(meta, MetaServerInfo)
			if len(meta) == 0 {
				delete(m, "_meta")
			} else {
				m["_meta"], _ = json.Marshal(meta)
			}
			changed = true
		}
	}
	if !changed {
		return result
	}
	out, err := json.Marshal(m)
	if err != nil {
		return result
	}
	return out
}

// StripFields is Strip of a result decoded into its members: a list page
// of a single-backend vhost, built from the backend's own members, on its
// way to a 2025-era session.
func StripFields(m map[string]json.RawMessage) {
	for _, f := range modernEnvelopeFields {
		delete(m, f)
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(m["_meta"], &meta) != nil || meta == nil {
		return
	}
	if _, ok := meta[MetaServerInfo]; !ok {
		return
	}
	delete(meta, MetaServerInfo)
	if len(meta) == 0 {
		delete(m, "_meta")
		return
	}
	m["_meta"], _ = json.Marshal(meta)
}

// stripRaw is Strip on the result's bytes: every member but the envelope's
// copied as it is, _meta losing only serverInfo (and going when nothing
// else is left in it). ok is false for a result that is not a
// well-formed object, or whose _meta is neither an object nor null: the
// decoding path has the last word on those.
func stripRaw(result []byte) (_ json.RawMessage, ok bool) {
	out := make([]byte, 0, len(result))
	out = append(out, '{')
	n, good := 0, true
	member := func(key []byte, val []byte) {
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(out, quotedKey(key)...)
		out = append(out, ':')
		out = append(out, val...)
	}
	if !wire.MembersBytes(result, func(k, val []byte) bool {
		switch string(k) {
		case "resultType", "ttlMs", "cacheScope":
		case "_meta":
			if string(val) == "null" {
				member(k, val)
				return true
			}
			rest := make([]byte, 0, len(val))
			rest = append(rest, '{')
			kept, removed := 0, false
			if !wire.MembersBytes(val, func(mk, mv []byte) bool {
				if string(mk) == MetaServerInfo {
					removed = true
					return true
				}
				if kept > 0 {
					rest = append(rest, ',')
				}
				kept++
				rest = append(rest, quotedKey(mk)...)
				rest = append(rest, ':')
				rest = append(rest, mv...)
				return true
			}) {
				good = false
				return false
			}
			switch {
			case !removed:
				member(k, val) // no serverInfo: _meta as it came
			case kept > 0:
				member(k, append(rest, '}'))
			}
		default:
			member(k, val)
		}
		return true
	}) || !good {
		return nil, false
	}
	return append(out, '}'), true
}

// quotedKey is the JSON string token of a member key.
func quotedKey(key []byte) []byte { return wire.Quoted(string(key)) }
