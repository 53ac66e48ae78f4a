package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"time"
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

// errNotFound: no such record (never stored, expired, deleted, or sealed
// under another key).
var errNotFound = errors.New("not found")

func (s *Server) seal(kind, id string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return s.o.Sealer.Seal("as-"+kind, id, b), nil
}

func (s *Server) put(ctx context.Context, kind, id string, v any, ttl time.Duration) error {
	blob, err := s.seal(kind, id, v)
	if err != nil {
		return err
	}
	return s.o.Store.PutOAuthRecord(ctx, kind, id, blob, ttl)
}

// get reads record kind/id into v and returns its sealed blob (for a
// later swap); errNotFound when there is none that opens.
func (s *Server) get(ctx context.Context, kind, id string, v any) ([]byte, error) {
	blob, ok, err := s.o.Store.OAuthRecord(ctx, kind, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errNotFound
	}
	return blob, s.open(kind, id, blob, v)
}

func (s *Server) open(kind, id string, blob []byte, v any) error {
	plain, err := s.o.Sealer.Open("as-"+kind, id, blob)
	if err != nil || json.Unmarshal(plain, v) != nil {
		return errNotFound
	}
	return nil
}

// take reads and deletes record kind/id at once.
func (s *Server) take(ctx context.Context, kind, id string, v any) error {
	blob, ok, err := s.o.Store.TakeOAuthRecord(ctx, kind, id)
	if err != nil {
		return err
	}
	if !ok {
		return errNotFound
	}
	return s.open(kind, id, blob, v)
}

// once reports whether this is the first use of id (for ttl).
func (s *Server) once(ctx context.Context, id string, ttl time.Duration) (bool, error) {
	return s.o.Store.SwapOAuthRecord(ctx, kindOnce, id, nil, []byte{1}, ttl)
}

// authRequestLifeLeft is the TTL left to a request in flight.
func authRequestLifeLeft(a *authRequest) time.Duration {
	return max(time.Until(a.Exp), time.Second)
}
