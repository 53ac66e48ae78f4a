package handler

import (
	"net/http"

	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/router/credentials"
)

// withBackendCaller hands the verified caller (principal, claims and the
// token itself) to the backend side in the request's context, so every
// backend request the router makes for this request, whatever the path
// (routed, list, initialize probe, discovery, listen), can fill claim
// templates and exchange the token (router/credentials). The router's
// Call.Claims stay the claims access rules read; this is the same
// identity, carried where backend connections are opened.
func withBackendCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := auth.FromContext(r.Context())
		ctx := credentials.WithCaller(r.Context(), credentials.Caller{
			Principal: string(p),
			Claims:    auth.ClaimsFromContext(r.Context()),
			Token:     auth.TokenFromContext(r.Context()),
		})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
