package session

import (
	"github.com/mcpgw/gateway/store"

	"context"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The in-flight registry knows the requests this process is running and
// the server-to-client requests it is waiting on. It is process-local by
// nature (a context.CancelFunc cannot live in Redis); what crosses
// instances goes over the store's bus and is matched against it here.

type inflight struct {
	mu      sync.Mutex
	calls   map[string]context.CancelCauseFunc // session \x00 request id
	waiters map[string]chan *jsonrpc.Response  // session \x00 gateway-issued id
}

func newInflight() *inflight {
	return &inflight{calls: map[string]context.CancelCauseFunc{}, waiters: map[string]chan *jsonrpc.Response{}}
}

func slot[ID ~string](sid store.SessionID, id ID) string { return string(sid) + "\x00" + string(id) }

func (f *inflight) addCall(sid store.SessionID, id string, cancel context.CancelCauseFunc) {
	f.mu.Lock()
	f.calls[slot(sid, id)] = cancel
	f.mu.Unlock()
}

func (f *inflight) removeCall(sid store.SessionID, id string) {
	f.mu.Lock()
	delete(f.calls, slot(sid, id))
	f.mu.Unlock()
}

// cancelCall cancels a local call; it reports whether one was running.
func (f *inflight) cancelCall(sid store.SessionID, id string) bool {
	f.mu.Lock()
	cancel, ok := f.calls[slot(sid, id)]
	f.mu.Unlock()
	if ok {
		cancel(router.ErrCancelledByClient)
	}
	return ok
}

func (f *inflight) addWaiter(sid store.SessionID, id store.ServerRequestID) chan *jsonrpc.Response {
	ch := make(chan *jsonrpc.Response, 1)
	f.mu.Lock()
	f.waiters[slot(sid, id)] = ch
	f.mu.Unlock()
	return ch
}

func (f *inflight) removeWaiter(sid store.SessionID, id store.ServerRequestID) {
	f.mu.Lock()
	delete(f.waiters, slot(sid, id))
	f.mu.Unlock()
}

// deliver hands a client's response to the local waiter, if any. It never
// blocks: a waiter takes exactly one response.
func (f *inflight) deliver(sid store.SessionID, id store.ServerRequestID, resp *jsonrpc.Response) bool {
	f.mu.Lock()
	ch, ok := f.waiters[slot(sid, id)]
	if ok {
		delete(f.waiters, slot(sid, id))
	}
	f.mu.Unlock()
	if ok {
		ch <- resp
	}
	return ok
}

// idKey is the canonical text of a JSON-RPC id: `7` or `"abc"`. Request
// ids and the requestId of notifications/cancelled are both parsed by
// wire.ParseID, exactly (integers never pass through float64), so a cancel
// names the request it means: 7 is not "7", and 1.5 names nothing.
func idKey(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return strconv.Quote(v)
	}
	return ""
}

// serverRequestKey is idKey for the id of a server-to-client request: the
// key of its pending and answer marks.
func serverRequestKey(id jsonrpc.ID) store.ServerRequestID { return store.ServerRequestID(idKey(id)) }

// rawIDKey canonicalises an id given as raw JSON; ok is false for anything
// that is not a valid MCP id (absent, null, 1.5, 1e3, true...), which can
// name no request.
func rawIDKey(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	id, err := wire.ParseID(raw)
	if err != nil {
		return "", false
	}
	return idKey(id), true
}
