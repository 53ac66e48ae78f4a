package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgw/gateway/internal/config"
)

// The audience rule (issue 41): a configured audience (one or a list), or
// the URL of the vhost being called, which the handler names in the
// request's context; "resource" accepts the latter only.
func TestAudience_ListAndResource(t *testing.T) {
	k := newKeys(t)
	const vhostA, vhostB = "https://gw.example/servers/a/mcp", "https://gw.example/servers/b/mcp"
	list := settings(k.hmac, nil)
	list.JWT.Audience, list.JWT.Audiences = "api-one", []string{"api-one", "api-two"}
	only := settings(k.hmac, nil)
	only.JWT.Audience = config.AudienceResource
	cases := []struct {
		name     string
		a        config.Auth
		aud      any
		resource string
		ok       bool
	}{
		{"second of a list", list, "api-two", vhostA, true},
		{"list member in an aud list", list, []any{"x", "api-one"}, "", true},
		{"not in the list", list, "api-three", vhostA, false},
		{"the vhost's URL besides a list", list, vhostA, vhostA, true},
		{"the vhost's URL, no resource known", list, vhostA, "", false},
		{"another vhost's URL", list, vhostB, vhostA, false},
		{"resource only: the vhost's URL", only, []any{vhostB, vhostA}, vhostA, true},
		{"resource only: another vhost", only, vhostB, vhostA, false},
		{"resource only: the word itself", only, config.AudienceResource, vhostA, false},
		{"resource only: no resource known", only, vhostA, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := mustVerifier(t, c.a)
			req := httptest.NewRequest(http.MethodPost, "/servers/a/mcp", nil)
			if c.resource != "" {
				req = req.WithContext(WithResource(req.Context(), c.resource))
			}
			req.Header.Set("Authorization", "Bearer "+sign(t, jwt.SigningMethodHS256, k.hmac, with(claims(), "aud", c.aud)))
			p, err := v.Verify(req)
			if c.ok && (err != nil || p != "alice") {
				t.Fatalf("refused: %v", err)
			}
			if !c.ok && (err == nil || !errors.Is(err, jwt.ErrTokenInvalidAudience)) {
				t.Fatalf("accepted or wrong reason: %q %v", p, err)
			}
		})
	}
}

// Introspection answers are cached per token, for every vhost alike: the
// audience is checked per request, so a token for vhost a is refused on
// vhost b even when its answer is cached.
func TestAudience_IntrospectionCachedAnswerCheckedPerResource(t *testing.T) {
	s := &config.JWTSettings{Issuer: issuer, Audience: config.AudienceResource}
	in := &introspector{s: s}
	e := introspected{sub: "alice", claims: Claims{"aud": "https://gw/servers/a/mcp"}}
	if _, _, err := in.forResource(WithResource(context.Background(), "https://gw/servers/a/mcp"), e); err != nil {
		t.Fatalf("vhost a: %v", err)
	}
	if _, _, err := in.forResource(WithResource(context.Background(), "https://gw/servers/b/mcp"), e); err == nil {
		t.Fatal("vhost b accepted a's token")
	}
}
