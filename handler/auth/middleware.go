package auth

import (
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"net/http"
	"strings"

	"github.com/mcpgw/gateway/internal/wire"
)

// CodeUnauthorized is the JSON-RPC error code of a 401 answer (see
// internal/wire/codes.go: it is not the -32001 of an unknown session).
const CodeUnauthorized = wire.CodeUnauthorized

// Middleware authenticates every request with v. On success the principal
// is stored in the request's Identity (FromContext), with the token's
// claims and the token itself when v is a ClaimsVerifier, and the
// Authorization header is dropped, so nothing downstream can forward the
// caller's token.
// On failure it answers 401 with a Bearer challenge for realm and a
// JSON-RPC error body; the token never appears in the answer, and nothing
// is logged. params, if not nil, adds auth-params to the challenge for
// the request (such as resource_metadata, see ChallengeParam).
func Middleware(v Verifier, realm string, params func(*http.Request) string) func(http.Handler) http.Handler {
	return MiddlewareReporting(v, realm, params, nil)
}

// MiddlewareReporting is Middleware that also tells refused, if not nil,
// why it refused a request (FailureOf), before the 401 is written: the
// handler puts it in the request's log line and audit record.
func MiddlewareReporting(v Verifier, realm string, params func(*http.Request) string,
	refused func(http.ResponseWriter, *http.Request, Failure)) func(http.Handler) http.Handler {
	if v == nil {
		panic("auth.Middleware: nil Verifier")
	}
	base := `Bearer realm="` + quoteEscape(realm) + `"`
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var p Principal
			var claims Claims
			var err error
			if cv, ok := v.(ClaimsVerifier); ok {
				p, claims, err = cv.VerifyClaims(r)
			} else {
				p, err = v.Verify(r)
			}
			if err != nil || p == "" {
				challenge := base
				if params != nil {
					if extra := params(r); extra != "" {
						challenge += ", " + extra
					}
				}
				f := FailureOf(err)
				if refused != nil {
					refused(w, r, f)
				}
				unauthorized(w, challenge, f)
				return
			}
			id := IdentityFrom(r.Context()) // its Resource, if set
			id.Principal = p
			if claims != nil {
				id.Claims = claims
				// The verified token itself, for an RFC 8693 exchange
				// (router/credentials); it is dropped from the headers
				// below and is never forwarded or logged.
				if raw, err := BearerToken(r); err == nil {
					id.Token = raw
				}
			}
			r = r.WithContext(WithIdentity(r.Context(), id))
			r.Header.Del("Authorization")
			next.ServeHTTP(w, r)
		})
	}
}

// unauthorized writes the 401 answer for f: for no token a bare
// challenge (RFC 6750 §3.1: no error code when the request had no
// credentials); otherwise error="invalid_token" with the class and its
// fixed description, which names nothing of the token or the config.
func unauthorized(w http.ResponseWriter, challenge string, f Failure) {
	msg := "Unauthorized: " + describe[ClassNoToken]
	if f.Class != ClassNoToken {
		desc := f.Description()
		challenge += `, error="invalid_token", error_description="` + quoteEscape(desc) + `"`
		msg = "Unauthorized: " + desc
	}
	h := w.Header()
	h.Set("WWW-Authenticate", challenge)
	h.Set("Cache-Control", "no-store")
	wire.WriteError(w, http.StatusUnauthorized, nil, &jsonrpc.Error{Code: CodeUnauthorized, Message: msg}, 0)
}

// ChallengeParam formats one auth-param of a challenge: name="value",
// the value escaped as a quoted-string.
func ChallengeParam(name, value string) string {
	return name + `="` + quoteEscape(value) + `"`
}

// quoteEscape makes s safe inside a quoted-string (RFC 9110 §5.6.4):
// backslash and double quote are escaped, control characters dropped.
func quoteEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < ' ' || r == 0x7f:
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
