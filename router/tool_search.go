package router

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/capability"
	"github.com/mcpgw/gateway/router/credentials"
	federated "github.com/mcpgw/gateway/router/federation"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/toolsearch"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Clients hold 40 to 128 tools; a vhost of many backends publishes
// hundreds. A vhost with tool_search lists only the tools its config
// names (always), those whose _meta asks to be loaded always, and two
// tools of the gateway's own: search_tools, which ranks every tool the
// caller may see for a query (tool_search_index.go, package
// router/toolsearch), and call_tool, which calls one by its published
// name. Published names stay callable directly.
//
// call_tool is unwrapped into the tools/call it stands for when the
// request is decided (decide, admission.go), before anything else looks
// at it: access, rate limits, plugins, the audit, sign-in, tasks, parked
// calls, progress and cancellation all see a plain tools/call of the real
// tool, so a call through call_tool is the same call as a direct one. A
// hidden or unknown name is answered exactly as a direct call of it.

// The gateway's own tools on a tool_search vhost. A backend's tool
// published under one of these names is shadowed there.
const (
	searchToolsName = "search_tools"
	callToolName    = "call_tool"
)

// maxSearchQuery bounds a search's query, in bytes.
const maxSearchQuery = 1024

// gatewayTool reports whether name is one of the gateway's tools.
func gatewayTool(name string) bool { return name == searchToolsName || name == callToolName }

// toolSearch is a vhost's tool_search, compiled.
type toolSearch struct {
	always  *policy.Names
	results int
	ranker  toolsearch.Ranker
	// tools are the gateway's two tools as tools/list lists them.
	tools [2]federated.Item
}

// newToolSearch compiles cfg; nil for nil.
func newToolSearch(cfg *ToolSearch) *toolSearch {
	if cfg == nil {
		return nil
	}
	s := &toolSearch{always: cfg.Always, results: cfg.Results, ranker: toolsearch.NewBM25F()}
	if s.results <= 0 {
		s.results = DefaultSearchResults
	}
	search, _ := json.Marshal(map[string]any{
		"name":  searchToolsName,
		"title": "Search tools",
		"description": "Find the tools of this server that do what you need: describe the task in plain words. " +
			"Returns the best matching tools, best first, each with its name, description and inputSchema. " +
			"Call one with call_tool, or directly by its name. Search again with other words if none fits.",
		"inputSchema": map[string]any{"type": "object", "required": []string{"query"}, "properties": map[string]any{
			"query": map[string]any{"type": "string", "description": "What you want to do, in plain words (for example: open a pull request)."},
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": MaxSearchResults,
				"description": fmt.Sprintf("How many tools to return (default %d).", s.results)},
		}},
		"outputSchema": map[string]any{"type": "object", "required": []string{"tools"}, "properties": map[string]any{
			"tools": map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
		}},
		"annotations": map[string]any{"readOnlyHint": true, "openWorldHint": false},
	})
	call, _ := json.Marshal(map[string]any{
		"name":  callToolName,
		"title": "Call a tool",
		"description": "Call a tool that search_tools found, by its name, with arguments that match its inputSchema. " +
			"The answer is the tool's own.",
		"inputSchema": map[string]any{"type": "object", "required": []string{"name"}, "properties": map[string]any{
			"name":      map[string]any{"type": "string", "description": "The tool's name, as search_tools gave it."},
			"arguments": map[string]any{"type": "object", "description": "The tool's arguments."},
		}},
	})
	s.tools = [2]federated.Item{{Name: callToolName, ID: callToolName, Raw: call}, {Name: searchToolsName, ID: searchToolsName, Raw: search}}
	return s
}

// equal reports whether s and o list and search alike (Reload).
func (s *toolSearch) equal(o *toolSearch) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.results == o.results && fmt.Sprint(s.always.Patterns()) == fmt.Sprint(o.always.Patterns())
}

// listed reports whether a tools/list item stays listed on a tool_search
// vhost: always names it, or its _meta asks for it. Every item does
// without tool_search (nil s).
func (s *toolSearch) listed(n *federated.Item) bool {
	switch {
	case s == nil:
		return true
	case gatewayTool(n.Name):
		return false // shadowed by the gateway's own
	case s.always.Match(n.Name):
		return true
	}
	return alwaysLoad(n.Raw)
}

// alwaysLoad reports whether a tool's _meta says anthropic/alwaysLoad:
// true.
func alwaysLoad(item json.RawMessage) bool {
	if !bytes.Contains(item, []byte(metaAlwaysLoad)) {
		return false // the common case: one scan
	}
	meta, ok := wire.MemberValue(item, "_meta")
	if !ok {
		return false
	}
	v, ok := wire.MemberValue(meta, metaAlwaysLoad)
	return ok && string(v) == "true"
}

// lead is what a tools/list page of a tool_search vhost starts with:
// the gateway's tools, on the first page of a walk (no backend has a
// position yet); nothing on later pages, for other lists, or without
// tool_search.
func (s *toolSearch) lead(op federated.Op, first bool) []*federated.Item {
	if s == nil || op.Field != "tools" || !first {
		return nil
	}
	return []*federated.Item{&s.tools[0], &s.tools[1]}
}

// unwrapCallTool turns a call_tool request into the tools/call it stands
// for: the named tool, its arguments, and every other member of the
// request (_meta, task, inputResponses, requestState) as it came. rerr
// answers a call_tool that names no tool.
func unwrapCallTool(req *jsonrpc.Request) (*jsonrpc.Request, *jsonrpc.Error) {
	params, ok := wire.Object(req.Params)
	if !ok {
		return nil, invalidParams("tools/call params must be an object")
	}
	args, ok := wire.Object(orEmpty(params["arguments"]))
	if !ok {
		return nil, invalidParams("call_tool's arguments must be an object: {name, arguments}")
	}
	var name string
	if json.Unmarshal(args["name"], &name) != nil || name == "" {
		return nil, invalidParams("call_tool needs arguments.name: the name of the tool to call, as search_tools gave it")
	}
	if name == callToolName {
		return nil, invalidParams("call_tool cannot call call_tool")
	}
	params["name"], _ = json.Marshal(name)
	delete(params, "arguments")
	if a, ok := args["arguments"]; ok && string(a) != "null" {
		if len(a) == 0 || a[0] != '{' {
			return nil, invalidParams("call_tool's arguments.arguments must be an object: the arguments of tool %s", wire.Quote(name))
		}
		params["arguments"] = a
	}
	out := *req
	out.Params = json.RawMessage(wire.RawObject(params))
	return &out, nil
}

// decideToolSearch makes the decisions of a tools/call of a gateway tool
// on a tool_search vhost: a search is the gateway's to answer; a
// call_tool becomes the call it stands for (c.Request replaced), decided
// from then on as any other. It reports whether it decided anything.
func (fd *federation) decideToolSearch(v *vhost, c *Call, d *Decisions) bool {
	if v.search == nil || !rowOf(c.Request.Method).Tool || !c.Request.IsCall() {
		return false
	}
	name, _ := rawToolName(c.Request.Params)
	switch name {
	case searchToolsName:
		d.search = true
		return true
	case callToolName:
		req, rerr := unwrapCallTool(c.Request)
		if rerr != nil {
			d.rerr = rerr
			return true
		}
		c.Request, d.unwrapped = req, true
		if inner, _ := rawToolName(req.Params); inner == searchToolsName {
			d.search = true
			return true
		}
	}
	return false
}

// searchArgs are a search's arguments.
type searchArgs struct {
	Query string `json:"query"`
	Limit *int   `json:"limit"`
}

// serveSearch answers search_tools, for either generation.
func (fd *federation) serveSearch(ctx context.Context, v *vhost, c *Call) *jsonrpc.Response {
	resp := fd.searchTools(ctx, v, c)
	return c.Caller.finish(ctx, fd.base, resp, c.Request.Method, v.accessHints(c.Request.Method, nil))
}

// searchTools ranks the tools the caller may see for the query and
// answers them as a tool result: structuredContent.tools, best first, and
// the same as JSON text. Backends that failed, or need the caller's
// sign-in, are named in _meta as a list names them.
func (fd *federation) searchTools(ctx context.Context, v *vhost, c *Call) *jsonrpc.Response {
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(c.Request.Params, &p)
	var a searchArgs
	if err := json.Unmarshal(orEmpty(p.Arguments), &a); err != nil {
		return toolError(c.Request.ID, "search_tools takes {query: string, limit?: integer}: "+err.Error())
	}
	limit := v.search.results
	switch {
	case a.Query == "":
		return toolError(c.Request.ID, "search_tools needs a query: what you want to do, in plain words")
	case len(a.Query) > maxSearchQuery:
		return toolError(c.Request.ID, fmt.Sprintf("the query is %d bytes: at most %d", len(a.Query), maxSearchQuery))
	case a.Limit != nil && (*a.Limit < 1 || *a.Limit > MaxSearchResults):
		return toolError(c.Request.ID, fmt.Sprintf("limit must be between 1 and %d", MaxSearchResults))
	case a.Limit != nil:
		limit = *a.Limit
	}
	lists, skipped, signIns := fd.searchLists(ctx, v, c)
	parts := make([]toolsearch.Part, len(lists))
	for i, l := range lists {
		parts[i] = toolsearch.Part{Seg: l.seg, Visible: l.visible(c.d.access)}
	}
	hits := v.search.ranker.Rank(a.Query, parts, limit)
	return resultResponse(c.Request.ID, searchResult(lists, hits, skipped, signIns))
}

// searchLists are the indexed lists of the backends whose tools the
// caller may see, fetched at once; skipped names those that failed,
// signIns those that need the caller's sign-in.
func (fd *federation) searchLists(ctx context.Context, v *vhost, c *Call) (lists []*indexedTools, skipped []string, signIns []map[string]string) {
	type got struct {
		list   *indexedTools
		failed bool
		signIn *credentials.SignInRequired
	}
	out := make([]got, len(v.keys))
	var wg sync.WaitGroup
	for i, key := range v.keys {
		if !v.backendVisible(c.d.access, key, true) {
			continue
		}
		b := v.backends[key]
		userOAuth := b.Credentials != nil && b.Credentials.Grant == credentials.GrantUserOAuth
		if !userOAuth {
			if e, _, ok := fd.cachedToolEntry(v, c, key); ok { // the common case: no goroutine, no capability decoded
				out[i].list = e.search
				continue
			}
		}
		if snap := c.peer.backends[key]; snap.OK() && !capability.Has(snap, "tools") {
			continue
		}
		wg.Go(func() {
			if userOAuth { // the caller's token first: it may need a sign-in (or a refresh)
				if out[i].signIn = fd.link.signInNeeded(ctx, v, key); out[i].signIn != nil {
					return
				}
			}
			e, err := fd.toolEntry(ctx, v, c, key)
			out[i].list, out[i].failed = e.search, err != nil
		})
	}
	wg.Wait()
	for i, g := range out {
		switch {
		case g.signIn != nil:
			signIns = append(signIns, map[string]string{"backend": v.keys[i], "url": g.signIn.URL, "message": g.signIn.Message()})
		case g.failed:
			skipped = append(skipped, v.keys[i])
		case g.list != nil:
			lists = append(lists, g.list)
		}
	}
	return lists, skipped, signIns
}

// searchResult is the tool result of a search.
func searchResult(lists []*indexedTools, hits []toolsearch.Hit, skipped []string, signIns []map[string]string) json.RawMessage {
	size := 16
	for _, h := range hits {
		size += len(lists[h.Part].shown[h.Doc]) + 1
	}
	structured := make([]byte, 0, size)
	structured = append(structured, `{"tools":[`...)
	for i, h := range hits {
		if i > 0 {
			structured = append(structured, ',')
		}
		structured = append(structured, lists[h.Part].shown[h.Doc]...)
	}
	structured = append(structured, "]}"...)
	text, _ := json.Marshal(string(structured))
	result := map[string]json.RawMessage{
		"content":           json.RawMessage(`[{"type":"text","text":` + string(text) + `}]`),
		"structuredContent": structured,
	}
	// As a list names them: a backend that needs a sign-in is skipped too.
	skipped = append(skipped, signInKeys(signIns)...)
	if len(skipped) > 0 {
		sort.Strings(skipped)
		meta := map[string]json.RawMessage{}
		meta[MetaSkippedBackends], _ = json.Marshal(skipped)
		if len(signIns) > 0 {
			meta[MetaSignInRequired], _ = json.Marshal(signIns)
		}
		result["_meta"], _ = json.Marshal(meta)
	}
	return json.RawMessage(wire.RawObject(result))
}

// signInKeys are the backends of signIns.
func signInKeys(signIns []map[string]string) []string {
	keys := make([]string, len(signIns))
	for i, s := range signIns {
		keys[i] = s["backend"]
	}
	return keys
}

// toolError is a tool result that reports a mistake in the call's
// arguments (isError), which the model can read and correct.
func toolError(id jsonrpc.ID, msg string) *jsonrpc.Response {
	text, _ := json.Marshal(msg)
	return resultResponse(id, json.RawMessage(`{"content":[{"type":"text","text":`+string(text)+`}],"isError":true}`))
}
