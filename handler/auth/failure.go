package auth

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgw/gateway/internal/wire"
)

// Why a bearer token was refused, said so that an operator can fix it: a
// wrong audience, an issuer written without its trailing slash, a key the
// issuer's JWK Set does not hold and an expired token used to all answer
// "the access token is invalid". A refusal now has a class (one of a
// small fixed set, for the audit trail, the WWW-Authenticate header and
// dashboards) and a detail (for the log line: the values that differ).
// The class is worked out from the verification libraries' sentinel
// errors with errors.Is, never from their messages. Neither part ever
// holds the token or key material; the detail may name claims of the
// token (iss, aud, kid, exp), which its bearer can read anyway.

// The classes of a refusal (docs/reference/auth-failures.md).
const (
	ClassNoToken      = "no_token"      // no bearer credentials at all
	ClassMalformed    = "malformed"     // not a well-formed bearer JWT
	ClassBadSignature = "bad_signature" // the signature does not verify
	ClassUnknownKid   = "unknown_kid"   // the issuer's JWK Set holds no key of that kid
	ClassAlgorithm    = "algorithm"     // an algorithm not accepted, or no key for it
	ClassExpired      = "expired"       // exp is past (leeway included)
	ClassNotYetValid  = "not_yet_valid" // nbf, or iat, is in the future
	ClassAudience     = "audience"      // aud names no accepted audience
	ClassIssuer       = "issuer"        // iss is not a trusted issuer
	ClassClaims       = "claims"        // a required claim missing or unusable (exp, sub, typ)
	ClassInactive     = "inactive"      // introspection says the token is not active
	ClassUnavailable  = "unavailable"   // the gateway could not check it (no keys held, introspection down)
)

// Classes are every class, in the order the reference lists them.
var Classes = []string{ClassNoToken, ClassMalformed, ClassBadSignature, ClassUnknownKid, ClassAlgorithm,
	ClassExpired, ClassNotYetValid, ClassAudience, ClassIssuer, ClassClaims, ClassInactive, ClassUnavailable}

// describe is the short, fixed description of each class a client is
// told (error_description); it names no configured value.
var describe = map[string]string{
	ClassNoToken:      "bearer token required",
	ClassMalformed:    "the bearer token is not a well-formed JWT",
	ClassBadSignature: "the token signature does not verify",
	ClassUnknownKid:   "the token signing key (kid) is not among the issuer keys",
	ClassAlgorithm:    "the token signing algorithm is not accepted",
	ClassExpired:      "the token expired",
	ClassNotYetValid:  "the token is not valid yet",
	ClassAudience:     "the token audience is not accepted by this resource",
	ClassIssuer:       "the token issuer is not trusted here",
	ClassClaims:       "the token claims are not those of a usable access token",
	ClassInactive:     "the token is not active",
	ClassUnavailable:  "the token cannot be checked right now",
}

// Failure is why a request was refused: its class and, for the log, the
// specifics.
type Failure struct {
	Class  string
	Detail string
}

// Description is the failure's short description for the client:
// "<class>: <fixed text>".
func (f Failure) Description() string { return f.Class + ": " + describe[f.Class] }

// Sentinels of this package's own refusals (ownError values compare
// equal, so errors.Is finds them).
var (
	errAlgorithm         = ownError("no key for the token's algorithm")
	errUnknownKid        = ownError("no key for the token's kid")
	errKeysNotHeld       = ownError("no signing keys held")
	errInactive          = ownError("token not active")
	errIntrospection     = ownError("token introspection failed")
	errIntrospectionBusy = ownError("token introspection busy")
	errMalformed         = ownError("malformed bearer credentials")
	errNotAccessToken    = ownError("token type is not an access token")
)

// FailureOf says why err refused a request: nil (a verifier that gave no
// principal) and ErrNoToken are no_token.
func FailureOf(err error) Failure {
	f := Failure{Class: classOf(err)}
	var te *tokenError
	switch {
	case errors.As(err, &te) && te.detail != "":
		f.Detail = te.detail
	case err == nil:
		f.Detail = "no principal"
	case errors.Is(err, ErrNoToken):
		f.Detail = strings.TrimPrefix(strings.TrimPrefix(err.Error(), ErrNoToken.Error()), ": ")
		if f.Detail == "" {
			f.Detail = "no Authorization header"
		}
	case te != nil:
		f.Detail = reason(te.cause)
	default:
		f.Detail = "rejected"
	}
	return f
}

// classOf maps an error to its class, most specific first: the key
// lookup's sentinels before golang-jwt's (which wraps them in
// ErrTokenUnverifiable), the issuer before the claims' times (golang-jwt
// joins every failed claim check).
func classOf(err error) string {
	for _, c := range classOrder {
		for _, s := range c.sentinels {
			if errors.Is(err, s) {
				return c.class
			}
		}
	}
	if err == nil {
		return ClassNoToken
	}
	return ClassClaims
}

var classOrder = []struct {
	class     string
	sentinels []error
}{
	{ClassNoToken, []error{ErrNoToken}},
	{ClassUnavailable, []error{errKeysNotHeld, errIntrospection, errIntrospectionBusy}},
	{ClassUnknownKid, []error{jwkset.ErrKeyNotFound, errUnknownKid}},
	{ClassAlgorithm, []error{errAlgorithm, keyfunc.ErrKeyfunc}},
	{ClassMalformed, []error{jwt.ErrTokenMalformed, errMalformed}},
	{ClassIssuer, []error{jwt.ErrTokenInvalidIssuer}},
	{ClassBadSignature, []error{jwt.ErrTokenSignatureInvalid}},
	{ClassAlgorithm, []error{jwt.ErrTokenUnverifiable}}, // a signing method golang-jwt does not know
	{ClassExpired, []error{jwt.ErrTokenExpired}},
	{ClassNotYetValid, []error{jwt.ErrTokenNotValidYet, jwt.ErrTokenUsedBeforeIssued}},
	{ClassAudience, []error{jwt.ErrTokenInvalidAudience}},
	{ClassInactive, []error{errInactive}},
}

// refusal is a tokenError with the detail of the failure.
func refusal(cause error, format string, args ...any) *tokenError {
	return &tokenError{cause: cause, detail: fmt.Sprintf(format, args...)}
}

// issuerDetail compares a token's iss with the trusted issuers, and says
// so when they differ only by a trailing slash, the usual slip.
func issuerDetail(got string, want []string) string {
	if got == "" {
		return fmt.Sprintf("token has no iss claim (want %s)", quoteList(want, 5))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "token iss %s is not a trusted issuer (want %s)", wire.Quote(got), quoteList(want, 5))
	for _, w := range want {
		if got != w && strings.TrimRight(got, "/") == strings.TrimRight(w, "/") {
			fmt.Fprintf(&b, "; they differ only by a trailing slash: write auth issuer exactly as the provider's tokens have it, %s", wire.Quote(got))
			break
		}
	}
	return b.String()
}

// audienceDetail names the token's audience and what would be accepted.
func audienceDetail(claim string, got any, rule audienceRule, resource string) string {
	want := rule.list
	if rule.resourceOnly {
		want = nil
	}
	if resource != "" {
		want = append(want[:len(want):len(want)], resource)
	}
	return fmt.Sprintf("token %s %s holds none of the accepted audiences %s", claim, claimText(got), quoteList(want, 5))
}

// claimText shows a claim value that should be a string or a list of
// them, each quoted and clipped.
func claimText(c any) string {
	switch c := c.(type) {
	case nil:
		return "(absent)"
	case string:
		return wire.Quote(c)
	case []any:
		var s []string
		for _, e := range c {
			if str, ok := e.(string); ok {
				s = append(s, str)
			}
		}
		return quoteList(s, 5)
	}
	return fmt.Sprintf("(a %T, not a string)", c)
}

// quoteList quotes at most max strings, saying how many were left out.
func quoteList(list []string, max int) string {
	q := make([]string, 0, min(len(list), max))
	for i, s := range list {
		if i == max {
			break
		}
		q = append(q, wire.Quote(s))
	}
	out := "[" + strings.Join(q, ", ") + "]"
	if len(list) > max {
		out += fmt.Sprintf(" and %d more", len(list)-max)
	}
	return out
}

// timeText formats a claim's time for the log.
func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339) }
