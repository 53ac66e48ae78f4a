package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/singleflight"
)

// Client ID Metadata Documents: a client_id that is an https URL names
// the client's metadata, which the gateway fetches when the client first
// appears. The URL is the client's to choose, so the fetch is guarded:
// https only, the address checked after DNS resolution and before any
// packet is sent (no loopback, private, link-local, shared or multicast
// address: a client cannot make the gateway reach its own network), no
// redirects, no proxy, at most 5 KiB in 5 s, at most 8 fetches at once
// per instance. Documents are cached per instance for 5 minutes, failures
// for 30 s.

const (
	maxDocumentBytes   = 5 << 10
	documentTimeout    = 5 * time.Second
	documentCacheFor   = 5 * time.Minute
	documentFailFor    = 30 * time.Second
	maxDocumentsCached = 1000
	maxFetching        = 8
	maxRedirectURIs    = 10
)

type cachedDoc struct {
	c     *client
	err   error
	until time.Time
}

type metadataDocs struct {
	hc     *http.Client
	flight singleflight.Group
	sem    chan struct{}
	mu     sync.Mutex
	cache  map[string]cachedDoc
}

func newMetadataDocs(allowPrivate bool) *metadataDocs {
	d := &net.Dialer{Timeout: documentTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("metadata document: address %q: %w", address, err)
		}
		if !allowPrivate && !publicAddr(ap.Addr()) {
			return errPrivateAddress
		}
		return nil
	}}
	tr := &http.Transport{DialContext: d.DialContext, TLSHandshakeTimeout: documentTimeout, MaxIdleConns: 10,
		IdleConnTimeout: time.Minute, ResponseHeaderTimeout: documentTimeout}
	hc := &http.Client{Transport: tr, Timeout: documentTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &metadataDocs{hc: hc, sem: make(chan struct{}, maxFetching), cache: map[string]cachedDoc{}}
}

// errPrivateAddress: the document's host resolves to an address of a
// private network.
var errPrivateAddress = errors.New("metadata document: its host resolves to a private, loopback or link-local address")

// shared is 100.64.0.0/10 (carrier-grade NAT), which netip does not
// count as private.
var shared = netip.MustParsePrefix("100.64.0.0/10")

// publicAddr reports whether a is an address on the public internet.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsValid() && a.IsGlobalUnicast() && !a.IsPrivate() && !a.IsLoopback() && !a.IsLinkLocalUnicast() &&
		!shared.Contains(a) && !(a.Is4() && a.As4()[0] == 0)
}

// isDocumentID reports whether a client_id names a metadata document: an
// https URL with a path, without fragment, credentials or dot segments.
func isDocumentID(id string) bool {
	if !strings.HasPrefix(id, "https://") || len(id) > 2000 {
		return false
	}
	u, err := url.Parse(id)
	return err == nil && u.Host != "" && u.User == nil && u.Fragment == "" && u.Path != "" && u.Path != "/" &&
		!strings.Contains(u.Path, "/./") && !strings.Contains(u.Path, "/../") && !strings.HasSuffix(u.Path, "/..")
}

// client returns the client a document describes.
func (d *metadataDocs) client(ctx context.Context, id string) (*client, error) {
	d.mu.Lock()
	e, ok := d.cache[id]
	d.mu.Unlock()
	if ok && time.Now().Before(e.until) {
		if e.err != nil {
			return nil, e.err
		}
		c := *e.c
		return &c, nil
	}
	v, err, _ := d.flight.Do(id, func() (any, error) {
		c, err := d.fetch(context.WithoutCancel(ctx), id)
		e := cachedDoc{c: c, err: err, until: time.Now().Add(documentCacheFor)}
		if err != nil {
			e.until = time.Now().Add(documentFailFor)
		}
		d.keep(id, e)
		return c, err
	})
	if err != nil {
		return nil, err
	}
	c := *v.(*client)
	return &c, nil
}

func (d *metadataDocs) keep(id string, e cachedDoc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.cache) >= maxDocumentsCached {
		now := time.Now()
		for k, old := range d.cache {
			if !now.Before(old.until) || len(d.cache) >= maxDocumentsCached {
				delete(d.cache, k)
			}
		}
	}
	d.cache[id] = e
}

// fetch GETs and checks a document.
func (d *metadataDocs) fetch(ctx context.Context, id string) (*client, error) {
	select {
	case d.sem <- struct{}{}:
		defer func() { <-d.sem }()
	default:
		return nil, errors.New("metadata document: too many fetches at once")
	}
	ctx, cancel := context.WithTimeout(ctx, documentTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.hc.Do(req)
	if err != nil {
		if errors.Is(err, errPrivateAddress) {
			return nil, errPrivateAddress
		}
		return nil, errors.New("metadata document: cannot be fetched")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metadata document: HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil || len(body) > maxDocumentBytes {
		return nil, fmt.Errorf("metadata document: unreadable or larger than %d bytes", maxDocumentBytes)
	}
	var doc struct {
		ClientID     string   `json:"client_id"`
		Name         string   `json:"client_name"`
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
		GrantTypes   []string `json:"grant_types"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, errors.New("metadata document: not a JSON object")
	}
	if doc.ClientID != id {
		return nil, errors.New("metadata document: its client_id is not its own URL")
	}
	if doc.AuthMethod != "" && doc.AuthMethod != authNone {
		return nil, fmt.Errorf("metadata document: token_endpoint_auth_method %q is not supported (a document's client is public: none)", truncate(doc.AuthMethod, 40))
	}
	if len(doc.RedirectURIs) == 0 || len(doc.RedirectURIs) > maxRedirectURIs {
		return nil, fmt.Errorf("metadata document: 1 to %d redirect_uris", maxRedirectURIs)
	}
	for _, u := range doc.RedirectURIs {
		if p := redirectURIProblem(u); p != "" {
			return nil, errors.New("metadata document: a redirect URI " + p)
		}
	}
	grants := []string{grantCode, grantRenew}
	if len(doc.GrantTypes) > 0 && !contains(doc.GrantTypes, grantRenew) {
		grants = grants[:1]
	}
	return &client{ID: id, Name: truncate(doc.Name, 200), Redirects: doc.RedirectURIs, Method: authNone,
		Grants: grants, Created: time.Now(), Document: true}, nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
