package router

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	federated "github.com/mcpgw/gateway/router/federation"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A vhost check walks every list of every backend of a virtual host, as a
// caller who may see everything, and keeps the published names: what
// access rules and rate limits are matched against. It answers two
// questions with the router's own machinery (discovery, backend clients,
// the publishing rule, the policy's matchers), so neither can disagree
// with what a request meets: is each backend reachable and does it list
// (gateway check --probe), and which configured patterns match nothing
// (pattern_watch.go: the start-up and reload warnings, /status).

// checkedLists are the lists whose identifiers access rules judge.
var checkedLists = []string{"tools/list", "resources/list", "resources/templates/list", "prompts/list", "skills/list"}

// maxCheckPages bounds the pages a check reads of one backend's list: a
// backend whose cursor never ends does not hold the check forever.
const maxCheckPages = 200

// BackendCheck is what a vhost check learned of one backend.
type BackendCheck struct {
	Key string
	// Err says why the backend could not be listed ("" when it was):
	// unreachable, a failed handshake, a list that failed, or credentials
	// that need a caller (per-caller or user_oauth backends).
	Err string
	// NeedsCaller: the backend's requests carry a caller's credentials
	// (header templates, token exchange, user_oauth), so a check, which
	// has no caller, may not list it; its Err then says nothing is wrong
	// with the backend (the probe skips it rather than failing).
	NeedsCaller bool
	// Tools, Resources, Templates, Prompts count what it lists.
	Tools, Resources, Templates, Prompts int
}

// VHostCheck is a virtual host's check.
type VHostCheck struct {
	VHost    string
	At       time.Time
	Backends []BackendCheck // by key
	// Complete: every backend listed. Unmatched is only meaningful then:
	// a backend that could not be listed may publish what a pattern names.
	Complete  bool
	Unmatched []policy.UnmatchedPattern
}

// CheckVHosts checks every virtual host of the current routing table, at
// once, each bounded by ctx.
func (r *Router) CheckVHosts(ctx context.Context) []VHostCheck {
	t := r.table.Load()
	names := t.names()
	out := make([]VHostCheck, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { out[i] = r.fed.checkVHost(ctx, t.vhosts[name]) })
	}
	wg.Wait()
	return out
}

// checkVHost walks v's backends concurrently and matches the patterns
// when every one of them listed.
func (fd *federation) checkVHost(ctx context.Context, v *vhost) VHostCheck {
	vc := VHostCheck{VHost: v.name, At: time.Now(), Backends: make([]BackendCheck, len(v.keys))}
	c := &Call{VHost: v.name, Header: http.Header{}, Caller: &ModernClient{}}
	c.peer = c.Caller.peer(ctx, fd.link, v, c) // every backend's discovery
	ids := make([][]string, len(v.keys))       // every identifier, per backend
	tools := make([][]string, len(v.keys))     // tool names, per backend
	var wg sync.WaitGroup
	for i, key := range v.keys {
		wg.Go(func() { vc.Backends[i], ids[i], tools[i] = fd.checkBackend(ctx, v, c, key) })
	}
	wg.Wait()
	vc.Complete = true
	var allIDs, allTools []string
	for i, b := range vc.Backends {
		vc.Complete = vc.Complete && b.Err == ""
		allIDs, allTools = append(allIDs, ids[i]...), append(allTools, tools[i]...)
	}
	if v.search != nil { // the gateway's own tools are listed too
		allIDs = append(allIDs, searchToolsName, callToolName)
	}
	if vc.Complete {
		vc.Unmatched = append(v.access.Unmatched(allIDs), v.limits.Unmatched(allTools)...)
	}
	return vc
}

// checkBackend walks one backend's lists; ids are every identifier it
// publishes (as access rules judge them), tools its tools' names.
func (fd *federation) checkBackend(ctx context.Context, v *vhost, c *Call, key string) (bc BackendCheck, ids, tools []string) {
	bc.Key, bc.NeedsCaller = key, v.clients[key].PerCaller()
	if snap := c.peer.backends[key]; !snap.OK() && snap != nil {
		bc.Err = snap.Error
		return bc, nil, nil
	}
	start := time.Now()
	for _, method := range checkedLists {
		op := listOps[method]
		cursor := ""
		for page := 0; page < maxCheckPages; page++ {
			res := fd.listOne(ctx, v, &Call{VHost: v.name, Header: c.Header, Caller: c.Caller, Request: &jsonrpc.Request{Method: method}, peer: c.peer}, op, key, cursor, false)
			if res.SignIn != nil {
				bc.Err = "needs a user's sign-in (user_oauth): not listed without one"
				return bc, nil, nil
			}
			if res.Failed {
				bc.Err = fd.checkFailure(v, key, method, start)
				return bc, nil, nil
			}
			if !res.Queried {
				break // the backend does not have this list
			}
			named, err := fd.naming(v).RenameAll(op, key, res.Items, res.Scans, false)
			if err != nil {
				bc.Err = method + ": " + err.Error()
				return bc, nil, nil
			}
			for _, n := range named {
				ids = append(ids, n.ID)
			}
			countListed(&bc, op.Field, len(named), named, &tools)
			if cursor = res.Next; cursor == "" {
				break
			}
		}
	}
	return bc, ids, tools
}

// countListed adds a page's items to the backend's counts.
func countListed(bc *BackendCheck, field string, n int, named []federated.Item, tools *[]string) {
	switch field {
	case "tools":
		bc.Tools += n
		for _, it := range named {
			*tools = append(*tools, it.ID)
		}
	case "resources":
		bc.Resources += n
	case "resourceTemplates":
		bc.Templates += n
	case "prompts":
		bc.Prompts += n
	}
}

// checkFailure is why a backend's list failed: its last failure since the
// check began, as a client would have been told it.
func (fd *federation) checkFailure(v *vhost, key, method string, since time.Time) string {
	if f := v.health[key].failure.Load(); f != nil && !f.At.Before(since) {
		return f.Message
	}
	return method + " failed"
}

// names are the table's vhost names, sorted.
func (t *routingTable) names() []string {
	out := make([]string, 0, len(t.vhosts))
	for name := range t.vhosts {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
