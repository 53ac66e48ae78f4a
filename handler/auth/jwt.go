package auth

import (
	"cmp"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgw/gateway/internal/config"
)

// One trusted issuer's token checks: the registered claims (golang-jwt's
// parser), the key for the token's algorithm (configured, or from the
// issuer's JWK Set), the access-token type, an audience in another claim
// than aud, and a usable subject.

// jwtVerifier verifies the bearer JWTs of one trusted issuer: against its
// HMAC secret and/or public key, or against the keys remoteKeys fetches
// from the issuer's JWK Set.
type jwtVerifier struct {
	parser *jwt.Parser
	issuer string   // the trusted issuer, for what a refusal says
	algs   []string // the accepted algorithms, likewise
	leeway time.Duration
	hmac   []byte
	pub    crypto.PublicKey
	remote *remoteKeys // nil for configured keys
	// aud is the issuer's audience rule, checked in audClaim.
	aud      audienceRule
	audClaim string
	own      *OwnIssuer // the gateway's own authorization server (own_issuer.go)
}

// checkJWT validates one issuer's settings without starting anything.
func checkJWT(s *config.JWTSettings) ([]string, error) {
	if s == nil {
		return nil, errors.New("auth: jwt mode needs JWT settings")
	}
	if s.Issuer == "" || s.Audience == "" {
		return nil, errors.New("auth: jwt mode needs an issuer and an audience")
	}
	supported := s.KeyAlgorithms()
	if s.RemoteKeys() {
		if len(supported) > 0 {
			return nil, fmt.Errorf("auth: issuer %q: keys from a JWK Set and configured keys cannot be mixed", s.Issuer)
		}
		supported = asymmetricAlgs
	}
	if len(supported) == 0 {
		return nil, errors.New("auth: jwt mode needs an HMAC secret or a supported public key")
	}
	algs := s.Algorithms
	if len(algs) == 0 {
		algs = supported
	}
	for _, alg := range algs {
		if !slices.Contains(supported, alg) {
			return nil, fmt.Errorf("auth: algorithm %q cannot be verified with the configured keys", alg)
		}
	}
	if s.Leeway < 0 {
		return nil, errors.New("auth: negative leeway")
	}
	return algs, nil
}

// asymmetricAlgs are the algorithms of keys from a JWK Set.
var asymmetricAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// newJWT builds the verifier of s; with remote keys it starts fetching
// them (o says how), and close must be called.
func newJWT(s *config.JWTSettings, o *options) (*jwtVerifier, error) {
	algs, err := checkJWT(s)
	if err != nil {
		return nil, err
	}
	popts := []jwt.ParserOption{
		jwt.WithValidMethods(slices.Clone(algs)),
		jwt.WithIssuer(s.Issuer),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(s.Leeway),
	}
	v := &jwtVerifier{issuer: s.Issuer, algs: slices.Clone(algs), leeway: s.Leeway, hmac: slices.Clone(s.HMACSecret), pub: s.PublicKey, aud: audienceOf(s), audClaim: cmp.Or(s.AudienceClaim, "aud")}
	v.parser = jwt.NewParser(popts...)
	if s.RemoteKeys() && o != nil {
		v.remote = newRemoteKeys(s.Issuer, s.JWKSURL, o.httpClient, o.logger, o.timing)
	}
	return v, nil
}

func (v *jwtVerifier) close() {
	if v.remote != nil {
		v.remote.close()
	}
}

func (v *jwtVerifier) Verify(r *http.Request) (Principal, error) {
	p, _, err := v.VerifyClaims(r)
	return p, err
}

// VerifyClaims verifies the bearer token and returns its subject and every
// claim (the registered ones are checked by the parser's options, the rest
// are passed on as they are).
func (v *jwtVerifier) VerifyClaims(r *http.Request) (Principal, Claims, error) {
	raw, err := BearerToken(r)
	if err != nil {
		return "", nil, err
	}
	sub, claims, err := v.verify(r.Context(), raw)
	return Principal(sub), claims, err
}

// verify checks raw and returns its subject and claims.
func (v *jwtVerifier) verify(ctx context.Context, raw string) (string, Claims, error) {
	claims := jwt.MapClaims{}
	keyf := v.key
	switch {
	case v.remote != nil:
		keyf = v.remoteKey(ctx)
	case v.own != nil:
		keyf = v.ownKey(ctx)
	}
	tok, err := v.parser.ParseWithClaims(raw, claims, keyf)
	if err != nil {
		return "", nil, v.refused(ctx, err, tok, claims)
	}
	// An access token is typed JWT or at+jwt (RFC 9068), or not at all;
	// another type (an ID token's, a logout token's) is not one.
	if typ, ok := tok.Header["typ"]; ok {
		s, _ := typ.(string)
		switch strings.TrimPrefix(strings.ToLower(s), "application/") {
		case "jwt", "at+jwt":
		default:
			return "", nil, refusal(errNotAccessToken, "token typ %s is not an access token's (JWT or at+jwt): an ID or other token was sent", claimText(typ))
		}
	}
	if jti, _ := claims["jti"].(string); v.own != nil && jti == "" {
		return "", nil, refusal(errNotAccessToken, "a token of the gateway's own issuer without jti is not an access token")
	}
	if !v.aud.accepts(ctx, claims[v.audClaim]) {
		return "", nil, refusal(jwt.ErrTokenInvalidAudience, "%s", audienceDetail(v.audClaim, claims[v.audClaim], v.aud, ResourceFromContext(ctx)))
	}
	sub, err := claims.GetSubject()
	if err != nil || !validSubject(sub) {
		return "", nil, refusal(ownError("token has no usable sub claim"), "token sub %s is not usable (non-empty, at most 1024 bytes, no control characters)", claimText(claims["sub"]))
	}
	return sub, Claims(claims), nil
}

// claimHas reports whether a claim value (a string or a list of them)
// holds want.
func claimHas(c any, want string) bool {
	switch c := c.(type) {
	case string:
		return c == want
	case []any:
		for _, e := range c {
			if s, ok := e.(string); ok && s == want {
				return true
			}
		}
	}
	return false
}

// key picks the verification key for the token's algorithm, insisting that
// the key type matches the algorithm family: an HS* token is never checked
// against public key bytes, and "none" has no key at all.
func (v *jwtVerifier) key(t *jwt.Token) (any, error) {
	if _, ok := t.Method.(*jwt.SigningMethodHMAC); ok {
		if len(v.hmac) == 0 {
			return nil, errAlgorithm
		}
		return v.hmac, nil
	}
	if keyFits(t.Method, v.pub) {
		return v.pub, nil
	}
	return nil, errAlgorithm
}

// remoteKey is the key function over the issuer's JWK Set: the JWK the
// token's kid names, handed out only for its own algorithm family.
func (v *jwtVerifier) remoteKey(ctx context.Context) jwt.Keyfunc {
	kf := v.remote.keyfunc(ctx)
	return func(t *jwt.Token) (any, error) {
		k, err := kf(t)
		if err != nil {
			if errors.Is(err, jwkset.ErrKeyNotFound) && !v.remote.holdsKeys(ctx) {
				return nil, errKeysNotHeld
			}
			return nil, err // keyfunc's: jwkset.ErrKeyNotFound, or keyfunc.ErrKeyfunc
		}
		if set, ok := k.(jwt.VerificationKeySet); ok { // a token without kid
			if len(set.Keys) == 0 && !v.remote.holdsKeys(ctx) {
				return nil, errKeysNotHeld
			}
			var fit jwt.VerificationKeySet
			for _, key := range set.Keys {
				if keyFits(t.Method, key) {
					fit.Keys = append(fit.Keys, key)
				}
			}
			if len(fit.Keys) == 0 {
				return nil, errAlgorithm
			}
			return fit, nil
		}
		if !keyFits(t.Method, k) {
			return nil, errAlgorithm
		}
		return k, nil
	}
}

// keyFits reports whether key is a public key of m's family (and curve).
func keyFits(m jwt.SigningMethod, key any) bool {
	switch m := m.(type) {
	case *jwt.SigningMethodRSA, *jwt.SigningMethodRSAPSS:
		_, ok := key.(*rsa.PublicKey)
		return ok
	case *jwt.SigningMethodECDSA:
		k, ok := key.(*ecdsa.PublicKey)
		return ok && k.Curve.Params().BitSize == m.CurveBits
	case *jwt.SigningMethodEd25519:
		_, ok := key.(ed25519.PublicKey)
		return ok
	}
	return false
}

// validSubject: non-empty, valid UTF-8, no control characters, bounded.
func validSubject(s string) bool {
	if s == "" || len(s) > 1024 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return false
		}
	}
	return true
}
