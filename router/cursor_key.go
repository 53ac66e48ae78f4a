package router

import (
	"context"
	"fmt"

	"github.com/mcpgw/gateway/router/sealed"
)

// Pagination cursors are signed with cursor_secret_env, or else with a key
// shared through the store that every instance agrees on (sealed.Key).

// cursorKeyName names the cursor key in the store.
const cursorKeyName = "cursor"

// cursorKey returns the key to sign a new cursor with. An error wraps
// errStoreUnavailable: the store could not be read.
func (fd *federation) cursorKey(ctx context.Context) ([]byte, error) {
	key, err := fd.cursorKeys.Sign(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: cursor key: %w", errStoreUnavailable, err)
	}
	return key, nil
}

// openCursor verifies and decodes a client's cursor: sealed.ErrBadCursor when no
// key it may have been signed with accepts it, an error wrapping
// errStoreUnavailable when that took a store read that failed.
func (fd *federation) openCursor(ctx context.Context, token string) (*sealed.Cursor, error) {
	var st *sealed.Cursor
	ok, err := fd.cursorKeys.Verify(ctx, func(key []byte) bool {
		var err error
		st, err = sealed.OpenCursor(key, token)
		return err == nil
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: cursor key: %w", errStoreUnavailable, err)
	case !ok:
		return nil, sealed.ErrBadCursor
	}
	return st, nil
}
