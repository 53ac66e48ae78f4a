package auth

import (
	"context"
	"slices"

	"github.com/mcpgw/gateway/internal/config"
)

// The audience rule of the MCP authorization spec: a client asks for a
// token with resource=<the vhost's URL> (RFC 8707), and an authorization
// server that honours it puts that URL in aud. So a token is accepted
// when its audience holds a configured audience or the canonical URL of
// the vhost being called, which the handler puts in the request's
// Identity (WithResource) only where it knows the gateway's public URL:
// a URL built from the request's Host would let a token minted for any
// server be replayed here. With audience: resource, only the vhost's URL
// is accepted, so a token for one vhost works on no other.

// WithResource returns a copy of ctx whose Identity names the canonical
// URL of the resource being called ({public_url}/servers/{vhost}/mcp).
func WithResource(ctx context.Context, url string) context.Context {
	id := IdentityFrom(ctx)
	id.Resource = url
	return WithIdentity(ctx, id)
}

// ResourceFromContext returns the URL WithResource stored, or "".
func ResourceFromContext(ctx context.Context) string { return IdentityFrom(ctx).Resource }

// audienceRule is one issuer's audience rule.
type audienceRule struct {
	list         []string
	resourceOnly bool
}

func audienceOf(s *config.JWTSettings) audienceRule {
	if s.Audience == config.AudienceResource {
		return audienceRule{resourceOnly: true}
	}
	if len(s.Audiences) > 0 {
		return audienceRule{list: s.Audiences}
	}
	return audienceRule{list: []string{s.Audience}}
}

// accepts reports whether a token's audience claim (a string or a list)
// names a configured audience or the resource being called.
func (a audienceRule) accepts(ctx context.Context, claim any) bool {
	resource := ResourceFromContext(ctx)
	return (resource != "" && claimHas(claim, resource)) ||
		(!a.resourceOnly && slices.ContainsFunc(a.list, func(s string) bool { return claimHas(claim, s) }))
}
