package credentials

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

const (
	defaultTimeout    = 10 * time.Second
	defaultMaxEntries = 10000
	// defaultLifetime is how long a token whose answer had no expires_in
	// is used (RFC 6749 §5.1 only recommends the field).
	defaultLifetime = time.Minute
	// maxSkew is the most a token is refreshed before it expires: long
	// enough for a request that got it to reach the backend in time.
	maxSkew = 30 * time.Second
)

// Source obtains one backend's bearer tokens, per Settings, and caches
// them: per principal for token_exchange, one for the backend for
// client_credentials. It is safe for concurrent use. Tokens are never
// logged and never part of an error.
type Source struct {
	s     Settings
	cache *tokenCache
	hc    *http.Client
	now   func() time.Time
	users UserTokenSource // user_oauth: the gateway's vault (nil: none)
}

// NewSource builds the token source of s. now is the clock (nil:
// time.Now), so tests can expire tokens without waiting. users is where
// a user_oauth backend's tokens are kept (router/usertokens.Vault): a
// service of the gateway's, given here once rather than with each
// request; nil when the gateway has none (those backends' requests then
// fail).
func NewSource(s Settings, now func() time.Time, users UserTokenSource) *Source {
	if now == nil {
		now = time.Now
	}
	if s.Timeout <= 0 {
		s.Timeout = defaultTimeout
	}
	if s.MaxEntries <= 0 {
		s.MaxEntries = defaultMaxEntries
	}
	if s.SubjectTokenType == "" {
		s.SubjectTokenType = TokenTypeAccessToken
	}
	var ht *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		ht = dt.Clone()
	} else {
		ht = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	return &Source{
		s:     s,
		cache: newTokenCache(s.MaxEntries, now),
		now:   now,
		users: users,
		hc: &http.Client{
			Transport: ht,
			// A redirect would resend the client secret and the subject
			// token to wherever the endpoint points.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Close releases the source's idle connections to the token endpoint.
func (src *Source) Close() { src.hc.CloseIdleConnections() }

// Token returns the bearer token for a backend request made in ctx (whose
// caller WithCaller set, for token_exchange).
func (src *Source) Token(ctx context.Context) (string, error) {
	if src.s.Grant == GrantUserOAuth {
		return src.userToken(ctx) // user_token_source.go
	}
	if src.s.Grant == GrantClientCredentials {
		return src.cache.get(ctx, "", src.s.Timeout, src.clientCredentials)
	}
	caller, ok := CallerFrom(ctx)
	if !ok || caller.Principal == "" {
		return "", src.fail(errNoCaller)
	}
	key := caller.Principal
	if tok, ok := src.cache.lookup(key); ok {
		return tok, nil
	}
	if caller.Token == "" {
		return "", src.fail(errNoCaller)
	}
	return src.cache.get(ctx, key, src.s.Timeout, func(ctx context.Context) (string, time.Time, error) {
		return src.exchange(ctx, caller)
	})
}

// Forget drops the cached token a request made in ctx would use, so the
// next one fetches a new token: the backend refused this one (revoked
// before it expired). A token fetched meanwhile may be dropped too; that
// costs one more token request, nothing else.
func (src *Source) Forget(ctx context.Context) {
	if src.s.Grant == GrantUserOAuth {
		src.forgetUserToken(ctx)
		return
	}
	key := ""
	if src.s.Grant == GrantTokenExchange {
		caller, ok := CallerFrom(ctx)
		if !ok {
			return
		}
		key = caller.Principal
	}
	src.cache.drop(key)
}

// errNoCaller: a token exchange needs the caller's token.
var errNoCaller = errors.New("the request carries no caller token to exchange")

// exchange runs one RFC 8693 token exchange for caller. The request is a
// client credentials request with the grant type replaced and the
// exchange parameters added (x/oauth2 allows exactly that override), so
// client authentication (HTTP Basic, RFC 6749 §2.3.1), the form encoding
// and the answer's parsing are the library's.
func (src *Source) exchange(ctx context.Context, caller Caller) (string, time.Time, error) {
	params := src.targetParams()
	params.Set("grant_type", GrantTypeTokenExchange)
	params.Set("subject_token", caller.Token)
	params.Set("subject_token_type", src.s.SubjectTokenType)
	params.Set("requested_token_type", TokenTypeAccessToken)
	tok, refreshAt, err := src.fetch(ctx, params)
	if err != nil {
		return "", time.Time{}, err
	}
	// The exchanged token never outlives the caller's own: once that
	// expires the caller must come back with a new one anyway.
	if exp, ok := caller.Claims["exp"].(float64); ok {
		if t := time.Unix(int64(exp), 0); t.Before(refreshAt) {
			refreshAt = t
		}
	}
	return tok, refreshAt, nil
}

// clientCredentials runs one client credentials grant.
func (src *Source) clientCredentials(ctx context.Context) (string, time.Time, error) {
	return src.fetch(ctx, src.targetParams())
}

// targetParams name the token's target: audience (RFC 8693 §2.1; many
// authorization servers take it for client credentials too) and resource
// (RFC 8707).
func (src *Source) targetParams() url.Values {
	params := url.Values{}
	if src.s.Audience != "" {
		params.Set("audience", src.s.Audience)
	}
	if src.s.Resource != "" {
		params.Set("resource", src.s.Resource)
	}
	return params
}

// fetch asks the token endpoint and returns the token and when to stop
// using it: shortly before it expires (a tenth of its lifetime, at most
// maxSkew).
func (src *Source) fetch(ctx context.Context, params url.Values) (string, time.Time, error) {
	cfg := clientcredentials.Config{
		ClientID:       src.s.ClientID,
		ClientSecret:   src.s.ClientSecret.Reveal(),
		TokenURL:       src.s.TokenURL,
		Scopes:         src.s.Scopes,
		EndpointParams: params,
		AuthStyle:      oauth2.AuthStyleInHeader,
	}
	start := src.now()
	// x/oauth2 takes its HTTP client from the context only
	// (oauth2.HTTPClient): the one way to keep redirects unfollowed.
	tok, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, src.hc))
	if err != nil {
		return "", time.Time{}, src.fail(err)
	}
	if tok.AccessToken == "" || !tokenSafe(tok.AccessToken) {
		return "", time.Time{}, src.fail(errUnusable)
	}
	expiry := tok.Expiry
	if expiry.IsZero() {
		expiry = start.Add(defaultLifetime)
	}
	lifetime := expiry.Sub(start)
	return tok.AccessToken, expiry.Add(-min(maxSkew, lifetime/10)), nil
}

var errUnusable = errors.New("the token endpoint's answer holds no usable access token")

// tokenSafe: a bearer token is token68-like visible ASCII (RFC 6750
// §2.1); anything else could not travel in a header unchanged.
func tokenSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// Error is a failure to obtain a backend's token. Its message says what
// went wrong in words the caller can act on, and never holds the client
// secret, a token, the token endpoint's body or its URL.
type Error struct {
	Grant Grant
	msg   string
	cause error // context.DeadlineExceeded when the endpoint timed out
}

func (e *Error) Error() string {
	what := "token exchange"
	if e.Grant == GrantClientCredentials {
		what = "client credentials grant"
	}
	return what + " failed: " + e.msg
}

// Unwrap exposes only a deadline, so errors.Is can tell a timeout; the
// library's errors, which quote the endpoint's body, are never reachable.
func (e *Error) Unwrap() error { return e.cause }

// fail turns a token request's error into an *Error.
func (src *Source) fail(err error) error {
	e := &Error{Grant: src.s.Grant}
	var re *oauth2.RetrieveError
	var ne net.Error
	switch {
	case errors.Is(err, errNoCaller), errors.Is(err, errUnusable):
		e.msg = err.Error()
	case errors.As(err, &re) && re.Response != nil:
		e.msg = fmt.Sprintf("the token endpoint answered HTTP %d", re.Response.StatusCode)
		if code := oauthCode(re.ErrorCode); code != "" {
			e.msg += " (" + code + ")"
		}
	case errors.Is(err, context.DeadlineExceeded):
		e.msg = "the token endpoint did not answer within " + src.s.Timeout.String()
		e.cause = context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		e.msg = "cancelled"
		e.cause = context.Canceled
	case errors.As(err, &ne):
		e.msg = "the token endpoint is unreachable"
	default:
		e.msg = errUnusable.Error()
	}
	return e
}

// oauthCode keeps an OAuth error code (RFC 6749 §5.2: a short ASCII word
// such as invalid_grant) and drops anything else the endpoint put there.
func oauthCode(s string) string {
	if len(s) == 0 || len(s) > 64 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c == '_' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return ""
		}
	}
	return strings.ToLower(s)
}
