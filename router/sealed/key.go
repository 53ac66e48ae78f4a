// Package sealed makes the tokens the gateway hands a client and takes
// back on any instance (federated pagination cursors, request
// states) and keeps the keys every instance signs them with. It knows
// nothing of routing: callers bind a token to what they choose (a vhost,
// a caller, a request) and get back only what they sealed.
package sealed

import (
	"bytes"
	"context"
	"slices"
	"sync"

	"github.com/mcpgw/gateway/store"
	"golang.org/x/sync/singleflight"
)

// Key is an HMAC key every instance signs with, so that a token
// (a pagination cursor; later other tokens) issued by one instance verifies
// on any other: a configured secret, or a key kept in the store.
//
// Instances must agree on the stored key at all times, also after Redis
// lost its data (a restart without persistence, a flush, a failover to an
// empty replica). Caching the key for minutes broke that: an instance
// restarted after the loss stored a new key while the others kept signing
// with their cached old one. So signing always uses the key the store holds
// now, at the cost of one round trip: Sign offers the newest key this
// instance knows as the candidate, so when the store has lost the key the
// first instance to sign again puts back the key it was signing with (a
// fresh instance, knowing none, offers a random one), and every other
// instance adopts whatever won.
//
// Verifying needs no round trip in the common case: the keys this instance
// has seen (the current one and a few earlier ones) are tried first, so
// tokens signed before a key change still verify where the old key is
// known. Only when none of them accepts a token is the store read again,
// once however many requests are waiting for it, and the token tried with
// the key it holds.
type Key struct {
	store store.SigningKeys
	name  string
	fixed []byte // a configured secret: used as is, the store is never asked

	reads singleflight.Group

	mu    sync.Mutex // guards known; never held across store I/O
	known [][]byte   // keys seen in the store, newest first
}

// maxKnownKeys is how many keys an instance keeps for verifying: the key
// changes only when the store loses it, so a few cover every change a
// token could have lived through.
const maxKnownKeys = 4

// NewKey is the key called name in st, or fixed (a configured secret)
// when it is not nil: then the store is never asked.
func NewKey(st store.SigningKeys, name string, fixed []byte) *Key {
	return &Key{store: st, name: name, fixed: fixed}
}

// Sign returns the key to sign with: the configured one, or the one
// the store holds now.
func (k *Key) Sign(ctx context.Context) ([]byte, error) {
	if k.fixed != nil {
		return k.fixed, nil
	}
	return k.read(ctx)
}

// Verify calls check with each key a token may have been signed with until
// it returns true, and reports whether one did. err is set only when the
// store had to be read and could not be.
func (k *Key) Verify(ctx context.Context, check func(key []byte) bool) (bool, error) {
	if k.fixed != nil {
		return check(k.fixed), nil
	}
	k.mu.Lock()
	tried := slices.Clone(k.known)
	k.mu.Unlock()
	for _, key := range tried {
		if check(key) {
			return true, nil
		}
	}
	key, err := k.read(ctx)
	if err != nil {
		return false, err
	}
	if slices.ContainsFunc(tried, func(t []byte) bool { return bytes.Equal(t, key) }) {
		return false, nil // the store's key was tried already
	}
	return check(key), nil
}

// read fetches the store's key, offering the newest known one should the
// store hold none, and records it as the newest known key. Concurrent
// calls share one store read, which runs detached from any one caller's
// context (the store's own timeout bounds it): a caller that gives up does
// not fail the others.
func (k *Key) read(ctx context.Context) ([]byte, error) {
	ch := k.reads.DoChan("", func() (any, error) {
		k.mu.Lock()
		var candidate []byte
		if len(k.known) > 0 {
			candidate = k.known[0]
		}
		k.mu.Unlock()
		key, err := k.store.SigningKey(context.WithoutCancel(ctx), k.name, candidate)
		if err != nil {
			return nil, err
		}
		k.remember(key)
		return key, nil
	})
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.([]byte), nil
	}
}

// remember makes key the newest known key.
func (k *Key) remember(key []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.known) > 0 && bytes.Equal(k.known[0], key) {
		return
	}
	k.known = slices.DeleteFunc(k.known, func(old []byte) bool { return bytes.Equal(old, key) })
	k.known = slices.Insert(k.known, 0, key)
	if len(k.known) > maxKnownKeys {
		k.known = k.known[:maxKnownKeys]
	}
}
