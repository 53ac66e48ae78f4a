// Package seal is the one AEAD the gateway seals what it hands out with
// (pagination cursors, task ids, users' tokens and sign-in links):
// AES-256-GCM under a key derived for one purpose, HMAC-SHA256(secret,
// label), so one secret never seals two kinds of thing alike; a random
// nonce before the ciphertext; base64url where it travels as text. Each
// caller keeps its own wire format around it and its own additional data.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// Box seals and opens under one derived key. It is safe for concurrent
// use.
type Box struct{ aead cipher.AEAD }

// New is the box of secret (any length) for the purpose label.
func New(secret []byte, label string) (*Box, error) {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: a}, nil
}

// Seal returns nonce||ciphertext of plain, bound to ad.
func (b *Box) Seal(plain, ad []byte) []byte {
	n := b.aead.NonceSize()
	nonce := make([]byte, n, n+len(plain)+b.aead.Overhead())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	return b.aead.Seal(nonce, nonce, plain, ad)
}

// Open returns what Seal sealed with the same ad; ok is false for
// anything else (tampered, truncated, another key, purpose or ad).
func (b *Box) Open(blob, ad []byte) (plain []byte, ok bool) {
	n := b.aead.NonceSize()
	if len(blob) < n+b.aead.Overhead() {
		return nil, false
	}
	plain, err := b.aead.Open(nil, blob[:n], blob[n:], ad)
	return plain, err == nil
}

// SealString is Seal in base64url.
func (b *Box) SealString(plain, ad []byte) string {
	return base64.RawURLEncoding.EncodeToString(b.Seal(plain, ad))
}

// OpenString is Open of base64url text.
func (b *Box) OpenString(s string, ad []byte) ([]byte, bool) {
	blob, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	return b.Open(blob, ad)
}
