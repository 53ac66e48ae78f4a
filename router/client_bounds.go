package router

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// What one client may make the gateway hold is bounded before any backend
// work: a listen's streams and URIs (below), and what a 2025 session
// holds in the store (its subscriptions and metadata, further down).

// A subscriptions/listen holds a stream per backend for as long as the
// client stays, and asks a 2025-era backend one resources/subscribe per
// URI at every (re)connect. Unbounded, one token could pin an instance's
// CPU with one request, exhaust its goroutines and descriptors with a few
// thousand listens, or turn one request into thousands of backend calls.
// So a listen is bounded before any backend work:
//
//   - ListenURIs distinct resourceSubscriptions per request (400,
//     -32602; duplicates count once, and the check stops at the first URI
//     past the bound), each at most store.MaxSubscriptionURIBytes; what
//     one listen asks of one backend is then bounded by ListenURIs at
//     every connect;
//   - ListensPerPrincipal listens open at once per principal on one
//     instance (429, -32029, Retry-After), counted here: a listen is a
//     stream this instance holds, so its cost is this instance's. The
//     place is freed when the listen returns (the client went, or the
//     gateway shuts down).

// Defaults of the bounds (config limits.listens_per_principal,
// limits.listen_uris).
const (
	DefaultListensPerPrincipal = 8
	DefaultListenURIs          = 100
)

// listenRetryAfter is what a client over ListensPerPrincipal is told to
// wait: places free as soon as a listen closes.
const listenRetryAfter = 5 * time.Second

// listenSlots counts the open listens of each principal on this instance.
type listenSlots struct {
	limit int
	mu    sync.Mutex
	open  map[string]int
}

// take counts a listen of principal in; false when principal holds limit
// already. A true take is undone by give.
func (ls *listenSlots) take(principal string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.open[principal] >= ls.limit {
		return false
	}
	if ls.open == nil {
		ls.open = map[string]int{}
	}
	ls.open[principal]++
	return true
}

func (ls *listenSlots) give(principal string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.open[principal] <= 1 {
		delete(ls.open, principal)
		return
	}
	ls.open[principal]--
}

// checkListenFilter refuses a filter over the bounds, and drops duplicate
// URIs (keeping the first of each, in order).
func (r *Router) checkListenFilter(id jsonrpc.ID, f *listenFilter) *jsonrpc.Response {
	uris := f.ResourceSubscriptions
	seen := make(map[string]struct{}, min(len(uris), r.opts.ListenURIs+1))
	kept := uris[:0]
	for _, uri := range uris {
		if len(uri) > store.MaxSubscriptionURIBytes {
			return refuse(id, http.StatusBadRequest, 0, &jsonrpc.Error{Code: CodeInvalidParams,
				Message: fmt.Sprintf("subscriptions/listen: a resourceSubscriptions URI is longer than %d bytes, the longest a subscription may have", store.MaxSubscriptionURIBytes)})
		}
		if _, dup := seen[uri]; dup {
			continue
		}
		if len(kept) == r.opts.ListenURIs {
			return refuse(id, http.StatusBadRequest, 0, &jsonrpc.Error{Code: CodeInvalidParams,
				Message: fmt.Sprintf("subscriptions/listen: more than %d distinct resourceSubscriptions, the most one listen may have (limits.listen_uris); split them over listens or subscribe to fewer", r.opts.ListenURIs),
				Data:    LimitData("limits.listen_uris", r.opts.ListenURIs)})
		}
		seen[uri] = struct{}{}
		kept = append(kept, uri)
	}
	f.ResourceSubscriptions = kept
	if len(f.TaskIDs) > r.opts.ListenURIs {
		return refuse(id, http.StatusBadRequest, 0, &jsonrpc.Error{Code: CodeInvalidParams,
			Message: fmt.Sprintf("subscriptions/listen: more than %d taskIds, the most one listen may have (limits.listen_uris)", r.opts.ListenURIs),
			Data:    LimitData("limits.listen_uris", r.opts.ListenURIs)})
	}
	return nil
}

// tooManyListens is the answer to a listen over ListensPerPrincipal.
func (r *Router) tooManyListens(id jsonrpc.ID) *jsonrpc.Response {
	return refuse(id, http.StatusTooManyRequests, listenRetryAfter, &jsonrpc.Error{Code: CodeRateLimited,
		Message: fmt.Sprintf("too many open subscriptions/listen streams: this caller holds %d on this gateway instance, the most it may (limits.listens_per_principal); close one first", r.opts.ListensPerPrincipal),
		Data:    LimitData("limits.listens_per_principal", r.opts.ListensPerPrincipal)})
}

// LimitData is the error data of a refusal by a bound: which config
// field, and its value ({"limit": field, "max": value}).
func LimitData(field string, value int) json.RawMessage {
	data, _ := json.Marshal(map[string]any{"limit": field, "max": value})
	return data
}

// The store bounds what a client can make a session hold (see
// store/sessions.go): every request loads the whole session. The
// router checks the same bounds against the session it has loaded, so a
// request past them is refused with a clear error before any backend sees
// it; the store checks again, atomically, for requests that race.

// subscribeRefusal returns the error for a resources/subscribe of uri the
// store would refuse, or nil.
func subscribeRefusal(sess *store.Session, uri string) *jsonrpc.Error {
	switch {
	case len(uri) > store.MaxSubscriptionURIBytes:
		return uriTooLong()
	case len(sess.Subscriptions) >= store.MaxSubscriptions && !slices.Contains(sess.Subscriptions, uri):
		return tooManySubscriptions()
	}
	return nil
}

// subscriptionStoreError answers request id, a subscription of uri the
// store did not record.
func (b *base) subscriptionStoreError(id jsonrpc.ID, uri string, err error) *jsonrpc.Response {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errorResponse(id, rpcError(CodeInternalError, "the session has ended"))
	case !errors.Is(err, store.ErrLimit):
		return b.storeUnavailable(id, err)
	case len(uri) > store.MaxSubscriptionURIBytes:
		return errorResponse(id, uriTooLong())
	default:
		return errorResponse(id, tooManySubscriptions())
	}
}

func uriTooLong() *jsonrpc.Error {
	return invalidParams("resources/subscribe: the URI is longer than %d bytes, the longest a subscription may have", store.MaxSubscriptionURIBytes)
}

func tooManySubscriptions() *jsonrpc.Error {
	return invalidParams("resources/subscribe: the session already has %d subscriptions, the most it may have; unsubscribe from one first", store.MaxSubscriptions)
}

// clientMetadataRefusal returns the error for initialize params whose
// clientInfo and capabilities the store would refuse to keep, or nil.
func clientMetadataRefusal(info, caps json.RawMessage) *jsonrpc.Error {
	if len(info)+len(caps) > store.MaxClientMetadataBytes {
		return invalidParams("initialize: params.clientInfo and params.capabilities together are over %d bytes", store.MaxClientMetadataBytes)
	}
	return nil
}
