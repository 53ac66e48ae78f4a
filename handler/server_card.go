package handler

import (
	"net/http"
	"strings"

	"github.com/mcpgw/gateway/internal/servercard"
	"github.com/mcpgw/gateway/internal/wire"
)

// Server Cards (SEP-2127, as the experimental extension specifies it):
// each vhost that does not opt out (card: false) publishes a card at
// {endpoint}/server-card, the location the extension reserves, and at
// /.well-known/mcp/server-card/{vhost}, SEP-2127's own; the domain's AI
// Catalog at /.well-known/ai-catalog.json lists them. They are public
// documents, served outside the MCP chain like the RFC 9728 metadata: no
// token, any Origin (CORS *), the Host allow-list still applied because
// without public_url the request's Host is written into them. A card
// describes the vhost; it lists no tools, whoever asks.

// Cards configure the Server Cards (Options.Cards).
type Cards struct {
	// PublicURL is the gateway's base URL as clients reach it
	// (public_url); empty: each request's scheme and Host.
	PublicURL string
	// Version is the gateway's version, a card's default version.
	Version string
	// BearerAuth: the MCP endpoint takes bearer tokens (auth mode jwt).
	BearerAuth bool
}

// cardMaxAge is how long a client or cache may keep a card or the catalog
// (Cache-Control); ETag revalidation costs a 304 after it.
const cardMaxAge = "public, max-age=3600"

// routeCards registers the card and catalog endpoints.
func (s *server) routeCards(mux *http.ServeMux) {
	hostOnly := checkHost(s.opts.AllowedHosts)
	for _, p := range []string{"/servers/{vhost}/mcp/server-card", "/.well-known/mcp/server-card/{vhost}"} {
		mux.Handle("GET "+p, hostOnly(http.HandlerFunc(s.serveCard)))
		mux.HandleFunc("OPTIONS "+p, cardPreflight)
	}
	mux.Handle("GET /.well-known/ai-catalog.json", hostOnly(http.HandlerFunc(s.serveCatalog)))
	mux.HandleFunc("OPTIONS /.well-known/ai-catalog.json", cardPreflight)
}

// checkHost is checkHostOrigin's Host check alone: any Origin may read
// the discovery documents and call the authorization server's endpoints
// (its one form, consent, carries a token of its own).
func checkHost(hosts []string) func(http.Handler) http.Handler {
	allowed := map[string]bool{}
	for _, h := range hosts {
		allowed[strings.ToLower(h)] = true
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(allowed) > 0 && !hostAllowed(allowed, r.Host) {
				writeHTTPError(w, http.StatusForbidden, codeInvalidRequest, "host not allowed")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// cardBase is the base URL cards name.
func (s *server) cardBase(r *http.Request) string {
	if u := s.opts.Cards.PublicURL; u != "" {
		return strings.TrimRight(u, "/")
	}
	return requestScheme(r) + "://" + r.Host
}

// serveCard answers GET of a vhost's card.
func (s *server) serveCard(w http.ResponseWriter, r *http.Request) {
	vhost := r.PathValue("vhost")
	card, ok := s.opts.Router.CardOf(vhost)
	if !ok {
		corsHeaders(w.Header())
		writeHTTPError(w, http.StatusNotFound, codeInvalidRequest, "no server card for this virtual host")
		return
	}
	base := s.cardBase(r)
	facts := servercard.Facts{BaseURL: base, Version: s.opts.Cards.Version,
		ProtocolVersions: wire.AllProtocolVersions(), BearerAuth: s.opts.Cards.BearerAuth}
	if s.opts.ResourceMetadata != nil {
		facts.ResourceMetadata = baseURL(s.opts.ResourceMetadata, r) + wellKnownPRM + "/servers/" + vhost + "/mcp"
	}
	writeCardDocument(w, r, servercard.Build(card, vhost, facts), servercard.CardMediaType)
}

// serveCatalog answers GET of the domain's AI Catalog.
func (s *server) serveCatalog(w http.ResponseWriter, r *http.Request) {
	names, _ := s.opts.Router.CardVHosts()
	entries := make([]servercard.Entry, len(names))
	for i, n := range names {
		entries[i] = servercard.Entry{VHost: n}
	}
	writeCardDocument(w, r, servercard.Catalog(s.cardBase(r), entries), servercard.CatalogMediaType)
}

// writeCardDocument writes a discovery document with its caching and
// CORS headers, or 304 when the client's If-None-Match holds its ETag. It
// is sent as mediaType unless the client's Accept takes application/json
// and not mediaType.
func writeCardDocument(w http.ResponseWriter, r *http.Request, doc []byte, mediaType string) {
	h := w.Header()
	corsHeaders(h)
	etag := servercard.ETag(doc)
	h.Set("ETag", etag)
	h.Set("Cache-Control", cardMaxAge)
	h.Set("Vary", "Accept")
	if etagMatches(r.Header.Values("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", negotiateJSON(r.Header.Values("Accept"), mediaType))
	_, _ = w.Write(doc)
}

// corsHeaders are what the extension asks of a card host: any origin may
// read it, revalidate it, and see its ETag.
func corsHeaders(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET")
	h.Set("Access-Control-Allow-Headers", "Content-Type, If-None-Match")
	h.Set("Access-Control-Expose-Headers", "ETag")
}

// cardPreflight answers a CORS preflight for the discovery documents.
func cardPreflight(w http.ResponseWriter, r *http.Request) {
	corsHeaders(w.Header())
	w.Header().Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
}

// etagMatches reports whether an If-None-Match header list names etag (or
// is "*"), by the weak comparison RFC 9110 prescribes for it.
func etagMatches(values []string, etag string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == etag {
				return true
			}
		}
	}
	return false
}

// negotiateJSON is the Content-Type of a document whose own media type is
// mediaType: mediaType, unless Accept names application/json and neither
// mediaType nor a wildcard (a client that only takes plain JSON).
func negotiateJSON(accept []string, mediaType string) string {
	plain := false
	for _, v := range accept {
		for _, part := range strings.Split(v, ",") {
			t, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(t)) {
			case mediaType, "*/*", "application/*":
				return mediaType
			case "application/json":
				plain = true
			}
		}
	}
	if plain {
		return "application/json"
	}
	return mediaType
}
