// Package usertokens keeps users' OAuth tokens at third-party backends
// (credentials.user_oauth): sealed with AES-256-GCM under the
// user_tokens key before they reach the store, read and refreshed per
// request (a refresh is done by one instance at a time, fleet-wide), and
// the sealed connect links and flow states the sign-in pages
// (handler/connect) pass through the browser. Nothing lives in process
// memory but a cache of the providers' metadata.
package usertokens

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/mcpgw/gateway/internal/seal"
)

// Sealer seals and opens blobs with AES-256-GCM. Every blob's additional
// data is its purpose (what it is: a token, a link, a flow state), the
// key's id and a binding (for a token: its owner and name), so a blob
// can be opened only as what, and where, it was sealed: a token copied
// under another user's key, or a flow state presented as a link, fails.
type Sealer struct {
	box   *seal.Box
	keyID string
	mac   []byte // derives owner digests, never the sealing key itself
}

// NewSealer returns the sealer of a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("usertokens: the key must be 32 bytes, not %d", len(key))
	}
	box, err := seal.New(key, derivePrefix+"seal")
	if err != nil {
		return nil, err
	}
	return &Sealer{box: box, keyID: hex.EncodeToString(derive(key, "key-id")[:8]), mac: derive(key, "owner")}, nil
}

// derivePrefix labels every key derived from the user_tokens key.
const derivePrefix = "mcpgw user_tokens "

// derive is HMAC-SHA256(key, derivePrefix+label): one key per use, none
// of them the configured key (the sealing key is internal/seal's, the
// same derivation).
func derive(key []byte, label string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(derivePrefix + label))
	return m.Sum(nil)
}

// KeyID names the key (no secret: a digest).
func (s *Sealer) KeyID() string { return s.keyID }

func (s *Sealer) ad(purpose, binding string) []byte {
	return []byte("mcpgw/" + purpose + "/" + s.keyID + "/" + binding)
}

// Seal returns nonce||ciphertext of plain.
func (s *Sealer) Seal(purpose, binding string, plain []byte) []byte {
	return s.box.Seal(plain, s.ad(purpose, binding))
}

// errSealed is every failure to open: tampered, another purpose or
// binding, another key, truncated. One error, so no oracle.
var errSealed = errors.New("usertokens: sealed value refused")

// Open opens what Seal sealed with the same purpose and binding.
func (s *Sealer) Open(purpose, binding string, blob []byte) ([]byte, error) {
	plain, ok := s.box.Open(blob, s.ad(purpose, binding))
	if !ok {
		return nil, errSealed
	}
	return plain, nil
}

// SealString and OpenString are Seal and Open in base64url, for URLs
// and cookies.
func (s *Sealer) SealString(purpose, binding string, plain []byte) string {
	return base64.RawURLEncoding.EncodeToString(s.Seal(purpose, binding, plain))
}

func (s *Sealer) OpenString(purpose, binding, v string) ([]byte, error) {
	if len(v) > 4096 {
		return nil, errSealed
	}
	blob, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return nil, errSealed
	}
	return s.Open(purpose, binding, blob)
}

// Owner is the store's name for a principal's tokens: a keyed digest, so
// the store names no user and a digest cannot be computed without the key.
func (s *Sealer) Owner(principal string) string {
	m := hmac.New(sha256.New, s.mac)
	m.Write([]byte(principal))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:24])
}

// Digest is a keyed digest of v (a browser cookie bound into a state).
func (s *Sealer) Digest(label, v string) string {
	m := hmac.New(sha256.New, s.mac)
	m.Write([]byte(label + "\x00" + v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:24])
}

// RandomID is 128 random bits in base64url.
func RandomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
