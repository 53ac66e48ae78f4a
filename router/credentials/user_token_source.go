package credentials

import (
	"context"
	"errors"
)

// UserTokenSource gives a user_oauth backend's requests the calling
// user's own token (router/usertokens.Vault): it reads the sealed token
// from the store, refreshes it once across the fleet when expired, and
// answers *SignInRequired when the user has none that works.
type UserTokenSource interface {
	UserToken(ctx context.Context, principal string, s *Settings) (string, error)
	// ForgetUserToken drops the user's token after the backend refused
	// it, so the next request refreshes it or asks again.
	ForgetUserToken(ctx context.Context, principal string, s *Settings)
}

// SignInRequired is a user_oauth backend's answer to a caller who has no
// usable token there: the caller must open URL (a sealed, single-use
// connect link on public_url) in a browser. The router turns it into a
// URL-mode elicitation (router/sign_in.go). The URL is bound to the
// caller and grants nothing by itself; it is no secret.
type SignInRequired struct {
	VHost, Backend string
	URL            string
	// ID is the link's id: the elicitationId of 2025-11-25.
	ID string
}

func (e *SignInRequired) Error() string {
	return "sign-in required: backend " + e.Backend + " needs your authorization; open " + e.URL
}

// Message is what a person is shown beside the link.
func (e *SignInRequired) Message() string {
	return "Sign in to " + e.Backend + " to let the gateway call it for you."
}

// errNoUserTokens: a user_oauth backend reached without a caller (a
// request the gateway makes for itself), or in a gateway with no token
// source (NewSource's users).
var errNoUserTokens = errors.New("this backend needs the calling user's sign-in; the request has no user")

// userToken is Token for GrantUserOAuth.
func (src *Source) userToken(ctx context.Context) (string, error) {
	caller, ok := CallerFrom(ctx)
	users := src.users
	if !ok || caller.Principal == "" || users == nil {
		return "", errNoUserTokens
	}
	return users.UserToken(ctx, caller.Principal, &src.s)
}

// forgetUserToken is Forget for GrantUserOAuth.
func (src *Source) forgetUserToken(ctx context.Context) {
	caller, ok := CallerFrom(ctx)
	if users := src.users; ok && users != nil {
		users.ForgetUserToken(ctx, caller.Principal, &src.s)
	}
}
