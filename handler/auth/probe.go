package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpgw/gateway/internal/config"
)

// gateway check --probe asks each issuer what the verifier will ask it,
// once and with the same code (discoverJWKSURL, fetchKeySet): a discovery
// document whose issuer is not the configured one byte for byte, or a
// JWK Set that cannot be fetched or holds no usable key, is found before
// the first token is refused for it.

// ProbeIssuer fetches an issuer's metadata and keys once, as the
// verifier would, and says what it found. An issuer with keys in the
// config has nothing to fetch. With a jwks_url the discovery document is
// still asked for, when the issuer serves one: if it names another issuer,
// the issuer's tokens will carry that one and be refused.
func ProbeIssuer(ctx context.Context, s *config.JWTSettings) (string, error) {
	hc := &http.Client{Transport: newTransport()}
	defer hc.CloseIdleConnections()
	if !s.RemoteKeys() {
		if s.Introspection != nil {
			return "opaque tokens introspected; keys configured locally", nil
		}
		return "keys configured locally: nothing to fetch", nil
	}
	u := s.JWKSURL
	var note string
	if s.Discover {
		d, err := discoverJWKSURL(ctx, hc, s.Issuer)
		if err != nil {
			return "", fmt.Errorf("discovery: %w", err)
		}
		u, note = d, "discovery names the issuer, "
	} else if _, err := discoverJWKSURL(ctx, hc, s.Issuer); errors.Is(err, errIssuerMismatch) {
		return "", fmt.Errorf("discovery: %w", err)
	}
	keys, err := fetchKeySet(ctx, hc, u)
	if err != nil {
		return "", fmt.Errorf("JWKS: %w", err)
	}
	kids := make([]string, 0, len(keys))
	for _, k := range keys {
		kids = append(kids, k.Marshal().KID)
	}
	return fmt.Sprintf("%sJWKS %s holds %d signing key(s) (kid %s)", note, u, len(keys), strings.Join(kids, ", ")), nil
}
