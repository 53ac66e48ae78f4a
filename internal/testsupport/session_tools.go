package testsupport

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a test needs to see which backend session a call ran in (issue
// 36: backend sessions are never shared between principals): a tool that
// counts its calls per backend session and names the session, the
// backend's own record of the sessions it closed, and a backend slow to
// answer its handshake or discovery (as FastMCP answers initialize after
// about a second).

// addSessionCounter adds the tool "count": each call adds one to a counter
// the backend keeps per MCP session and answers "<n> <session id>" (the
// id the backend gave the session; "" on a stateless backend).
func addSessionCounter(srv *mcp.Server, b *Backend) {
	mcp.AddTool(srv, &mcp.Tool{Name: "count", Description: "Counts its calls in this MCP session and names the session."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			id := req.Session.ID()
			b.mu.Lock()
			b.counters[id]++
			n := b.counters[id]
			b.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d %s", n, id)}}}, nil, nil
		})
}

// DeletedSessions returns the session ids the backend was sent DELETE
// for, in order.
func (b *Backend) DeletedSessions() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.deleted)
}

// WaitDeleted waits until the backend was sent DELETE for session id, or
// timeout passes; it reports whether it was. It wakes on every recorded
// request (no polling).
func (b *Backend) WaitDeleted(id string, timeout time.Duration) bool {
	return waitChanged(&b.mu, timeout, func() (bool, <-chan struct{}) { return slices.Contains(b.deleted, id), b.changed })
}

// delay holds a POST whose methods the options slow down.
func (b *Backend) delay(r *http.Request, methods []string) {
	d := time.Duration(0)
	if slices.Contains(methods, "initialize") {
		d = max(d, b.opts.DelayInitialize, b.opts.DelayDiscovery)
	}
	if slices.Contains(methods, "server/discover") {
		d = max(d, b.opts.DelayDiscovery)
	}
	if d == 0 {
		return
	}
	select {
	case <-time.After(d):
	case <-r.Context().Done():
	}
}
