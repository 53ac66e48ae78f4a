package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mcpgw/gateway/router/usertokens"
	"github.com/mcpgw/gateway/store"
)

// Every record the server keeps is JSON sealed under the user_tokens key
// (purpose: its kind, binding: its id), so a record copied under another
// id, or read as another kind, does not open, and a store dump holds
// nothing usable. Records that a bearer value finds (a code) are named
// by a keyed digest of it.

// Kinds of records.
const (
	kindClient  = "client"
	kindRequest = "authreq"
	kindCode    = "code"
	kindUsed    = "codeused"
	kindConsent = "consent"
	kindGrant   = "grant"
	kindKeys    = "keys"
	kindOnce    = "once"
)

// records are the server's sealed records in the store: what every flow
// keeps between its steps, apart from the endpoints that take the steps.
type records struct {
	store  store.OAuthRecords
	sealer *usertokens.Sealer
}

// digest names a bearer value (a code, a client secret) in the store: a
// keyed SHA-256, so a store dump does not hold the value.
func (r *records) digest(label, v string) string { return r.sealer.Digest("as-"+label, v) }

// errNotFound: no such record (never stored, expired, deleted, or sealed
// under another key).
var errNotFound = errors.New("not found")

func (r *records) seal(kind, id string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return r.sealer.Seal("as-"+kind, id, b), nil
}

func (r *records) put(ctx context.Context, kind, id string, v any, ttl time.Duration) error {
	blob, err := r.seal(kind, id, v)
	if err != nil {
		return err
	}
	return r.store.PutOAuthRecord(ctx, kind, id, blob, ttl)
}

// get reads record kind/id into v and returns its sealed blob (for a
// later swap); errNotFound when there is none that opens.
func (r *records) get(ctx context.Context, kind, id string, v any) ([]byte, error) {
	blob, ok, err := r.store.OAuthRecord(ctx, kind, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errNotFound
	}
	return blob, r.open(kind, id, blob, v)
}

func (r *records) open(kind, id string, blob []byte, v any) error {
	plain, err := r.sealer.Open("as-"+kind, id, blob)
	if err != nil || json.Unmarshal(plain, v) != nil {
		return errNotFound
	}
	return nil
}

// take reads and deletes record kind/id at once.
func (r *records) take(ctx context.Context, kind, id string, v any) error {
	blob, ok, err := r.store.TakeOAuthRecord(ctx, kind, id)
	if err != nil {
		return err
	}
	if !ok {
		return errNotFound
	}
	return r.open(kind, id, blob, v)
}

// once reports whether this is the first use of id (for ttl).
func (r *records) once(ctx context.Context, id string, ttl time.Duration) (bool, error) {
	return r.store.SwapOAuthRecord(ctx, kindOnce, id, nil, []byte{1}, ttl)
}

// authRequestLifeLeft is the TTL left to a request in flight.
func authRequestLifeLeft(a *authRequest) time.Duration {
	return max(time.Until(a.Exp), time.Second)
}
