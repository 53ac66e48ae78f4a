package handler

import (
	"net/http"

	"github.com/mcpgw/gateway/router/credentials"
)

// withUserTokens hands user_oauth backends' token source to the backend
// side in the request's context, beside the caller (backend_caller.go).
func withUserTokens(src credentials.UserTokenSource) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if src == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(credentials.WithUserTokens(r.Context(), src)))
		})
	}
}
