package taskid_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/taskid"
)

var (
	key      = bytes.Repeat([]byte{7}, 32)
	otherKey = bytes.Repeat([]byte{8}, 32)
	now      = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	alice    = taskid.PrincipalDigest("alice")
)

func claims() taskid.Claims {
	return taskid.Claims{Kind: taskid.Backend, VHost: "demo", Backend: "fixture-backend", Principal: alice,
		TaskID: "786512e2-9e0d-44bd-8f29-789f320fe840", Expires: now.Add(time.Hour)}
}

func seal(t *testing.T, c taskid.Claims) string {
	t.Helper()
	tok, err := taskid.Seal(key, c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestRoundTripHidesTheClaims(t *testing.T) {
	for _, kind := range []taskid.Kind{taskid.Backend, taskid.Gateway} {
		c := claims()
		c.Kind = kind
		tok := seal(t, c)
		got, err := taskid.Open(key, tok, "demo", alice, now)
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind != kind || got.VHost != "demo" || got.Backend != "fixture-backend" || got.TaskID != c.TaskID || !got.Expires.Equal(c.Expires) {
			t.Fatalf("opened %+v, sealed %+v", got, c)
		}
		for _, secret := range []string{"fixture-backend", "demo", c.TaskID, alice} {
			if strings.Contains(tok, secret) {
				t.Errorf("token %q shows %q", tok, secret)
			}
		}
		if tok2 := seal(t, c); tok2 == tok {
			t.Error("two seals of the same claims are equal: no fresh nonce")
		}
		for _, r := range tok {
			if r <= ' ' || r > '~' {
				t.Fatalf("token %q is not visible ASCII (an Mcp-Name header value)", tok)
			}
		}
	}
}

func TestRefusals(t *testing.T) {
	tok := seal(t, claims())
	body := strings.TrimPrefix(tok, "mt1.")
	raw, _ := base64.RawURLEncoding.DecodeString(body)
	flipped := bytes.Clone(raw)
	flipped[len(flipped)/2] ^= 1
	for name, tc := range map[string]struct {
		token, vhost, principal string
		key                     []byte
		at                      time.Time
		want                    error
	}{
		"tampered":        {"mt1." + base64.RawURLEncoding.EncodeToString(flipped), "demo", alice, key, now, taskid.ErrInvalid},
		"truncated":       {tok[:len(tok)-4], "demo", alice, key, now, taskid.ErrInvalid},
		"other key":       {tok, "demo", alice, otherKey, now, taskid.ErrInvalid},
		"no prefix":       {body, "demo", alice, key, now, taskid.ErrInvalid},
		"empty":           {"", "demo", alice, key, now, taskid.ErrInvalid},
		"too long":        {tok + strings.Repeat("A", taskid.MaxLen), "demo", alice, key, now, taskid.ErrInvalid},
		"other principal": {tok, "demo", taskid.PrincipalDigest("mallory"), key, now, taskid.ErrForeign},
		"other vhost":     {tok, "other", alice, key, now, taskid.ErrForeign},
		"expired":         {tok, "demo", alice, key, now.Add(time.Hour), taskid.ErrExpired},
	} {
		if _, err := taskid.Open(tc.key, tc.token, tc.vhost, tc.principal, tc.at); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

func TestSealRefusesIncompleteClaimsAndShortKeys(t *testing.T) {
	for name, mutate := range map[string]func(*taskid.Claims){
		"no kind":      func(c *taskid.Claims) { c.Kind = "" },
		"no backend":   func(c *taskid.Claims) { c.Backend = "" },
		"no principal": func(c *taskid.Claims) { c.Principal = "" },
		"no task":      func(c *taskid.Claims) { c.TaskID = "" },
		"no expiry":    func(c *taskid.Claims) { c.Expires = time.Time{} },
		"long task id": func(c *taskid.Claims) { c.TaskID = strings.Repeat("x", 257) },
	} {
		c := claims()
		mutate(&c)
		if _, err := taskid.Seal(key, c); err == nil {
			t.Errorf("%s: sealed", name)
		}
	}
	if _, err := taskid.Seal(key[:16], claims()); err == nil {
		t.Error("a 16-byte key sealed")
	}
	if _, err := taskid.Open(key[:16], seal(t, claims()), "demo", alice, now); err == nil || errors.Is(err, taskid.ErrInvalid) {
		t.Errorf("a 16-byte key opened: %v, want a key error", err)
	}
	// The longest claims still fit in a token Open reads.
	c := claims()
	c.VHost, c.Backend, c.Principal, c.TaskID = strings.Repeat("v", 256), strings.Repeat("b", 256), strings.Repeat("p", 256), strings.Repeat("t", 256)
	if tok := seal(t, c); len(tok) > taskid.MaxLen {
		t.Fatalf("a token of the longest claims is %d bytes, over MaxLen %d", len(tok), taskid.MaxLen)
	}
}

func TestPrincipalDigestIsStableAndDistinct(t *testing.T) {
	if taskid.PrincipalDigest("alice") != alice || alice == taskid.PrincipalDigest("bob") || strings.Contains(alice, "alice") {
		t.Fatal("PrincipalDigest is not a stable, distinct digest")
	}
}

// FuzzTaskID opens arbitrary tokens: it never panics, and whatever opens
// is genuine (sealed by this key for this caller) and reseals to claims
// that open alike.
func FuzzTaskID(f *testing.F) {
	tok, err := taskid.Seal(key, claims())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tok)
	f.Add("mt1.")
	f.Add("mt1.AAAA")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		c, err := taskid.Open(key, token, "demo", alice, now)
		if err != nil {
			if !errors.Is(err, taskid.ErrInvalid) && !errors.Is(err, taskid.ErrForeign) && !errors.Is(err, taskid.ErrExpired) {
				t.Fatalf("unexpected error kind %v", err)
			}
			return
		}
		if c.VHost != "demo" || c.Principal != alice || !now.Before(c.Expires) {
			t.Fatalf("opened claims %+v for another caller or expired", c)
		}
		again, err := taskid.Open(key, seal(t, c), "demo", alice, now)
		if err != nil || again.TaskID != c.TaskID || again.Backend != c.Backend || again.Kind != c.Kind {
			t.Fatalf("resealed %+v opened as %+v, %v", c, again, err)
		}
	})
}
