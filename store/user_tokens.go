package store

import (
	"context"
	"fmt"
	"time"
)

// UserTokens keeps each user's OAuth tokens at third-party backends
// (credentials.user_oauth) and the little state the sign-in flow shares
// between instances. The store never sees a token in clear: callers seal
// every blob (AEAD under the user_tokens key, router/usertokens/seal.go)
// before it reaches Put, so a store dump reveals nothing usable.
//
// Tokens are grouped by owner (a digest of the principal, never the
// principal itself) and named inside the group (vhost and backend), so a
// user's connections page lists and deletes its own and nobody else's.
type UserTokens interface {
	// PutUserToken stores blob as owner's token named name for ttl (the
	// refresh token's life, or the access token's when there is none).
	PutUserToken(ctx context.Context, owner, name string, blob []byte, ttl time.Duration) error
	// UserToken returns owner's token named name; ok is false when there
	// is none (never stored, deleted, expired).
	UserToken(ctx context.Context, owner, name string) (blob []byte, ok bool, err error)
	// UserTokenNames lists the names of owner's live tokens, sorted.
	UserTokenNames(ctx context.Context, owner string) ([]string, error)
	// DeleteUserToken deletes owner's token named name; none is no error.
	DeleteUserToken(ctx context.Context, owner, name string) error

	// UseOnce records id as used for ttl and reports whether this call
	// was the first: a connect link or a flow state is honoured once,
	// by whichever instance sees it first.
	UseOnce(ctx context.Context, id string, ttl time.Duration) (first bool, err error)

	// LockUserToken takes the lock name for ttl unless another holder has
	// it: the one instance that refreshes a token, so a refresh token is
	// presented once across the fleet. holder is the caller's random id;
	// the lock lapses after ttl if its holder dies.
	LockUserToken(ctx context.Context, name, holder string, ttl time.Duration) (ok bool, err error)
	// UnlockUserToken gives the lock back if holder still has it.
	UnlockUserToken(ctx context.Context, name, holder string) error
}

// maxUserTokenName bounds every owner, name, id and holder, so a caller
// cannot grow keys; maxUserTokenBlob bounds a sealed blob.
const (
	maxUserTokenName = 300
	maxUserTokenBlob = 64 << 10
)

func checkUserTokenNames(names ...string) error {
	for _, n := range names {
		if n == "" || len(n) > maxUserTokenName {
			return fmt.Errorf("store: user token names must be 1 to %d bytes", maxUserTokenName)
		}
	}
	return nil
}
