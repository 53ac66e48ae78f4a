package auth

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/sync/singleflight"

	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/internal/wire"
)

// Some providers issue opaque access tokens (Ory Hydra's ory_at_...,
// Okta's and Auth0's for some audiences): only the issuer can say whether
// one is valid, with RFC 7662 token introspection. An active answer is
// trusted for at most the configured cache time and never past the
// token's exp, so a revocation is seen within that bound. The cache is
// keyed by a hash of the token, never the token itself; the gateway's
// client secret goes in the Authorization header of the request only, and
// neither reaches a log or an error.

// maxIntrospectionEntries bounds the answers held at once;
// maxIntrospecting the requests to the endpoint at once (a flood of
// made-up tokens waits for room, within the request's bound, then is a
// 401), and concurrent requests with one token make one.
const (
	maxIntrospectionEntries = 10000
	maxIntrospecting        = 16
)

type introspector struct {
	s   *config.JWTSettings
	in  *config.Introspection
	hc  *http.Client
	log *slog.Logger
	// wait bounds one introspection request.
	wait time.Duration
	now  func() time.Time

	mu     sync.Mutex
	cache  map[[sha256.Size]byte]introspected
	flight singleflight.Group
	sem    chan struct{}
}

type introspected struct {
	sub    string
	claims Claims
	until  time.Time
}

func newIntrospector(s *config.JWTSettings, o *options) *introspector {
	return &introspector{s: s, in: s.Introspection, hc: o.noRedirectClient, log: o.logger, wait: o.timing.keyWait,
		now: time.Now, cache: map[[sha256.Size]byte]introspected{}, sem: make(chan struct{}, maxIntrospecting)}
}

// verify asks the issuer about raw (or remembers its answer) and returns
// the subject and the answer's claims.
func (in *introspector) verify(ctx context.Context, raw string) (string, Claims, error) {
	key := sha256.Sum256([]byte(raw))
	now := in.now()
	in.mu.Lock()
	e, ok := in.cache[key]
	if ok && !now.Before(e.until) {
		delete(in.cache, key)
		ok = false
	}
	in.mu.Unlock()
	if ok {
		return in.forResource(ctx, e)
	}
	res, err, _ := in.flight.Do(string(key[:]), func() (any, error) {
		claims, err := in.ask(ctx, raw)
		if err != nil {
			return nil, err
		}
		sub, err := in.check(claims, now)
		if err != nil {
			return nil, err
		}
		e := introspected{sub: sub, claims: claims, until: now.Add(in.in.Cache)}
		if exp, ok := claims["exp"].(float64); ok && time.Unix(int64(exp), 0).Before(e.until) {
			e.until = time.Unix(int64(exp), 0)
		}
		if e.until.After(now) {
			in.store(key, e, now)
		}
		return e, nil
	})
	if err != nil {
		return "", nil, err
	}
	return in.forResource(ctx, res.(introspected))
}

// forResource checks an answer's audience for the resource being called:
// per request, since an answer is cached for every vhost alike.
func (in *introspector) forResource(ctx context.Context, e introspected) (string, Claims, error) {
	if !audienceOf(in.s).accepts(ctx, e.claims[cmp.Or(in.s.AudienceClaim, "aud")]) {
		claim := cmp.Or(in.s.AudienceClaim, "aud")
		return "", nil, refusal(jwt.ErrTokenInvalidAudience, "%s", audienceDetail(claim, e.claims[claim], audienceOf(in.s), ResourceFromContext(ctx)))
	}
	return e.sub, e.claims, nil
}

// ask posts the token to the endpoint and returns the answer's members.
func (in *introspector) ask(ctx context.Context, raw string) (Claims, error) {
	ctx, cancel := context.WithTimeout(ctx, in.wait)
	defer cancel()
	select {
	case in.sem <- struct{}{}:
		defer func() { <-in.sem }()
	case <-ctx.Done(): // a flood: refused without a log line each
		return nil, refusal(errIntrospectionBusy, "token introspection at issuer %s busy: too many at once", wire.Quote(in.s.Issuer))
	}
	form := url.Values{"token": {raw}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.in.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, in.failed(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if in.in.ClientID != "" {
		// RFC 6749 §2.3.1: both form-encoded, then HTTP Basic.
		req.SetBasicAuth(url.QueryEscape(in.in.ClientID), url.QueryEscape(in.in.ClientSecret.Reveal()))
	}
	resp, err := in.hc.Do(req)
	if err != nil {
		return nil, in.failed(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, in.failed(fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	var claims Claims
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadataBytes)).Decode(&claims); err != nil || claims == nil {
		return nil, in.failed(fmt.Errorf("answer is not a JSON object"))
	}
	return claims, nil
}

// failed logs an endpoint failure (err never holds the token or the
// secret: neither is in a URL) and returns the caller's 401.
func (in *introspector) failed(err error) error {
	in.log.Warn("auth: token introspection failed", "issuer", in.s.Issuer, "url", in.in.URL, "error", err.Error())
	return refusal(errIntrospection, "token introspection at issuer %s failed: %s", wire.Quote(in.s.Issuer), err.Error())
}

// check applies the issuer's rules to an introspection answer: active,
// not expired, this issuer, a usable subject (the audience is checked
// per request: forResource).
func (in *introspector) check(c Claims, now time.Time) (string, error) {
	if active, _ := c["active"].(bool); !active {
		return "", refusal(errInactive, "issuer %s says the token is not active (revoked, expired or not its own)", wire.Quote(in.s.Issuer))
	}
	delete(c, "active")
	if exp, ok := c["exp"].(float64); ok && now.After(time.Unix(int64(exp), 0).Add(in.s.Leeway)) {
		return "", refusal(jwt.ErrTokenExpired, "expired at %s (leeway %s)", timeText(time.Unix(int64(exp), 0)), in.s.Leeway)
	}
	if iss, ok := c["iss"]; ok {
		if s, _ := iss.(string); s != in.s.Issuer {
			return "", refusal(jwt.ErrTokenInvalidIssuer, "%s", issuerDetail(s, []string{in.s.Issuer}))
		}
	} else {
		c["iss"] = in.s.Issuer // access rules see claims.iss as for a JWT
	}
	sub, _ := c["sub"].(string)
	if !validSubject(sub) {
		return "", refusal(ownError("token has no usable sub claim"), "the introspection answer has no usable sub (non-empty, at most 1024 bytes, no control characters)")
	}
	return sub, nil
}

// store keeps an answer, making room by dropping expired answers, then
// any, once the cache is full.
func (in *introspector) store(key [sha256.Size]byte, e introspected, now time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.cache) >= maxIntrospectionEntries {
		for k, old := range in.cache {
			if !now.Before(old.until) {
				delete(in.cache, k)
			}
		}
		for k := range in.cache {
			if len(in.cache) < maxIntrospectionEntries {
				break
			}
			delete(in.cache, k)
		}
	}
	in.cache[key] = e
}
