package auth

import (
	"net/http"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// typ: absent, JWT and at+jwt (RFC 9068) are access tokens; any other
// type (an ID token's, a logout token's) is refused.
func TestAuth_AccessTokenTypes(t *testing.T) {
	k := newKeys(t)
	v := mustVerifier(t, settings(nil, &k.rsa.PublicKey))
	for typ, want := range map[any]int{nil: http.StatusNoContent, "JWT": http.StatusNoContent, "at+jwt": http.StatusNoContent,
		"application/at+JWT": http.StatusNoContent, "logout+jwt": http.StatusUnauthorized, "dpop+jwt": http.StatusUnauthorized, 7: http.StatusUnauthorized} {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims())
		if typ == nil {
			delete(tok.Header, "typ")
		} else {
			tok.Header["typ"] = typ
		}
		s, err := tok.SignedString(k.rsa)
		if err != nil {
			t.Fatal(err)
		}
		if rec, _ := serve(t, v, "Bearer "+s); rec.Code != want {
			t.Errorf("typ %v: %d, want %d", typ, rec.Code, want)
		}
	}
}
