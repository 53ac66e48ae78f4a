// Package oidcop runs a real OpenID provider in the test process: the
// zitadel/oidc OP (the library ZITADEL's own server is built on), with an
// in-memory storage of clients, tokens and signing keys. It serves
// discovery, the JWK Set, the token endpoint (client credentials grant,
// JWT or opaque access tokens) and RFC 7662 introspection, so the
// gateway's token verification is tested against a provider's actual
// answers rather than a hand-made JWK Set. The test controls the keys
// (rotation), counts the JWK Set fetches, and can take the provider down.
package oidcop

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2/clientcredentials"
)

// Client is a client of the provider; its client credentials tokens are
// issued to Subject for Audience.
type Client struct {
	ID, Secret string
	Subject    string
	Audience   []string
	// Opaque issues opaque access tokens (introspection only) instead of
	// JWTs.
	Opaque bool
	// Claims are added to its JWT access tokens and introspection answers.
	Claims map[string]any
	// Lifetime of its tokens; default 5 minutes.
	Lifetime time.Duration
}

func (c *Client) lifetime() time.Duration {
	if c.Lifetime > 0 {
		return c.Lifetime
	}
	return 5 * time.Minute
}

// Options shape a provider.
type Options struct {
	// Path is the issuer's path ("/realms/mcp"), empty for none.
	Path string
	// RFC8414Only serves the metadata only where RFC 8414 puts it
	// (/.well-known/oauth-authorization-server{Path}), as a plain OAuth
	// server does: the OpenID Connect discovery URL answers 404.
	RFC8414Only bool
	Clients     []*Client
}

// Provider is a running OpenID provider.
type Provider struct {
	// Issuer is the provider's issuer URL: http://127.0.0.1:PORT{Path}.
	Issuer string

	st                                 *storage
	srv                                *httptest.Server
	jwksHits, introspections, requests atomic.Int64
	down                               atomic.Bool
	hang                               atomic.Bool
	release                            chan struct{}
	once                               sync.Once
}

// Start runs a provider until the test ends.
func Start(t testing.TB, o Options) *Provider {
	t.Helper()
	k, err := newRSAKey()
	if err != nil {
		t.Fatal(err)
	}
	st := &storage{clients: map[string]*Client{}, tokens: map[string]*token{}, signing: k, keys: []*key{k}}
	for _, c := range o.Clients {
		st.clients[c.ID] = c
	}
	p := &Provider{st: st, release: make(chan struct{})}
	p.srv = httptest.NewUnstartedServer(nil)
	path := strings.TrimSuffix(o.Path, "/")
	p.Issuer = "http://" + p.srv.Listener.Addr().String() + path
	var cryptoKey [32]byte
	_, _ = rand.Read(cryptoKey[:])
	provider, err := op.NewProvider(&op.Config{CryptoKey: cryptoKey, CodeMethodS256: true}, st,
		op.StaticIssuer(p.Issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	oidcDiscovery := path + "/.well-known/openid-configuration"
	mux.Handle(path+"/", http.StripPrefix(path, provider))
	if o.RFC8414Only {
		mux.HandleFunc(oidcDiscovery, http.NotFound)
		mux.HandleFunc("/.well-known/oauth-authorization-server"+path, func(w http.ResponseWriter, r *http.Request) {
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/.well-known/openid-configuration"
			provider.ServeHTTP(w, r2)
		})
	}
	p.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		switch {
		case strings.HasSuffix(r.URL.Path, "/keys"):
			p.jwksHits.Add(1)
		case strings.HasSuffix(r.URL.Path, "/oauth/introspect"):
			p.introspections.Add(1)
		}
		if p.hang.Load() {
			select {
			case <-r.Context().Done():
			case <-p.release:
			}
			return
		}
		if p.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		mux.ServeHTTP(w, r)
	})
	p.srv.Start()
	t.Cleanup(func() {
		p.once.Do(func() { close(p.release) })
		p.srv.Close()
	})
	return p
}

// Token gets an access token for client id with the client credentials
// grant, from the provider's token endpoint.
func (p *Provider) Token(t testing.TB, id string) string {
	t.Helper()
	p.st.mu.Lock()
	c := p.st.clients[id]
	p.st.mu.Unlock()
	if c == nil {
		t.Fatalf("oidcop: no client %q", id)
	}
	cc := clientcredentials.Config{ClientID: c.ID, ClientSecret: c.Secret, TokenURL: p.Issuer + "/oauth/token"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tok, err := cc.Token(ctx)
	if err != nil {
		t.Fatalf("oidcop: token for %s: %v", id, err)
	}
	return tok.AccessToken
}

// IntrospectionURL is the provider's RFC 7662 endpoint.
func (p *Provider) IntrospectionURL() string { return p.Issuer + "/oauth/introspect" }

// Rotate makes a new key of alg ("RS256", "ES256", "EdDSA") the signing
// key. The JWK Set then holds the new key, and the old one too when
// keepOld is set.
func (p *Provider) Rotate(t testing.TB, alg string, keepOld bool) {
	t.Helper()
	var k *key
	var err error
	switch alg {
	case "RS256":
		k, err = newRSAKey()
	case "ES256":
		var priv *ecdsa.PrivateKey
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		k = newKey(jose.ES256, priv)
	case "EdDSA":
		var priv ed25519.PrivateKey
		_, priv, err = ed25519.GenerateKey(rand.Reader)
		k = newKey(jose.EdDSA, priv)
	default:
		t.Fatalf("oidcop: algorithm %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	if keepOld {
		p.st.keys = append([]*key{k}, p.st.keys...)
	} else {
		p.st.keys = []*key{k}
	}
	p.st.signing = k
}

// Revoke ends every token issued to subject: introspection says inactive.
func (p *Provider) Revoke(subject string) { p.st.revokeSubject(subject) }

// JWKSHits counts the requests for the JWK Set so far.
func (p *Provider) JWKSHits() int { return int(p.jwksHits.Load()) }

// Requests counts every request the provider got so far.
func (p *Provider) Requests() int { return int(p.requests.Load()) }

// Introspections counts the introspection requests so far.
func (p *Provider) Introspections() int { return int(p.introspections.Load()) }

// SetDown makes every request fail with 503 (down) or be served again.
func (p *Provider) SetDown(down bool) { p.down.Store(down) }

// SetHang makes every request hang until its client gives up.
func (p *Provider) SetHang(hang bool) { p.hang.Store(hang) }
