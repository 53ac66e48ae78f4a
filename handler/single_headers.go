package handler

import (
	"net/http"
	"strings"
)

// requireSingleHeaders answers 400 to a request that carries a transport
// header more than once. r.Header.Get reads the first of them, while a
// proxy, a log or another replica may read the last: two Mcp-Session-Id
// headers would name two sessions, and which one the request acts on
// would depend on who looks. None of these headers is a list, so two of
// them is never a legitimate request.
//
// A POST's MCP-Protocol-Version is left to servePOST: only its body says
// which generation the request is, and the answer differs (a 2026-07-28
// request gets the revision's -32020, see repeatedModernHeader; a
// session's request -32600, see refuseRepeatedVersion).
func requireSingleHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, name := range [...]string{headerSessionID, headerProtocolVersion, headerLastEventID} {
			if name == headerProtocolVersion && r.Method == http.MethodPost {
				continue
			}
			if len(r.Header.Values(name)) > 1 {
				writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest, "more than one "+name+" header")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// refuseRepeatedVersion answers 400 -32600 to a session's POST (or a
// batch) that carries MCP-Protocol-Version more than once; it reports
// whether it did.
func refuseRepeatedVersion(w http.ResponseWriter, h http.Header) bool {
	if len(h.Values(headerProtocolVersion)) < 2 {
		return false
	}
	writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest, "more than one "+headerProtocolVersion+" header")
	return true
}

// paramHeaderPrefix starts the header of a tools/call argument mirrored
// by its x-mcp-header annotation (router/param_headers.go checks them).
const paramHeaderPrefix = "Mcp-Param-"

// repeatedModernHeader names a header of the 2026-07-28 transport that h
// carries more than once, "" when there is none. The revision mirrors the
// body in these headers so that intermediaries can route without reading
// it; with two of one, whatever their values, the gateway (which reads
// the first) and an intermediary (which may read the last) could act on
// different requests. Of several repeated Mcp-Param-* headers it names the
// first in sort order, so the message does not vary.
func repeatedModernHeader(h http.Header) string {
	if len(h.Values(headerProtocolVersion)) > 1 {
		return "MCP-Protocol-Version"
	}
	for _, name := range [...]string{headerMethod, headerName} {
		if len(h.Values(name)) > 1 {
			return name
		}
	}
	param := ""
	for k, vs := range h {
		if len(vs) > 1 && strings.HasPrefix(k, paramHeaderPrefix) && (param == "" || k < param) {
			param = k
		}
	}
	return param
}
