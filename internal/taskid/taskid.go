// Package taskid seals the task ids the gateway gives clients (SEP-2663
// Tasks). A client never sees a backend's own task id, nor the gateway's
// store key of a task it runs: it gets a token, sealed with a key every
// gateway instance shares, that carries
//
//   - the kind: a backend's task passed through, or a task the gateway runs;
//   - the virtual host and the backend key, so tasks/get, tasks/update and
//     tasks/cancel reach the backend that created the task, whatever
//     routing would say, and cannot be moved to another vhost;
//   - a digest of the principal, so another caller's token is refused;
//   - the task id itself (the backend's, or the gateway's own);
//   - an expiry (the task's TTL and then some), so an old token is dead.
//
// Wire form: "mt1." base64url(nonce || AES-256-GCM(JSON claims)) by
// internal/seal, the key derived from the given key with a label of its
// own (so a key shared with other tokens never seals these), the version
// as additional data. Sealing also hides the claims: a backend key or a
// vhost name the caller's access rules hide never shows. The token is
// visible ASCII, fit for an Mcp-Name header.
//
// The package imports nothing of the router: the router passes the key
// (its shared key) in, and tries each key it knows with Open.
package taskid

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpgw/gateway/internal/seal"
)

// Kind says who holds the task.
type Kind string

const (
	// Backend: the backend created the task (it implements the
	// extension); TaskID is its own id, passed to it as is.
	Backend Kind = "b"
	// Gateway: the gateway runs the task for a backend without the
	// extension; TaskID is the store's id of the task.
	Gateway Kind = "g"
)

// Claims are what a sealed task id carries.
type Claims struct {
	Kind    Kind   `json:"k"`
	VHost   string `json:"v"`
	Backend string `json:"b"`
	// Principal is a digest of the principal (PrincipalDigest), never the
	// principal itself.
	Principal string `json:"p"`
	TaskID    string `json:"t"`
	// Tool is the published name of the tool that created the task, so
	// the caller's access rules apply to the task as to the call.
	Tool    string    `json:"n,omitempty"`
	Expires time.Time `json:"-"`
	// ExpiresMs is Expires on the wire (Unix ms).
	ExpiresMs int64 `json:"e"`
}

// Errors of Open. Callers answer all of them alike (-32602, "unknown
// task"): no oracle tells a forged token from another caller's.
var (
	// ErrInvalid: not a token this key sealed (malformed, tampered, or
	// sealed with another key).
	ErrInvalid = errors.New("taskid: invalid task id")
	// ErrForeign: a genuine token of another principal or virtual host.
	ErrForeign = errors.New("taskid: task id of another caller")
	// ErrExpired: a genuine token past its expiry.
	ErrExpired = errors.New("taskid: task id expired")
)

const (
	prefix = "mt1."
	// version labels the key derivation and is the AEAD's additional data.
	version = "mcpgw-task-id-v1"
	// MaxLen bounds a token Open reads: longer input is refused unread.
	MaxLen = 2048
	// maxField bounds each string claim, so a sealed token stays under MaxLen.
	maxField = 256
	// MinKeyLen is the shortest key Seal and Open accept.
	MinKeyLen = 32
)

// PrincipalDigest is the principal's digest that task ids carry and the
// store files a gateway-run task under (store.Task.Owner): 128 bits of
// SHA-256, base64url.
func PrincipalDigest(principal string) string {
	sum := sha256.Sum256([]byte("mcpgw-task-owner\x00" + principal))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

func box(key []byte) (*seal.Box, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("taskid: key of %d bytes, want at least %d", len(key), MinKeyLen)
	}
	return seal.New(key, version)
}

// Seal returns the token for c under key.
func Seal(key []byte, c Claims) (string, error) {
	switch {
	case c.Kind != Backend && c.Kind != Gateway:
		return "", fmt.Errorf("taskid: kind %q", c.Kind)
	case c.VHost == "" || c.Backend == "" || c.Principal == "" || c.TaskID == "":
		return "", errors.New("taskid: vhost, backend, principal and task id are required")
	case len(c.VHost) > maxField || len(c.Backend) > maxField || len(c.Principal) > maxField || len(c.TaskID) > maxField || len(c.Tool) > maxField:
		return "", fmt.Errorf("taskid: a claim over %d bytes", maxField)
	case c.Expires.IsZero():
		return "", errors.New("taskid: no expiry")
	}
	b, err := box(key)
	if err != nil {
		return "", err
	}
	c.ExpiresMs = c.Expires.UnixMilli()
	plain, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return prefix + b.SealString(plain, []byte(version)), nil
}

// Open checks token under key and returns its claims when it is genuine,
// belongs to principal (a PrincipalDigest) on vhost, and has not expired
// at now. ErrInvalid, ErrForeign or ErrExpired otherwise; any other error
// is a bad key.
func Open(key []byte, token, vhost, principal string, now time.Time) (Claims, error) {
	b, err := box(key)
	if err != nil {
		return Claims{}, err
	}
	body, ok := strings.CutPrefix(token, prefix)
	if !ok || len(token) > MaxLen {
		return Claims{}, ErrInvalid
	}
	plain, ok := b.OpenString(body, []byte(version))
	if !ok {
		return Claims{}, ErrInvalid
	}
	var c Claims
	if json.Unmarshal(plain, &c) != nil || (c.Kind != Backend && c.Kind != Gateway) || c.TaskID == "" || c.Backend == "" {
		return Claims{}, ErrInvalid
	}
	c.Expires = time.UnixMilli(c.ExpiresMs)
	switch {
	case !hmac.Equal([]byte(c.Principal), []byte(principal)) || c.VHost != vhost:
		return Claims{}, ErrForeign
	case !now.Before(c.Expires):
		return Claims{}, ErrExpired
	}
	return c, nil
}
