package authserver

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The authorization endpoint: zitadel's op.Authorize with the gateway's
// own checks in place of the library's (authorizer.ValidateAuthRequest):
// a known client and one of its redirect URIs byte for byte (else 400,
// never a redirect: no open redirect), response_type code, PKCE with
// S256, and resource (RFC 8707) naming exactly one vhost of this gateway.
// Refusals after the redirect URI is known go back to it, as OAuth asks.

// authorizer is the provider with the gateway's validation.
type authorizer struct {
	*op.Provider
	s *Server
}

var _ op.AuthorizeValidator = authorizer{}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if err := r.ParseForm(); err != nil {
		http.Error(w, "malformed authorization request", http.StatusBadRequest)
		return
	}
	ctx := op.ContextWithIssuer(r.Context(), s.o.Issuer)
	if res := r.Form["resource"]; len(res) == 1 {
		// A context value because zitadel leaves no other way: its
		// oidc.AuthRequest has no resource (RFC 8707), and op.Authorize
		// hands ValidateAuthRequest and Storage.CreateAuthRequest
		// nothing of ours but ctx.
		ctx = context.WithValue(ctx, resourceKey{}, res[0])
	}
	op.Authorize(w, r.WithContext(ctx), authorizer{Provider: s.provider, s: s})
}

// ValidateAuthRequest implements op.AuthorizeValidator.
func (a authorizer) ValidateAuthRequest(ctx context.Context, req *oidc.AuthRequest, _ op.Storage, _ *op.IDTokenHintVerifier) (string, error) {
	s := a.s
	c, err := s.lookupClient(ctx, req.ClientID)
	if err != nil {
		desc := "unknown client_id"
		if isDocumentID(req.ClientID) {
			desc = "the client's metadata document cannot be used"
		}
		return "", oidc.ErrInvalidRequestRedirectURI().WithDescription("%s", desc)
	}
	if !c.redirectOK(req.RedirectURI) {
		return "", oidc.ErrInvalidRequestRedirectURI().WithDescription("redirect_uri is not one of the client's (they must match exactly)")
	}
	if req.ResponseType != oidc.ResponseTypeCode {
		return "", oidc.ErrInvalidRequest().WithDescription("only response_type=code")
	}
	if req.RequestParam != "" {
		return "", oidc.ErrRequestNotSupported()
	}
	if req.CodeChallenge == "" || req.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return "", oidc.ErrInvalidRequest().WithDescription("PKCE is required: code_challenge with code_challenge_method=S256")
	}
	if m := req.ResponseMode; m != "" && m != oidc.ResponseModeQuery {
		return "", oidc.ErrInvalidRequest().WithDescription("only response_mode=query")
	}
	resource, _ := ctx.Value(resourceKey{}).(string)
	if !s.isResource(resource) {
		return "", oidc.ErrInvalidTarget().WithDescription("resource must name one MCP endpoint of this gateway: %s/servers/{vhost}/mcp", s.o.Issuer)
	}
	req.Scopes = s.grantable(c, req.Scopes)
	req.Prompt = nil
	return "", nil
}

// isResource reports whether u is a vhost's canonical URL.
func (s *Server) isResource(u string) bool {
	rest, ok := strings.CutPrefix(u, s.o.Issuer+"/servers/")
	if !ok {
		return false
	}
	vhost, ok := strings.CutSuffix(rest, "/mcp")
	return ok && vhost != "" && !strings.ContainsAny(vhost, "/?#%") && s.o.HasVHost(vhost)
}

// grantable keeps the scopes the server knows (unknown ones are dropped,
// as RFC 6749 allows) and adds offline_access for a client that may
// refresh: MCP clients rarely ask for it and always want a refresh token.
func (s *Server) grantable(c *client, asked []string) []string {
	known := s.o.Scopes()
	var out []string
	for _, sc := range asked {
		if slices.Contains(known, sc) && !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if slices.Contains(c.Grants, grantRenew) {
		out = append(out, oidc.ScopeOfflineAccess)
	}
	if len(out) == 0 {
		out = []string{oidc.ScopeOpenID} // op needs one; never put in a token
	}
	return out
}
