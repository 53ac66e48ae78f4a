package authserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/sync/singleflight"

	"github.com/mcpgw/gateway/router/usertokens"
)

// The signing keys: ES256 keys every instance shares through the store
// (one sealed record), the newest signing, the older ones kept for
// verification until every token they signed has expired. The first
// instance that finds the newest key too old adds a new one with a
// compare-and-swap; the others adopt what won. Each instance caches the
// set for a minute and reads it again at once (at most once a second)
// for a kid it does not know, so a rotation on another instance is seen
// without waiting.

const (
	keyRotateEvery = 7 * 24 * time.Hour
	keyCacheFor    = time.Minute
	keyRecordID    = "signing"
	// keyMinRefetch bounds the store reads an unknown kid causes.
	keyMinRefetch = time.Second
)

// keyRecord is the sealed record: every key, newest last.
type keyRecord struct {
	Keys []storedKey `json:"k"`
}

type storedKey struct {
	ID      string    `json:"i"`
	DER     []byte    `json:"d"` // PKCS#8
	Created time.Time `json:"c"`
}

type signingKey struct {
	id      string
	priv    *ecdsa.PrivateKey
	created time.Time
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.ES256 }
func (k *signingKey) Key() any                                    { return k.priv }
func (k *signingKey) ID() string                                  { return k.id }

// publicKey is one key of the JWK Set.
type publicKey struct{ k *signingKey }

func (p publicKey) ID() string                         { return p.k.id }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return jose.ES256 }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.k.priv.PublicKey }

type keyring struct {
	st     Store
	sealer *usertokens.Sealer
	// keep is how long a retired key verifies: the longest token life.
	keep time.Duration

	flight singleflight.Group
	mu     sync.Mutex
	keys   []*signingKey // newest last
	read   time.Time     // when keys were read from the store
}

func newKeyring(st Store, sealer *usertokens.Sealer, tokenTTL time.Duration) *keyring {
	return &keyring{st: st, sealer: sealer, keep: tokenTTL + time.Hour}
}

// current returns the keys, read from the store when the cache is older
// than maxAge, rotating when the newest is due.
func (k *keyring) current(ctx context.Context, maxAge time.Duration) ([]*signingKey, error) {
	k.mu.Lock()
	keys, read := k.keys, k.read
	k.mu.Unlock()
	if keys != nil && time.Since(read) < maxAge && time.Since(keys[len(keys)-1].created) < keyRotateEvery {
		return keys, nil
	}
	v, err, _ := k.flight.Do("load", func() (any, error) { return k.load(context.WithoutCancel(ctx)) })
	if err != nil {
		if keys != nil {
			return keys, nil // the store is away: keep signing with what is known
		}
		return nil, err
	}
	return v.([]*signingKey), nil
}

// load reads the record and rotates it when its newest key is due (or
// it has none).
func (k *keyring) load(ctx context.Context) ([]*signingKey, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for range 3 {
		blob, ok, err := k.st.OAuthRecord(ctx, kindKeys, keyRecordID)
		if err != nil {
			return nil, err
		}
		var rec keyRecord
		if ok {
			// Keys sealed under another user_tokens key (it was rotated)
			// are unusable: they are replaced below, and the tokens they
			// signed are refused from now on.
			if plain, err := k.sealer.Open("as-"+kindKeys, keyRecordID, blob); err != nil || json.Unmarshal(plain, &rec) != nil {
				rec = keyRecord{}
			}
		}
		now := time.Now()
		if n := len(rec.Keys); n > 0 && now.Sub(rec.Keys[n-1].Created) < keyRotateEvery {
			return k.adopt(rec)
		}
		next, err := k.rotated(rec, now)
		if err != nil {
			return nil, err
		}
		var old []byte
		if ok {
			old = blob
		}
		// Won or lost to another instance's rotation, the next round
		// reads what the store holds now and adopts it.
		if _, err := k.st.SwapOAuthRecord(ctx, kindKeys, keyRecordID, old, next, keyRotateEvery+k.keep+24*time.Hour); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("authorization server: the signing keys keep changing")
}

// rotated is rec with a new key and without the keys no token can need.
func (k *keyring) rotated(rec keyRecord, now time.Time) ([]byte, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	var keep []storedKey
	for i, sk := range rec.Keys {
		// A key retired (the next one created) longer ago than the
		// longest token life verifies nothing any more.
		if i+1 < len(rec.Keys) && now.Sub(rec.Keys[i+1].Created) > k.keep {
			continue
		}
		keep = append(keep, sk)
	}
	if n := len(keep); n > 0 && now.Sub(keep[n-1].Created) > keyRotateEvery+k.keep {
		keep = nil // the newest is itself past use
	}
	rec.Keys = append(keep, storedKey{ID: randomID(), DER: der, Created: now})
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	return k.sealer.Seal("as-"+kindKeys, keyRecordID, b), nil
}

func (k *keyring) adopt(rec keyRecord) ([]*signingKey, error) {
	keys := make([]*signingKey, 0, len(rec.Keys))
	for _, sk := range rec.Keys {
		p, err := x509.ParsePKCS8PrivateKey(sk.DER)
		priv, ok := p.(*ecdsa.PrivateKey)
		if err != nil || !ok {
			return nil, fmt.Errorf("authorization server: signing key %s does not parse", sk.ID)
		}
		keys = append(keys, &signingKey{id: sk.ID, priv: priv, created: sk.Created})
	}
	k.mu.Lock()
	k.keys, k.read = keys, time.Now()
	k.mu.Unlock()
	return keys, nil
}

// signing is the newest key.
func (k *keyring) signing(ctx context.Context) (*signingKey, error) {
	keys, err := k.current(ctx, keyCacheFor)
	if err != nil {
		return nil, err
	}
	return keys[len(keys)-1], nil
}

// set is every key that still verifies, for the JWK Set.
func (k *keyring) set(ctx context.Context) ([]op.Key, error) {
	keys, err := k.current(ctx, keyCacheFor)
	if err != nil {
		return nil, err
	}
	out := make([]op.Key, 0, len(keys))
	for _, key := range keys {
		out = append(out, publicKey{key})
	}
	return out, nil
}

// public returns the public key named kid: from the cache, or from the
// store at once when the cache does not hold it (at most once a second).
func (k *keyring) public(ctx context.Context, kid string) (any, error) {
	find := func(keys []*signingKey) any {
		if i := slices.IndexFunc(keys, func(s *signingKey) bool { return s.id == kid }); i >= 0 {
			return &keys[i].priv.PublicKey
		}
		return nil
	}
	keys, err := k.current(ctx, keyCacheFor)
	if err != nil {
		return nil, err
	}
	if pk := find(keys); pk != nil {
		return pk, nil
	}
	if keys, err = k.current(ctx, keyMinRefetch); err != nil {
		return nil, err
	}
	if pk := find(keys); pk != nil {
		return pk, nil
	}
	return nil, errors.New("no key of the gateway's authorization server has that kid")
}
