package router

import (
	"context"
	"time"
)

// cursorKeyTTL bounds how long an instance trusts its cached copy of the
// shared cursor key before reading it again (which also refreshes the key's
// TTL in the store, so it never expires while any instance is running).
const cursorKeyTTL = 10 * time.Minute

// cursorKey returns the key that signs pagination cursors: the configured
// secret, or the one every instance shares through the store.
func (r *Router) cursorKey(ctx context.Context) ([]byte, error) {
	if len(r.opts.CursorSecret) > 0 {
		return r.opts.CursorSecret, nil
	}
	r.keyMu.Lock()
	defer r.keyMu.Unlock()
	if r.key != nil && time.Now().Before(r.keyUntil) {
		return r.key, nil
	}
	k, err := r.opts.Store.SigningKey(ctx, "cursor", nil)
	if err != nil {
		return nil, err
	}
	r.key, r.keyUntil = k, time.Now().Add(cursorKeyTTL)
	return k, nil
}
