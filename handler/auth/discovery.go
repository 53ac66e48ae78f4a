package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// An issuer configured without keys publishes where they are in its
// metadata: the OpenID Connect discovery document, or, for OAuth servers
// that are not OpenID providers, RFC 8414 authorization server metadata.
// go-oidc does the first only (and not the path insertion RFC 8414 asks
// for, which Keycloak realms need), so the two GETs are done here, with the
// mix-up defence both specifications require: the document's issuer must
// equal the configured one byte for byte.

// maxMetadataBytes bounds a discovery document or a JWK Set.
const maxMetadataBytes = 1 << 20

// providerMetadata is the part of either document the gateway reads.
type providerMetadata struct {
	Issuer  string `json:"issuer"`
	JWKSURI string `json:"jwks_uri"`
}

// errIssuerMismatch marks metadata that names another issuer: a config
// error (issuer mistyped, a trailing slash too many or too few), never
// fixed by retrying.
var errIssuerMismatch = errors.New("issuer mismatch")

// metadataURLs are the issuer's discovery URLs, in the order they are
// tried: OpenID Connect Discovery 1.0 §4 appends the well-known path to
// the issuer (a trailing slash is not doubled); RFC 8414 §3.1 inserts it
// between host and path.
func metadataURLs(issuer string) []string {
	out := []string{strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"}
	if u, err := url.Parse(issuer); err == nil {
		u.Path = "/.well-known/oauth-authorization-server" + strings.TrimSuffix(u.Path, "/")
		u.RawPath = ""
		out = append(out, u.String())
	}
	return out
}

// discoverJWKSURL finds the issuer's jwks_uri. A document that answers
// but names another issuer ends the search with errIssuerMismatch.
func discoverJWKSURL(ctx context.Context, hc *http.Client, issuer string) (string, error) {
	var errs []error
	for _, u := range metadataURLs(issuer) {
		var md providerMetadata
		if err := getJSON(ctx, hc, u, &md); err != nil {
			errs = append(errs, err)
			continue
		}
		if md.Issuer != issuer {
			return "", fmt.Errorf("%w: %s names issuer %q, the config says %q (they must be equal byte for byte, trailing slash included)",
				errIssuerMismatch, u, md.Issuer, issuer)
		}
		if md.JWKSURI == "" {
			return "", fmt.Errorf("%s has no jwks_uri", u)
		}
		ju, err := url.Parse(md.JWKSURI)
		iu, _ := url.Parse(issuer)
		if err != nil || ju.Host == "" || (ju.Scheme != "https" && (ju.Scheme != "http" || iu == nil || iu.Scheme != "http")) {
			return "", fmt.Errorf("%s: jwks_uri %q is not an https URL", u, md.JWKSURI)
		}
		return md.JWKSURI, nil
	}
	return "", fmt.Errorf("no discovery document: %w", errors.Join(errs...))
}

// getJSON GETs u and decodes a 200 answer of at most maxMetadataBytes.
// Cache headers are ignored on purpose: the caller decides when to ask
// again (some providers send no-store on their keys).
func getJSON(ctx context.Context, hc *http.Client, u string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	if len(body) > maxMetadataBytes {
		return fmt.Errorf("GET %s: answer larger than %d bytes", u, maxMetadataBytes)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("GET %s: not JSON: %w", u, err)
	}
	return nil
}
