package handler

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/internal/config"
)

// The MCP authorization spec asks a server that takes bearer tokens to
// publish OAuth 2.0 Protected Resource Metadata (RFC 9728), so a client
// that gets a 401 can find the authorization server to get a token from.
// Each virtual host is its own resource, https://gw/servers/{vhost}/mcp,
// with its document at the path-inserted well-known URL,
// /.well-known/oauth-protected-resource/servers/{vhost}/mcp, named in the
// 401's challenge; the root well-known URL describes the gateway's base
// URL, for clients that look there.

const wellKnownPRM = "/.well-known/oauth-protected-resource"

// prmDocument is the RFC 9728 document.
type prmDocument struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
}

// baseURL is the gateway's URL as the client reached it: the configured
// public URL, else the request's scheme and Host.
func baseURL(rm *config.ResourceMetadata, r *http.Request) string {
	if rm.PublicURL != "" {
		return rm.PublicURL
	}
	return requestScheme(r) + "://" + r.Host
}

// serveResourceMetadata answers the well-known URLs.
func (s *server) serveResourceMetadata(w http.ResponseWriter, r *http.Request) {
	rm := s.opts.ResourceMetadata
	resource := baseURL(rm, r)
	if vhost := r.PathValue("vhost"); vhost != "" {
		if !s.opts.Router.HasVHost(vhost) {
			s.refuseUnknownVHost(w, vhost)
			return
		}
		resource += "/servers/" + vhost + "/mcp"
	}
	scopes := rm.ScopesSupported
	if vhost := r.PathValue("vhost"); vhost != "" {
		scopes = s.scopesOf(vhost)
	}
	doc, _ := json.Marshal(prmDocument{Resource: resource, AuthorizationServers: rm.AuthorizationServers,
		ScopesSupported: scopes, BearerMethodsSupported: []string{"header"}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("Access-Control-Allow-Origin", "*") // public metadata, for browser clients
	_, _ = w.Write(doc)
}

// challengeParams names the vhost's metadata (and the scopes to ask for)
// in a 401's WWW-Authenticate challenge. The scopes are the configured
// ones only: a client asks for them first, and for an access rule's
// scopes when a 403 names them (step-up), rather than for everything
// the metadata lists.
func (s *server) challengeParams(r *http.Request) string {
	rm := s.opts.ResourceMetadata
	params := s.metadataParam(r)
	if len(rm.ScopesSupported) > 0 {
		params += ", " + auth.ChallengeParam("scope", strings.Join(rm.ScopesSupported, " "))
	}
	return params
}

// metadataParam is the resource_metadata auth-param of the vhost's
// document.
func (s *server) metadataParam(r *http.Request) string {
	return auth.ChallengeParam("resource_metadata", baseURL(s.opts.ResourceMetadata, r)+wellKnownPRM+"/servers/"+r.PathValue("vhost")+"/mcp")
}

// scopesOf are the scopes a vhost's metadata lists: the configured
// scopes_supported, then those its access rules ask for.
func (s *server) scopesOf(vhost string) []string {
	var out []string
	if rm := s.opts.ResourceMetadata; rm != nil {
		out = append(out, rm.ScopesSupported...)
	}
	for _, sc := range s.opts.Router.AccessScopes(vhost) {
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out
}

// noteChallenge keeps the vhost's metadata parameter for a later 403
// insufficient_scope challenge (refusal.go).
func (s *server) noteChallenge(next http.Handler) http.Handler {
	if s.opts.ResourceMetadata == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := noteOf(w); n != nil {
			n.challenge = s.metadataParam(r)
		}
		next.ServeHTTP(w, r)
	})
}

// withResource names the vhost's canonical resource URL in the request's
// context, for the audience rule (auth.WithResource); nothing when the
// gateway's public URL is not configured.
func withResource(base string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if base == "" {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u := base + "/servers/" + r.PathValue("vhost") + "/mcp"
			next.ServeHTTP(w, r.WithContext(auth.WithResource(r.Context(), u)))
		})
	}
}
