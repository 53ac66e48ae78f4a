package router

import (
	"encoding/json"
	"errors"
	"slices"

	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The store bounds what a client can make a session hold (see
// store/session_limits.go): every request loads the whole session. The
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
func (r *Router) subscriptionStoreError(id jsonrpc.ID, uri string, err error) *jsonrpc.Response {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errorResponse(id, rpcError(CodeInternalError, "the session has ended"))
	case !errors.Is(err, store.ErrLimit):
		return r.storeUnavailable(id, err)
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
