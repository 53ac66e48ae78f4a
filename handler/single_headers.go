package handler

import "net/http"

// requireSingleHeaders answers 400 to a request that carries a transport
// header more than once. r.Header.Get reads the first of them, while a
// proxy, a log or another replica may read the last: two Mcp-Session-Id
// headers would name two sessions, and which one the request acts on
// would depend on who looks. None of these headers is a list, so two of
// them is never a legitimate request.
func requireSingleHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, name := range [...]string{headerSessionID, headerProtocolVersion, headerLastEventID} {
			if len(r.Header.Values(name)) > 1 {
				writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest, "more than one "+name+" header")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
