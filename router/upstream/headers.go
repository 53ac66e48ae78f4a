package upstream

import (
	"net/http"
	"strings"
)

// protectedHeaders are owned by the HTTP stack or by the MCP transport, so
// config can neither pass them through from the downstream request nor add
// them: letting them through would break framing (Content-Length,
// Transfer-Encoding), content negotiation (Accept, Accept-Encoding: Go only
// decompresses transparently when it sets that header itself), or hijack
// the backend session (Mcp-Session-Id, Last-Event-ID).
var protectedHeaders = map[string]bool{
	"Host":                 true,
	"Content-Length":       true,
	"Content-Type":         true,
	"Accept":               true,
	"Accept-Encoding":      true,
	"Mcp-Session-Id":       true,
	"Mcp-Protocol-Version": true,
	"Last-Event-Id":        true,
	// Standard MCP request headers of newer protocol versions: the transport's.
	"Mcp-Method": true,
	"Mcp-Name":   true,
	// Hop-by-hop headers (RFC 9110 §7.6.1) and their legacy companions.
	"Connection":          true,
	"Keep-Alive":          true,
	"Proxy-Authenticate":  true,
	"Proxy-Authorization": true,
	"Proxy-Connection":    true,
	"Te":                  true,
	"Trailer":             true,
	"Transfer-Encoding":   true,
	"Upgrade":             true,
}

// neverPassthrough are downstream credentials. The gateway authenticates the
// caller itself; a backend's credentials come only from AddHeaders, so the
// caller's token never reaches a backend even if config lists it.
var neverPassthrough = map[string]bool{
	"Authorization": true,
	"Cookie":        true,
}

// ProtectedHeader reports whether config may never pass through, add or
// remove the header name (case-insensitive). It is the one list: config
// validation refuses exactly these names, so nothing configured is
// dropped silently here.
func ProtectedHeader(name string) bool {
	k := http.CanonicalHeaderKey(strings.TrimSpace(name))
	return protectedHeaders[k] || strings.HasPrefix(k, "Mcp-Param-")
}

// Credential reports whether the header carries the downstream caller's
// credentials (Authorization, Cookie): config may add one for a backend,
// never pass the caller's through.
func Credential(name string) bool {
	return neverPassthrough[http.CanonicalHeaderKey(strings.TrimSpace(name))]
}

// BuildHeaders applies the backend's header policy to a downstream request's
// headers and returns the headers every backend request carries:
//
//  1. start empty (nothing is forwarded by default);
//  2. copy each PassthroughHeaders header from downstream, except
//     Authorization, Cookie, protected headers, and any header the
//     downstream Connection header marks as hop-by-hop;
//  3. AddHeaders override (protected names are skipped);
//  4. RemoveHeaders delete last, so remove wins over add and passthrough.
//
// Config validation rejects the forbidden names already; the checks are
// repeated here so the guarantee holds for any Config. downstream may be nil.
func (c *Client) BuildHeaders(downstream http.Header) http.Header {
	h := make(http.Header)
	hop := connectionTokens(downstream)
	for _, name := range c.cfg.PassthroughHeaders {
		k := http.CanonicalHeaderKey(strings.TrimSpace(name))
		if k == "" || Credential(k) || ProtectedHeader(k) || hop[k] {
			continue
		}
		if vs := downstream.Values(k); len(vs) > 0 {
			h[k] = append([]string(nil), vs...)
		}
	}
	for name, v := range c.cfg.AddHeaders {
		k := http.CanonicalHeaderKey(strings.TrimSpace(name))
		if k == "" || ProtectedHeader(k) {
			continue
		}
		h.Set(k, v)
	}
	for _, name := range c.cfg.RemoveHeaders {
		h.Del(strings.TrimSpace(name))
	}
	return h
}

// connectionTokens returns the header names listed in the Connection header:
// those are hop-by-hop for this request (RFC 9110 §7.6.1).
func connectionTokens(h http.Header) map[string]bool {
	var out map[string]bool
	for _, v := range h.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				if out == nil {
					out = make(map[string]bool)
				}
				out[http.CanonicalHeaderKey(tok)] = true
			}
		}
	}
	return out
}
