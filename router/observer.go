package router

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Observer learns how each backend exchange went. It lets a metrics
// package count backend traffic without the router importing it (the
// arrows stay one-way: internal/metrics implements this interface).
// BackendCall runs on the request path, so it must be cheap and must not
// block.
type Observer interface {
	BackendCall(vhost, backend, method string, d time.Duration, outcome string)
}

// ListCacheObserver is an optional extension of Observer: an Observer
// that also implements it learns whether each page of a backend with a
// list cache came from the cache (see router/listcache).
type ListCacheObserver interface {
	ListCacheLookup(vhost, backend string, hit bool)
}

// PluginObserver is an optional extension of Observer: an Observer that
// also implements it learns each decision a plugin reports
// (HookCall.Decided), and each rate-limit decision (plugin "rate_limit",
// decision "allow" or "deny").
type PluginObserver interface {
	PluginDecision(plugin, decision string)
}

// Outcomes of a backend exchange, as passed to Observer.BackendCall. The
// set is closed so a metric label built from it stays bounded.
const (
	// OutcomeOK: the backend answered with a result.
	OutcomeOK = "ok"
	// OutcomeRPCError: the backend answered with a JSON-RPC error.
	OutcomeRPCError = "rpc_error"
	// OutcomeTimeout: the backend's timeout or the caller's deadline fired.
	OutcomeTimeout = "timeout"
	// OutcomeCancelled: the client cancelled or went away first.
	OutcomeCancelled = "cancelled"
	// OutcomeTransportError: no answer (connect, HTTP status, protocol).
	OutcomeTransportError = "transport_error"
)

// outcome classifies what withBackend returns.
func outcome(resp *jsonrpc.Response, err error) string {
	switch {
	case err == nil && resp != nil && resp.Error != nil:
		return OutcomeRPCError
	case err == nil:
		return OutcomeOK
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return OutcomeCancelled
	default:
		return OutcomeTransportError
	}
}
