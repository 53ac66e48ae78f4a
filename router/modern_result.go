package router

import (
	"encoding/json"
	"strconv"

	"github.com/mcpgw/gateway/internal/wire"
)

// Every result of protocol 2026-07-28 says whether it is final
// (resultType "complete") or asks for input ("input_required"), names the
// server that produced it (_meta serverInfo: the gateway's, never a
// backend's), and the results of lists and resources/read say how long a
// client or shared cache may keep them (ttlMs) and for whom (cacheScope).

const (
	resultComplete      = "complete"
	resultInputRequired = "input_required"

	metaServerInfo = "io.modelcontextprotocol/serverInfo"

	scopePublic  = "public"
	scopePrivate = "private"
)

// cacheHints are the caching fields of a cacheable result.
type cacheHints struct {
	ttlMs   int64
	private bool
	// fromResult: the result is one backend's (a routed resources/read),
	// whose own ttlMs and cacheScope stand (private still wins).
	fromResult bool
}

// cacheable reports whether a method's complete results carry cacheHints.
func cacheable(method string) bool { return wire.MethodOf(method).Cacheable }

// hintsOf reads a backend result's caching fields: a backend that sends
// none (a legacy one) allows no caching (ttlMs 0), as the revision says a
// client must assume.
func hintsOf(result map[string]json.RawMessage) cacheHints {
	var h cacheHints
	if n, err := strconv.ParseInt(string(result["ttlMs"]), 10, 64); err == nil && n > 0 {
		h.ttlMs = n
	}
	var scope string
	_ = json.Unmarshal(result["cacheScope"], &scope)
	h.private = scope == scopePrivate
	return h
}

// merge combines the hints of two results served together: the shorter
// lifetime, and private if either is.
func (h cacheHints) merge(o cacheHints) cacheHints {
	return cacheHints{ttlMs: min(h.ttlMs, o.ttlMs), private: h.private || o.private}
}

// decorateModern adds what a 2026-07-28 result needs to a result the
// gateway built or a backend sent (decorateFields). Top-level fields are
// decoded, not their values: a tool's content passes through byte for
// byte.
func (r *Router) decorateModern(result json.RawMessage, method string, hints *cacheHints) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	r.decorateFields(m, hints)
	return rawObject(m), nil
}

// decorateFields sets a 2026-07-28 result's own fields in m, its
// top-level fields: resultType (kept when the backend set one), the
// gateway's serverInfo in _meta, and for a complete cacheable result
// hints (nil: none to set). A list page calls it on the fields it
// assembles, so the page is never parsed again to be decorated (in a
// cached walk over 8 backends that parse was half the router's time).
func (r *Router) decorateFields(m map[string]json.RawMessage, hints *cacheHints) {
	kind := resultComplete
	if err := json.Unmarshal(m["resultType"], &kind); err != nil || kind == "" {
		kind = resultComplete
	}
	m["resultType"], _ = json.Marshal(kind)
	meta := map[string]json.RawMessage{}
	if raw, ok := m["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
	}
	meta[metaServerInfo] = r.clientInfo()
	m["_meta"] = rawObject(meta)
	switch {
	case kind != resultComplete:
		// Interim results are never cached, so they carry no hints.
		delete(m, "ttlMs")
		delete(m, "cacheScope")
	case hints != nil:
		if hints.fromResult {
			own := hintsOf(m)
			hints = &cacheHints{ttlMs: own.ttlMs, private: own.private || hints.private}
		}
		m["ttlMs"] = json.RawMessage(strconv.FormatInt(hints.ttlMs, 10))
		scope := scopePublic
		if hints.private {
			scope = scopePrivate
		}
		m["cacheScope"], _ = json.Marshal(scope)
	}
}
