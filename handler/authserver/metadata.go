package authserver

import (
	"net/http"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The server's metadata (RFC 8414), also at the OpenID discovery URL for
// clients that look there: the library's document, narrowed to what the
// server does (code with PKCE S256, refresh, revocation; no implicit
// flow, userinfo, introspection or logout), with the registration
// endpoint and client ID metadata document support added.

func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	ctx := op.ContextWithIssuer(r.Context(), s.o.Issuer)
	d := op.CreateDiscoveryConfig(ctx, s.provider, s.provider.Storage())
	d.ScopesSupported = append(append([]string(nil), s.o.Scopes()...), oidc.ScopeOfflineAccess)
	d.ResponseTypesSupported = []string{string(oidc.ResponseTypeCode)}
	d.ResponseModesSupported = []string{string(oidc.ResponseModeQuery)}
	d.GrantTypesSupported = []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
	d.CodeChallengeMethodsSupported = []oidc.CodeChallengeMethod{oidc.CodeChallengeMethodS256}
	d.TokenEndpointAuthMethodsSupported = []oidc.AuthMethod{oidc.AuthMethodNone, oidc.AuthMethodBasic, oidc.AuthMethodPost}
	d.RevocationEndpointAuthMethodsSupported = d.TokenEndpointAuthMethodsSupported
	d.UserinfoEndpoint, d.IntrospectionEndpoint, d.EndSessionEndpoint, d.DeviceAuthorizationEndpoint = "", "", "", ""
	d.IntrospectionEndpointAuthMethodsSupported, d.IntrospectionEndpointAuthSigningAlgValuesSupported = nil, nil
	d.RequestObjectSigningAlgValuesSupported, d.ClaimsSupported, d.UILocalesSupported = nil, nil, nil
	d.CheckSessionIframe = ""
	if s.o.Settings.DynamicRegistration {
		d.RegistrationEndpoint = s.o.Issuer + pathRegister
	}
	d.ClientIDMetadataDocumentSupported = s.o.Settings.ClientIDMetadataDocuments
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Cache-Control", "public, max-age=300")
	writeJSONPublic(w, d)
}
