package auth

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

// Identity providers publish their signing keys as a JWK Set and rotate
// them. remoteKeys keeps one issuer's set: fetched at start in the
// background (start-up never waits on, or fails because of, a provider
// that is down), refreshed periodically whatever the answer's cache
// headers say, and fetched again when a token names a key ID it does not
// hold, at most once per minRefetch, so a rotation is seen within seconds
// while a flood of made-up key IDs costs the provider a bounded number of
// requests. A failed fetch keeps the keys already held. A request waits
// for a fetch at most keyWait, then its token is refused (401).
//
// jwkset parses and validates the JWKs and keyfunc selects one by kid for
// golang-jwt (checking its alg and use); their HTTP refresher is not used,
// since it fetches synchronously on creation, waits in the request path
// for its rate limiter, and its goroutine cannot be waited for on Close.

// keyTiming is when remoteKeys fetches.
type keyTiming struct {
	refresh     time.Duration // after a successful fetch
	minRefetch  time.Duration // least time between fetches for unknown kids
	retryMax    time.Duration // longest wait after failures
	keyWait     time.Duration // most a request waits for a fetch
	httpTimeout time.Duration // one fetch, discovery included
}

var defaultKeyTiming = keyTiming{
	refresh:     10 * time.Minute,
	minRefetch:  5 * time.Second,
	retryMax:    30 * time.Second,
	keyWait:     3 * time.Second,
	httpTimeout: 10 * time.Second,
}

type remoteKeys struct {
	issuer string
	hc     *http.Client
	log    *slog.Logger
	tm     keyTiming

	store jwkset.Storage // replaced whole by each successful fetch
	kf    keyfunc.Keyfunc

	mu       sync.Mutex
	discover bool          // jwksURL comes from the issuer's metadata
	jwksURL  string        // configured, or discovered ("" until then)
	fetching bool          // a fetch is running or asked for
	done     chan struct{} // closed when that fetch ends
	last     time.Time     // end of the last fetch

	kick   chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// newRemoteKeys starts fetching issuer's keys (from jwksURL, or from the
// URL its metadata names when jwksURL is "") until close.
func newRemoteKeys(issuer, jwksURL string, hc *http.Client, log *slog.Logger, tm keyTiming) *remoteKeys {
	k := &remoteKeys{issuer: issuer, jwksURL: jwksURL, discover: jwksURL == "", hc: hc, log: log, tm: tm,
		store: jwkset.NewMemoryStorage(), kick: make(chan struct{}, 1)}
	kf, err := keyfunc.New(keyfunc.Options{Storage: kidStorage{k.store, k},
		UseWhitelist: []jwkset.USE{jwkset.UseSig, ""}})
	if err != nil {
		panic(err) // only for a nil storage
	}
	k.kf = kf
	// The first fetch is under way from now: a request that comes before
	// it starts waits for it instead of asking for another.
	k.fetching, k.done = true, make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	k.wg.Add(1)
	go k.run(ctx)
	return k
}

// close stops the fetcher, waits for it and drops idle connections.
func (k *remoteKeys) close() {
	k.cancel()
	k.wg.Wait()
	k.hc.CloseIdleConnections()
}

// keyfunc is the golang-jwt key function: the JWK the token's kid names
// (or, without a kid, every key held).
func (k *remoteKeys) keyfunc(ctx context.Context) jwt.Keyfunc { return k.kf.KeyfuncCtx(ctx) }

func (k *remoteKeys) run(ctx context.Context) {
	defer k.wg.Done()
	backoff := time.Second
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-k.kick:
		}
		next := k.tm.refresh
		if err := k.attempt(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			next, backoff = min(backoff, k.tm.retryMax, k.tm.refresh), min(2*backoff, k.tm.retryMax)
			level, msg := slog.LevelWarn, "auth: cannot fetch the issuer's signing keys; keeping the keys held"
			if errors.Is(err, errIssuerMismatch) {
				level, msg = slog.LevelError, "auth: the issuer's metadata names another issuer: fix auth issuer in the config"
			}
			k.log.Log(ctx, level, msg, "issuer", k.issuer, "error", err.Error(), "retry_in", next.String())
		} else {
			backoff = time.Second
		}
		timer.Reset(next)
	}
}

// attempt runs one fetch and wakes whoever waits for it.
func (k *remoteKeys) attempt(ctx context.Context) error {
	k.mu.Lock()
	if !k.fetching {
		k.fetching, k.done = true, make(chan struct{})
	}
	done := k.done
	k.mu.Unlock()
	fctx, cancel := context.WithTimeout(ctx, k.tm.httpTimeout)
	err := k.fetch(fctx)
	cancel()
	k.mu.Lock()
	k.fetching, k.last = false, time.Now()
	close(done)
	k.mu.Unlock()
	return err
}

func (k *remoteKeys) fetch(ctx context.Context) error {
	k.mu.Lock()
	u := k.jwksURL
	k.mu.Unlock()
	if u == "" {
		d, err := discoverJWKSURL(ctx, k.hc, k.issuer)
		if err != nil {
			return err
		}
		k.mu.Lock()
		k.jwksURL, u = d, d
		k.mu.Unlock()
	}
	keys, err := fetchKeySet(ctx, k.hc, u)
	if err != nil {
		if k.discover { // the provider may have moved its keys: ask again next time
			k.mu.Lock()
			k.jwksURL = ""
			k.mu.Unlock()
		}
		return err
	}
	return k.store.KeyReplaceAll(ctx, keys)
}

// fetchKeySet GETs a JWK Set and keeps its usable signing keys: never a
// symmetric one, nor an RSA key under 2048 bits; an error when none is
// left.
func fetchKeySet(ctx context.Context, hc *http.Client, u string) ([]jwkset.JWK, error) {
	var set jwkset.JWKSMarshal
	if err := getJSON(ctx, hc, u, &set); err != nil {
		return nil, err
	}
	keys := make([]jwkset.JWK, 0, len(set.Keys))
	for _, m := range set.Keys {
		if m.KTY == jwkset.KtyOct || (m.USE != "" && m.USE != jwkset.UseSig) {
			continue // a symmetric key is never taken from a public set
		}
		jwk, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		if err != nil {
			continue // unsupported (Ed448, ...) or malformed: the others still count
		}
		if rk, ok := jwk.Key().(*rsa.PublicKey); ok && rk.N.BitLen() < 2048 {
			continue
		}
		keys = append(keys, jwk)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s holds no usable signing key", u)
	}
	return keys, nil
}

// refetch asks for a fetch (unless one ran less than minRefetch ago) and
// waits for it at most keyWait; it reports whether a fetch ended.
func (k *remoteKeys) refetch(ctx context.Context) bool {
	k.mu.Lock()
	switch {
	case k.fetching:
	case time.Since(k.last) >= k.tm.minRefetch:
		k.fetching, k.done = true, make(chan struct{})
		select {
		case k.kick <- struct{}{}:
		default:
		}
	default:
		k.mu.Unlock()
		return false
	}
	done := k.done
	k.mu.Unlock()
	t := time.NewTimer(k.tm.keyWait)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// kidStorage is the key store keyfunc reads: a kid it does not hold
// triggers a (rate-limited) fetch before the token is refused.
type kidStorage struct {
	jwkset.Storage
	k *remoteKeys
}

func (s kidStorage) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	jwk, err := s.Storage.KeyRead(ctx, kid)
	if !errors.Is(err, jwkset.ErrKeyNotFound) || !s.k.refetch(ctx) {
		return jwk, err
	}
	return s.Storage.KeyRead(ctx, kid)
}

// holdsKeys reports whether any key of the issuer is held: when none is,
// a token's kid is not unknown, the set was never fetched.
func (k *remoteKeys) holdsKeys(ctx context.Context) bool {
	keys, err := k.store.KeyReadAll(ctx)
	return err != nil || len(keys) > 0
}
