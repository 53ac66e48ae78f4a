package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgw/gateway/internal/wire"
)

// What one issuer's verifier says about a JWT it refused (failure.go has
// the classes): the values that differ from what the config accepts,
// worked out only once a token has failed, so accepting one costs
// nothing more. Claims are read from the token as it came, verified or
// not: they are the client's own, and it was refused anyway.

// refused builds the refusal of a token golang-jwt rejected with err
// (tok and claims as far as it decoded them).
func (v *jwtVerifier) refused(ctx context.Context, err error, tok *jwt.Token, claims jwt.MapClaims) error {
	if tok == nil || tok.Header == nil || errors.Is(err, jwt.ErrTokenMalformed) {
		return refusal(jwt.ErrTokenMalformed, "%s", malformedDetail(tok))
	}
	// A token of another issuer is told as such before anything else: its
	// kid is unknown and its signature fails here, but the cause is the
	// issuer (often a trailing slash in the config).
	if iss, _ := claims["iss"].(string); v.issuer != "" && iss != v.issuer {
		return refusal(jwt.ErrTokenInvalidIssuer, "%s", issuerDetail(iss, []string{v.issuer}))
	}
	alg, _ := tok.Header["alg"].(string)
	kid, _ := tok.Header["kid"].(string)
	if !slices.Contains(v.algs, alg) {
		// golang-jwt says ErrTokenSignatureInvalid for an algorithm not
		// in the accepted list: the cause is the algorithm.
		return refusal(errAlgorithm, "token alg %s is not accepted for issuer %s (accepted: %s)",
			wire.Quote(alg), wire.Quote(v.issuer), strings.Join(v.algs, ", "))
	}
	te := &tokenError{cause: err}
	switch classOf(err) {
	case ClassUnavailable:
		te.detail = fmt.Sprintf("no signing key of issuer %s is held: its JWK Set (%s) has not been fetched; see the warnings naming the issuer",
			wire.Quote(v.issuer), v.keysSource())
	case ClassUnknownKid:
		te.detail = fmt.Sprintf("token kid %s is not in the JWK Set of issuer %s (%s): the token was signed by another key set (another provider or environment, or a jwks_url that is not the issuer's)",
			wire.Quote(kid), wire.Quote(v.issuer), v.keysSource())
	case ClassAlgorithm:
		te.detail = fmt.Sprintf("no key of issuer %s fits token alg %s (kid %s)", wire.Quote(v.issuer), wire.Quote(alg), wire.Quote(kid))
	case ClassBadSignature:
		te.detail = fmt.Sprintf("the signature (alg %s, kid %s) does not verify with issuer %s's key: the token was altered, or signed by another key under the same kid",
			alg, wire.Quote(kid), wire.Quote(v.issuer))
	case ClassExpired:
		te.detail = v.timeDetail("expired at", claims["exp"])
	case ClassNotYetValid:
		if errors.Is(err, jwt.ErrTokenNotValidYet) {
			te.detail = v.timeDetail("not valid before", claims["nbf"])
		} else {
			te.detail = v.timeDetail("issued in the future, at", claims["iat"])
		}
	default:
		te.detail = claimsDetail(err, claims)
	}
	return te
}

// keysSource says where the issuer's keys come from.
func (v *jwtVerifier) keysSource() string {
	switch {
	case v.own != nil:
		return "the gateway's own authorization server"
	case v.remote == nil:
		return "keys configured in auth"
	}
	v.remote.mu.Lock()
	u := v.remote.jwksURL
	v.remote.mu.Unlock()
	if u == "" {
		return "jwks_uri from its discovery document, not fetched yet"
	}
	return "fetched from " + u
}

// timeDetail names a time claim, now, and the leeway allowed.
func (v *jwtVerifier) timeDetail(what string, claim any) string {
	n, ok := claim.(float64)
	if !ok {
		return what + " an unreadable time"
	}
	at := time.Unix(int64(n), 0)
	return fmt.Sprintf("%s %s (now %s, leeway %s: if the token is fresh, check the clocks)", what, timeText(at), timeText(time.Now()), v.leeway)
}

// malformedDetail says what is wrong with the shape of a token, without
// quoting any of it.
func malformedDetail(tok *jwt.Token) string {
	if tok == nil || tok.Header == nil {
		return "not a JWT: want three base64url segments (header.payload.signature) holding JSON"
	}
	return "the JWT's payload is not a JSON object of claims"
}

// claimsDetail says which claim made the token unusable.
func claimsDetail(err error, claims jwt.MapClaims) string {
	switch {
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		if _, ok := claims["exp"]; !ok {
			return "token has no exp claim, which is required"
		}
		return "a required claim is missing"
	case errors.Is(err, jwt.ErrTokenInvalidClaims):
		return "a claim has the wrong type (exp, nbf and iat are numbers; iss, sub are strings; aud a string or a list)"
	}
	return reason(err)
}
