package sealed

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A multi-round-trip request (protocol 2026-07-28) answers input_required
// with an opaque requestState that the client echoes on its retry, which
// may reach any instance. The gateway never hands a client a backend's
// state as is: it wraps it in a request state of its own, signed with a key
// every instance shares (Key), that binds it to
//
//   - the backend that issued it, so the retry reaches that backend with
//     its own state, whatever routing would say;
//   - the caller (a digest of the principal), so another caller cannot
//     replay it;
//   - a lifetime, so an old state cannot be replayed forever;
//   - the request: a digest of the virtual host, the method and the
//     published name or URI, so a state cannot be moved to another call.
//
// A tampered, expired, foreign or misplaced request state is
// ErrBadRequestState, never another state's contents.
//
// Wire form: base64url(JSON body) "." base64url(HMAC-SHA256(key, ...)).

// stateVersion is mixed into the MAC so that other signed tokens (cursors)
// can never be taken for a request state, nor the reverse.
const stateVersion = "mcpgw-request-state-v1"

// RequestState is what a gateway request state carries.
type RequestState struct {
	Backend   string `json:"b"`
	Principal string `json:"p"` // PrincipalTag
	Expires   int64  `json:"e"` // Unix milliseconds
	Request   string `json:"r"` // requestDigest
	State     string `json:"s,omitempty"`
	// Park and Round name a call the gateway holds open on a 2025-era
	// backend that asked the client something (router parking.go: the
	// hidden task that runs it) and the round asked; State is then empty:
	// the backend has none.
	Park  string `json:"k,omitempty"`
	Round int    `json:"n,omitempty"`
	// Task names a task the gateway runs whose tool asked its first
	// question before the task was handed out (input_before_task; router
	// tasks_run.go): the retry answers it and gets the task.
	Task string `json:"t,omitempty"`
}

// Binding is what a request state is bound to besides its backend: the
// virtual host, the caller, the method and the published name or URI.
type Binding struct {
	VHost, Principal, Method, Target string
}

var (
	// ErrBadRequestState is every failure to open a request state.
	ErrBadRequestState = errors.New("invalid requestState")
	// ErrKeyUnavailable wraps a failure to read the signing key from the
	// store: the request may succeed once the store answers again.
	ErrKeyUnavailable = errors.New("signing key unavailable")
)

// States seals and opens request states with one shared key.
type States struct {
	key *Key
	ttl time.Duration
	now func() time.Time
}

// NewStates seals request states under key that live ttl.
func NewStates(key *Key, ttl time.Duration) *States {
	return &States{key: key, ttl: ttl, now: time.Now}
}

// Seal signs st, bound to b and to a lifetime.
func (s *States) Seal(ctx context.Context, b Binding, st RequestState) (string, error) {
	key, err := s.key.Sign(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: request-state key: %w", ErrKeyUnavailable, err)
	}
	st.Principal = PrincipalTag(b.Principal)
	st.Expires = s.now().Add(s.ttl).UnixMilli()
	st.Request = requestDigest(b)
	return signState(key, st)
}

func signState(key []byte, st RequestState) (string, error) {
	payload, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(stateMAC(key, p)), nil
}

// Open verifies a client's token and its bindings: ErrBadRequestState for
// anything that does not check out, an error wrapping ErrKeyUnavailable
// when the key could not be read.
func (s *States) Open(ctx context.Context, b Binding, token string) (*RequestState, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok || p == "" || sig == "" {
		return nil, ErrBadRequestState
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return nil, ErrBadRequestState
	}
	valid, err := s.key.Verify(ctx, func(key []byte) bool { return hmac.Equal(got, stateMAC(key, p)) })
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: request-state key: %w", ErrKeyUnavailable, err)
	case !valid:
		return nil, ErrBadRequestState
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return nil, ErrBadRequestState
	}
	var st RequestState
	if json.Unmarshal(payload, &st) != nil || st.Backend == "" {
		return nil, ErrBadRequestState
	}
	switch {
	case st.Principal != PrincipalTag(b.Principal),
		st.Request != requestDigest(b),
		s.now().UnixMilli() > st.Expires:
		return nil, ErrBadRequestState
	}
	return &st, nil
}

// requestDigest binds a state to one request: its vhost, method and target.
func requestDigest(b Binding) string {
	sum := sha256.Sum256([]byte(b.VHost + "\x00" + b.Method + "\x00" + b.Target))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

func stateMAC(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(stateVersion))
	m.Write([]byte{0})
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// DerivedSecret derives the secret of one kind of token from a configured
// one, so one configured secret signs cursors and request states without
// either being usable as the other.
func DerivedSecret(secret []byte, name string) []byte {
	if len(secret) == 0 {
		return nil
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("mcpgw-derived-key\x00" + name))
	return m.Sum(nil)
}
