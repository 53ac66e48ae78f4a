package upstream

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/mcpgw/gateway/router/credentials"
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
// caller itself; a backend's credentials come only from AddHeaders or its
// Credentials, so the caller's token never reaches a backend even if config
// lists it.
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
// The per-caller headers (HeaderTemplates, Credentials) are not part of it:
// they need the request's caller (see requestHeaders).
func (c *Client) BuildHeaders(downstream http.Header) http.Header {
	return c.buildHeaders(downstream, nil)
}

// buildHeaders is BuildHeaders with dynamic headers set after AddHeaders
// and before RemoveHeaders.
func (c *Client) buildHeaders(downstream, dynamic http.Header) http.Header {
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
	for k, vs := range dynamic {
		h[k] = vs
	}
	for _, name := range c.cfg.RemoveHeaders {
		h.Del(strings.TrimSpace(name))
	}
	return h
}

// requestHeaders is what one backend request carries: BuildHeaders, with
// the claim templates expanded from the caller in ctx and the bearer token
// of the backend's Credentials. This is where the credential decision is
// taken, for every path that opens a backend connection (routed calls,
// lists, probes, discovery, listens). A template the caller's claims
// cannot fill, or a token the gateway cannot obtain, fails here, before
// anything is sent: an *Error naming the backend, the header and the
// claim, never a value.
func (c *Client) requestHeaders(ctx context.Context, downstream http.Header) (http.Header, error) {
	if len(c.cfg.HeaderTemplates) == 0 && c.tokens == nil {
		return c.buildHeaders(downstream, nil), nil
	}
	dynamic, err := c.callerHeaders(ctx)
	if err != nil {
		return nil, err
	}
	return c.buildHeaders(downstream, dynamic), nil
}

// callerHeaders expands the claim templates and obtains the token.
func (c *Client) callerHeaders(ctx context.Context) (http.Header, error) {
	dynamic := make(http.Header, len(c.cfg.HeaderTemplates)+1)
	if len(c.cfg.HeaderTemplates) > 0 {
		caller, _ := credentials.CallerFrom(ctx)
		for name, t := range c.cfg.HeaderTemplates {
			k := http.CanonicalHeaderKey(strings.TrimSpace(name))
			if k == "" || ProtectedHeader(k) {
				continue
			}
			v, err := t.Expand(caller.Claims)
			if err != nil {
				return nil, c.newError("header "+k, 0, credentialsError{err})
			}
			dynamic.Set(k, v)
		}
	}
	if c.tokens != nil {
		tok, err := c.tokens.Token(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, c.contextError("credentials", ctx)
			}
			return nil, c.newError("credentials", 0, credentialsError{err})
		}
		dynamic.Set("Authorization", "Bearer "+tok)
	}
	return dynamic, nil
}

// ErrCredentials matches (errors.Is) a failure to build a request's
// per-caller headers or obtain its token: nothing reached the backend, and
// the failure says nothing about the backend's health (another caller's
// request may well succeed), so it is never recorded as the backend's.
var ErrCredentials = errors.New("backend credentials unavailable")

// credentialsError marks its cause as ErrCredentials without changing the
// message.
type credentialsError struct{ err error }

func (e credentialsError) Error() string        { return e.err.Error() }
func (e credentialsError) Unwrap() error        { return e.err }
func (e credentialsError) Is(target error) bool { return target == ErrCredentials }

// Authorize resolves the per-caller headers of a request made in ctx
// without sending anything: a discovery shared by every caller uses it to
// tell one caller's credential failure from the backend's, so the former
// is never remembered for the others. An OpenAPI backend is discovered
// without credentials (its calls need them, not its tool list).
func (c *Client) Authorize(ctx context.Context) error {
	if len(c.cfg.HeaderTemplates) == 0 && c.tokens == nil || c.cfg.Transport == TransportOpenAPI {
		return nil
	}
	_, err := c.callerHeaders(ctx)
	return err
}

// ForgetToken drops the cached token a request made in ctx used, after
// the backend refused it (HTTP 401): the next request obtains a new one.
func (c *Client) ForgetToken(ctx context.Context) {
	if c.tokens != nil {
		c.tokens.Forget(ctx)
	}
}

// PerCaller reports whether the backend's requests depend on the caller
// (claim templates or token exchange): what is fetched for one caller may
// then not be served to another.
func (c *Client) PerCaller() bool {
	return len(c.cfg.HeaderTemplates) > 0 || c.cfg.Credentials.PerCaller()
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
