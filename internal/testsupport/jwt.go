package testsupport

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The issuer and audience the gateway is configured with in tests; tokens
// from StdClaims pass its checks unless a test changes a claim on purpose.
const (
	JWTIssuer   = "mcpgateway"
	JWTAudience = "mcpgateway-api"
)

// MintJWT signs claims with HS256 and secret.
func MintJWT(t testing.TB, secret []byte, claims jwt.MapClaims) string {
	t.Helper()
	return MintJWTWithKey(t, jwt.SigningMethodHS256, secret, claims)
}

// MintJWTWithKey signs claims with any method and a key of the type that
// method expects (e.g. *rsa.PrivateKey for RS256), for tests of asymmetric
// verification and of algorithm confusion.
func MintJWTWithKey(t testing.TB, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatalf("testsupport: signing %s token: %v", method.Alg(), err)
	}
	return s
}

// StdClaims are valid claims for subject sub: the test issuer and
// audience, issued now and expiring in an hour. Tests edit the returned
// map to produce the one invalid claim they are about.
func StdClaims(sub string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"sub": sub,
		"iss": JWTIssuer,
		"aud": JWTAudience,
		"iat": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
}
