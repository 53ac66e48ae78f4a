package credentials

// GrantUserOAuth is RFC 6749 §4.1 with PKCE (RFC 7636) per user: each
// user signs in at the backend's authorization server once, through a
// URL-mode elicitation, and the gateway keeps that user's tokens sealed
// in the store (handler/connect).
const GrantUserOAuth Grant = "user_oauth"

// Token endpoint client authentication methods (RFC 6749 §2.3.1, OIDC
// Core §9).
const (
	AuthClientSecretBasic = "client_secret_basic"
	AuthClientSecretPost  = "client_secret_post"
)

// UserOAuth is a user_oauth backend's authorization server and client,
// as config validated them. Either Issuer (metadata discovered: OIDC,
// then RFC 8414) or AuthorizationURL and TokenURL (Settings.TokenURL)
// are set.
type UserOAuth struct {
	Issuer           string
	AuthorizationURL string
	// RevocationURL (RFC 7009), optional: a disconnect revokes there.
	RevocationURL string
	// TokenEndpointAuth is AuthClientSecretBasic (default) or
	// AuthClientSecretPost.
	TokenEndpointAuth string
	// VHost and Backend name the backend the settings belong to: a
	// user's token is kept per vhost and backend.
	VHost, Backend string
}
