package router_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A 2026-07-28 list page is decorated while it is assembled, not parsed
// again afterwards: it must still carry everything a decorated result
// does, beside what the merge put there (a skipped backend in _meta, the
// gateway cursor), and the hints of the pages it was made of.
func TestModernList_PageCarriesDecorationAndMergeFields(t *testing.T) {
	stateless := testsupport.BackendOptions{Stateless: true, PageSize: 1}
	f := newFixture(t, backendSpec{Key: "up", Opts: stateless}, backendSpec{Key: "down", Opts: stateless})
	list := func() map[string]any {
		t.Helper()
		raw, _ := json.Marshal(map[string]any{"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    wire.ModernProtocolVersion,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}})
		return result(t, f.Router.Handle(context.Background(), &router.Call{VHost: f.VHost, Principal: "alice",
			Request: &jsonrpc.Request{ID: mustID(1), Method: "tools/list", Params: raw}, Caller: &router.ModernClient{ClientCapabilities: json.RawMessage(`{}`)}}))
	}

	// Both up: complete, public, the backends' ttlMs (a go-sdk backend says 0).
	res := list()
	meta, _ := res["_meta"].(map[string]any)
	if res["resultType"] != "complete" || res["cacheScope"] != "public" || res["ttlMs"] != float64(0) ||
		meta["io.modelcontextprotocol/serverInfo"] == nil || res["nextCursor"] == nil || len(res["tools"].([]any)) != 2 {
		t.Fatalf("page with both backends up: %s", toJSON(res))
	}
	if _, skipped := meta[router.MetaSkippedBackends]; skipped {
		t.Fatalf("no backend failed, yet _meta names one: %s", toJSON(meta))
	}

	// One down (discovered already, so it fails at the list): _meta names
	// it and still names the gateway; the page is not cacheable.
	f.Backends["down"].SetDown(true)
	res = list()
	meta, _ = res["_meta"].(map[string]any)
	skipped, _ := meta[router.MetaSkippedBackends].([]any)
	if !slices.Equal(skipped, []any{"down"}) || meta["io.modelcontextprotocol/serverInfo"] == nil {
		t.Fatalf("_meta %s: want the skipped backend and the gateway's serverInfo", toJSON(meta))
	}
	if res["resultType"] != "complete" || res["ttlMs"] != float64(0) || res["cacheScope"] != "public" {
		t.Fatalf("page with a backend down: %s", toJSON(res))
	}
	if names := names(t, res, "tools"); len(names) != 1 || names[0] != "up-echo" {
		t.Fatalf("tools %v, want up's first page", names)
	}
}

// One list walk, one cacheScope: a backend whose first page is private
// and later pages public makes every page of the gateway's walk private
// (the Python SDK v2 refuses a walk whose scope changes), and no page has
// an empty or unknown scope.
func TestModernList_OneWalkOneCacheScope(t *testing.T) {
	f := newFixture(t,
		backendSpec{Key: "mixed", Opts: testsupport.BackendOptions{Stateless: true, PageSize: 1, PrivateFirstListPage: true}},
		backendSpec{Key: "plain", Opts: testsupport.BackendOptions{Stateless: true, PageSize: 1}})
	cursor := ""
	pages := 0
	for {
		params := map[string]any{"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    wire.ModernProtocolVersion,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, _ := json.Marshal(params)
		res := result(t, f.Router.Handle(context.Background(), &router.Call{VHost: f.VHost, Principal: "alice",
			Request: &jsonrpc.Request{ID: mustID(1), Method: "tools/list", Params: raw}, Caller: &router.ModernClient{ClientCapabilities: json.RawMessage(`{}`)}}))
		pages++
		if res["cacheScope"] != "private" {
			t.Fatalf("page %d of the walk has cacheScope %v, want private like the first", pages, res["cacheScope"])
		}
		next, _ := res["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if pages < 3 {
		t.Fatalf("the walk had %d pages: too few to show anything", pages)
	}
}
