// Package credentials gives backend requests credentials of their own, per
// caller or per backend, so the client's token never has to reach a
// backend: claim templates in add_headers (template.go), and OAuth 2.0
// tokens obtained by the gateway (source.go): an RFC 8693 token exchange
// of the caller's token, or the client credentials grant.
//
// The decision is taken where a backend request's headers are built
// (router/upstream: Client.Open), from the caller the request's context
// carries (WithCaller, set by the handler once the token is verified), so
// every path that reaches a backend (routed calls, list fan-outs,
// initialize probes, discovery, listens) gets the same credentials without
// threading them through the router.
package credentials

import (
	"context"
	"log/slog"
	"time"
)

// Caller is who a backend request is made for: the verified downstream
// identity. Token is the bearer token the caller presented; it is only
// ever sent to a token endpoint as an RFC 8693 subject_token, never to a
// backend, and never logged.
type Caller struct {
	Principal string
	Claims    map[string]any
	Token     string
}

type callerKey struct{}

// WithCaller returns a copy of ctx carrying c. The caller is the one
// thing of a request's own that the backend side reads from the context,
// on purpose: every path that opens a backend connection for the request
// (routed calls, list fan-outs, probes, discovery, listens, a session's
// DELETEs) must present the same credentials, and none of them may lose
// it or swap it. Everything else a backend call takes is an argument
// (upstream.CallOptions, upstream.WithUserTokens).
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller WithCaller stored; ok is false when the
// request has none (a request made by the gateway itself).
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// Grant names how the gateway obtains a backend's token.
type Grant string

const (
	// GrantTokenExchange is RFC 8693: the caller's token is exchanged for
	// one meant for the backend, per caller.
	GrantTokenExchange Grant = "token_exchange"
	// GrantClientCredentials is RFC 6749 §4.4: one token per backend, the
	// gateway's own.
	GrantClientCredentials Grant = "client_credentials"
)

// Token type URNs (RFC 8693 §3).
const (
	TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeJWT         = "urn:ietf:params:oauth:token-type:jwt"
	// GrantTypeTokenExchange is the grant_type of an RFC 8693 request.
	GrantTypeTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
)

// Secret is a value that must never be printed: every formatting and
// logging path shows it redacted. The bytes are reached with Reveal.
type Secret string

// String, GoString and LogValue hide the value from fmt and slog.
func (Secret) String() string               { return "[redacted]" }
func (Secret) GoString() string             { return `"[redacted]"` }
func (Secret) LogValue() slog.Value         { return slog.StringValue("[redacted]") }
func (Secret) MarshalText() ([]byte, error) { return []byte("[redacted]"), nil }

// Reveal returns the secret itself, for the one place that sends it.
func (s Secret) Reveal() string { return string(s) }

// Settings are one backend's outbound credentials as config validated
// them: plain data (reload compares it with reflect.DeepEqual); the live
// token source with its cache is built from it by NewSource.
type Settings struct {
	Grant        Grant
	TokenURL     string
	ClientID     string
	ClientSecret Secret // from the environment variable SecretEnv
	SecretEnv    string
	Audience     string   // token_exchange: the audience parameter
	Resource     string   // token_exchange: the resource parameter (RFC 8707)
	Scopes       []string // the scope parameter, space-joined
	// SubjectTokenType is the URN of the caller's token (token_exchange):
	// TokenTypeAccessToken (default) or TokenTypeJWT.
	SubjectTokenType string
	// Timeout bounds one token request (default 10s).
	Timeout time.Duration
	// MaxEntries bounds the cached tokens (per principal for
	// token_exchange; default 10000).
	MaxEntries int
	// UserOAuth is the user_oauth grant's authorization server
	// (user_oauth.go); nil for the other grants.
	UserOAuth *UserOAuth
}

// PerCaller reports whether the credentials depend on the caller.
func (s *Settings) PerCaller() bool {
	return s != nil && (s.Grant == GrantTokenExchange || s.Grant == GrantUserOAuth)
}
