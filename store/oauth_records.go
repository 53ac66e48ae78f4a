package store

import (
	"context"
	"fmt"
	"time"
)

// OAuthRecords keep what the gateway's own authorization server
// (handler/authserver) shares between instances: registered clients,
// authorization requests in flight, codes, users' consents, grants
// (refresh token families) and its signing keys. Each record is one
// opaque blob under a kind and an id, with a TTL; callers seal every
// blob that holds anything secret before it reaches the store, and name
// records that hold a bearer value by a digest of it, so a store dump
// reveals nothing usable.
type OAuthRecords interface {
	// PutOAuthRecord stores blob as record kind/id for ttl, replacing
	// any.
	PutOAuthRecord(ctx context.Context, kind, id string, blob []byte, ttl time.Duration) error
	// OAuthRecord returns record kind/id; ok is false when there is none
	// (never stored, deleted, expired).
	OAuthRecord(ctx context.Context, kind, id string) (blob []byte, ok bool, err error)
	// TakeOAuthRecord returns record kind/id and deletes it, at once: of
	// concurrent takers only one gets it (an authorization code is
	// exchanged once, whichever instance sees it).
	TakeOAuthRecord(ctx context.Context, kind, id string) (blob []byte, ok bool, err error)
	// SwapOAuthRecord replaces record kind/id with blob for ttl only if
	// it still holds old (old nil: only if there is none), and reports
	// whether it did: a refresh token rotates once, so a token presented
	// twice is seen.
	SwapOAuthRecord(ctx context.Context, kind, id string, old, blob []byte, ttl time.Duration) (ok bool, err error)
	// DeleteOAuthRecord deletes record kind/id; none is no error.
	DeleteOAuthRecord(ctx context.Context, kind, id string) error
}

// Bounds of OAuth records, so a caller cannot grow keys or values.
const (
	maxOAuthName = 300
	maxOAuthBlob = 64 << 10
)

func checkOAuthRecord(kind, id string, blob []byte, needBlob bool) error {
	if kind == "" || id == "" || len(kind)+len(id) > maxOAuthName {
		return fmt.Errorf("store: an OAuth record's kind and id must be 1 to %d bytes", maxOAuthName)
	}
	if needBlob && (len(blob) == 0 || len(blob) > maxOAuthBlob) {
		return fmt.Errorf("store: an OAuth record must be 1 to %d bytes", maxOAuthBlob)
	}
	return nil
}
