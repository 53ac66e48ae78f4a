// Package auth authenticates downstream callers (bearer tokens of the
// trusted issuers: JWTs checked with configured keys or the issuers' JWK
// Sets, opaque tokens by introspection; or none) and carries the resulting
// principal in the request context (Identity).
package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// Principal identifies an authenticated caller: the JWT "sub" claim, or
// Anonymous when authentication is off. Sessions belong to a principal.
type Principal string

// Anonymous is every caller's principal in auth mode "none".
const Anonymous Principal = "anonymous"

// Identity is who a request comes from and what it is addressed to: one
// value, set in the request's context as the handler learns it (the
// resource before authentication, the rest by Middleware once the token
// is verified), read by the verifiers, the access rules and the backend
// side. It is the one thing of the request's own that travels in the
// context: every layer below the handler needs it, none may change it.
type Identity struct {
	// Resource is the canonical URL of the resource being called
	// ({public_url}/servers/{vhost}/mcp), for the audience rule
	// (audience.go); "" when the gateway's public URL is unknown.
	Resource string
	// Principal is the caller ("" before authentication).
	Principal Principal
	// Claims are the verified token's claims; nil when the caller has
	// none (auth mode none).
	Claims Claims
	// Token is the verified bearer token ("" in auth mode none). It
	// exists for backends whose credentials are an exchange of the
	// caller's token; it must never be forwarded as it is.
	Token string
}

type identityKey struct{}

// WithIdentity returns a copy of ctx carrying id, which replaces the
// identity ctx carried.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity ctx carries (the zero Identity when
// it carries none).
func IdentityFrom(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}

// FromContext returns the principal Middleware stored.
func FromContext(ctx context.Context) (Principal, bool) {
	p := IdentityFrom(ctx).Principal
	return p, p != ""
}

// Claims are a verified token's claims as JSON values (string, float64,
// bool, []any, map[string]any, nil): what access rules are written over.
// They live in the request's context only (Identity); nothing stores
// them.
type Claims map[string]any

// ClaimsFromContext returns the claims Middleware stored; nil when the
// caller has none (auth mode none).
func ClaimsFromContext(ctx context.Context) Claims { return IdentityFrom(ctx).Claims }

// TokenFromContext returns the verified bearer token Middleware stored
// (Identity.Token: never to be forwarded as it is).
func TokenFromContext(ctx context.Context) string { return IdentityFrom(ctx).Token }

// ClaimsVerifier is a Verifier that also returns the verified token's
// claims. Middleware puts them in the request context; a Verifier without
// it gives callers no claims.
type ClaimsVerifier interface {
	Verifier
	VerifyClaims(r *http.Request) (Principal, Claims, error)
}

// Verifier authenticates a request.
type Verifier interface {
	// Verify returns the caller's principal, or an error that wraps
	// ErrNoToken (no bearer credentials) or ErrInvalidToken (credentials
	// presented but rejected). Errors never contain the token.
	Verify(r *http.Request) (Principal, error)
}

var (
	// ErrNoToken means the request carried no bearer token.
	ErrNoToken = errors.New("no bearer token")
	// ErrInvalidToken means a bearer token was presented but rejected.
	ErrInvalidToken = errors.New("invalid bearer token")
)

type anonymous struct{}

func (anonymous) Verify(*http.Request) (Principal, error) { return Anonymous, nil }

// maxTokenBytes bounds the token size accepted for parsing.
const maxTokenBytes = 16 << 10

// BearerToken extracts the token from the request's single Authorization
// header ("Bearer <token>", scheme case-insensitive). It returns an error
// wrapping ErrNoToken when there are no bearer credentials and one wrapping
// ErrInvalidToken when the header is malformed.
func BearerToken(r *http.Request) (string, error) {
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return "", ErrNoToken
	case 1:
	default:
		return "", refusal(errMalformed, "more than one Authorization header")
	}
	scheme, rest, _ := strings.Cut(strings.TrimSpace(values[0]), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		if scheme == "" {
			return "", ErrNoToken
		}
		return "", fmt.Errorf("%w: Authorization scheme is not Bearer", ErrNoToken)
	}
	token := strings.TrimSpace(rest)
	switch {
	case token == "":
		return "", refusal(errMalformed, "the Authorization header holds no token after Bearer")
	case len(token) > maxTokenBytes:
		return "", refusal(errMalformed, "bearer token of %d bytes, more than %d", len(token), maxTokenBytes)
	case strings.ContainsAny(token, " \t"):
		return "", refusal(errMalformed, "the bearer token holds a space or a tab")
	}
	return token, nil
}

// tokenError is a rejected token. Its message is a fixed reason (never
// token content); the cause stays reachable with errors.Is, e.g.
// errors.Is(err, jwt.ErrTokenExpired).
//
// detail, when set, is the failure's specifics for the log (FailureOf).
type tokenError struct {
	cause  error
	detail string
}

func (e *tokenError) Error() string { return "invalid bearer token: " + reason(e.cause) }

func (e *tokenError) Unwrap() []error { return []error{ErrInvalidToken, e.cause} }

// jwtReasons maps golang-jwt's sentinel errors to fixed messages, most
// specific first.
var jwtReasons = []struct {
	err error
	msg string
}{
	{jwt.ErrTokenExpired, "token expired"},
	{jwt.ErrTokenNotValidYet, "token not valid yet"},
	{jwt.ErrTokenUsedBeforeIssued, "token issued in the future"},
	{jwt.ErrTokenInvalidIssuer, "wrong issuer"},
	{jwt.ErrTokenInvalidAudience, "wrong audience"},
	{jwt.ErrTokenRequiredClaimMissing, "required claim missing"},
	{jwt.ErrTokenSignatureInvalid, "bad signature"},
	{jwt.ErrTokenUnverifiable, "algorithm not accepted or no matching key"},
	{jwt.ErrTokenMalformed, "malformed token"},
	{jwt.ErrTokenInvalidClaims, "invalid claims"},
}

func reason(err error) string {
	for _, r := range jwtReasons {
		if errors.Is(err, r.err) {
			return r.msg
		}
	}
	var own ownError
	if errors.As(err, &own) {
		return string(own)
	}
	return "rejected"
}

// ownError is a reason produced by this package (never token content).
type ownError string

func (e ownError) Error() string { return string(e) }
