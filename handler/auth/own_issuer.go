package auth

import (
	"context"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The gateway's own authorization server (handler/authserver) is one
// more trusted issuer, with no config of its own: its tokens are checked
// with its keys, read from the store by the server itself (no HTTP to
// the gateway's own JWK Set), for the vhost's resource URL only, and must
// be access tokens (an ID token it issues names the same audience but
// carries no jti). Their sub is already the principal as the resource
// side names it, so it is never qualified by the issuer.

// OwnIssuer describes the gateway's own authorization server.
type OwnIssuer struct {
	Issuer string
	// Key returns the public key a token's kid names.
	Key func(ctx context.Context, kid string) (any, error)
}

// WithOwnIssuer trusts the gateway's own authorization server besides
// the configured issuers.
func WithOwnIssuer(o OwnIssuer) Option { return func(op *options) { op.own = &o } }

// ownAlgorithms are the algorithms of the server's keys.
var ownAlgorithms = []string{"ES256"}

func newOwnJWT(o *OwnIssuer) *jwtVerifier {
	return &jwtVerifier{
		issuer: o.Issuer, algs: ownAlgorithms, leeway: 5 * time.Second,
		parser: jwt.NewParser(jwt.WithValidMethods(ownAlgorithms), jwt.WithIssuer(o.Issuer), jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(), jwt.WithLeeway(5*time.Second)),
		aud: audienceRule{resourceOnly: true}, audClaim: "aud", own: o,
	}
}

// ownKey is the key function of the own issuer's tokens.
func (v *jwtVerifier) ownKey(ctx context.Context) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errUnknownKid
		}
		k, err := v.own.Key(ctx, kid)
		if err != nil {
			return nil, errUnknownKid
		}
		if !keyFits(t.Method, k) {
			return nil, errAlgorithm
		}
		return k, nil
	}
}
