package router

import (
	"github.com/mcpgw/gateway/internal/servercard"
	"maps"
	"reflect"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	federated "github.com/mcpgw/gateway/router/federation"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/listcache"
	"github.com/mcpgw/gateway/router/naming"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/upstream"
)

// vhost is the compiled routing state of one virtual host: everything the
// router derives from config once, so the request path only does lookups.
type vhost struct {
	name     string
	backends map[string]*Backend
	keys     []string // sorted lexically: fan-out and merge order
	split    *naming.Splitter
	aliases  *naming.Aliases
	clients  map[string]*upstream.Client
	lists    *listcache.Cache[*federated.Page] // pages of backends with ListCacheTTL; dies with the table
	// discovered caches what each backend speaks, for 2026-07-28 requests
	// (discovery.go); it dies with the table.
	discovered *discoveryCache
	access     *policy.AccessPolicy    // nil: no access rules
	hooks      []hook.Hook             // the vhost's plugins, after Options.Hooks
	limits     *policy.RateLimitPolicy // nil: no rate limits
	// allowance holds requests of batched limits taken ahead (policy/allowance.go).
	allowance *policy.Allowance
	// schemas caches the backends' tool input schemas for plugins that
	// validate arguments (tool_schemas.go); it dies with the table.
	schemas *toolSchemas
	// runsTasks: a backend has a tasks: block (tasks_run.go).
	runsTasks bool
	// search: the vhost lists a search instead of every tool
	// (tool_search.go); nil without tool_search.
	search *toolSearch
	// health is what the instance learned of each backend (status.go);
	// the map is fixed at construction, so reading it needs no lock.
	health map[string]*backendHealth
	// card is the vhost's Server Card settings (cards.go).
	card *servercard.Config
	// patterns is the latest check of the vhost's patterns, nil before
	// the first (pattern_watch.go); recheck asks its watcher for another.
	patterns atomic.Pointer[VHostCheck]
	recheck  chan struct{}
}

// single reports whether identifiers pass through unchanged.
func (v *vhost) single() bool { return len(v.keys) == 1 }

// routingTable is the immutable set of virtual hosts the router serves.
type routingTable struct {
	vhosts map[string]*vhost
	// retired is closed when a reload replaces the table: its pattern
	// watchers stop (pattern_watch.go).
	retired chan struct{}
}

func newRoutingTable(vhosts map[string]*VirtualHost) *routingTable {
	return buildRoutingTable(vhosts, nil)
}

// buildRoutingTable compiles vhosts. A stdio backend that prev has with
// the same config keeps its client, so its pool of processes (warm,
// perhaps in use) survives a reload; every other backend gets a new
// client. opts go to each new client.
func buildRoutingTable(vhosts map[string]*VirtualHost, prev *routingTable, opts ...upstream.Option) *routingTable {
	t := &routingTable{vhosts: map[string]*vhost{}, retired: make(chan struct{})}
	for name, vh := range vhosts {
		v := &vhost{
			name:     name,
			backends: vh.Backends,
			clients:  map[string]*upstream.Client{},
			aliases:  naming.NewAliases(toolAliases(vh.Backends)),
			lists:    listcache.New[*federated.Page](slices.Collect(maps.Keys(vh.Backends))),
			health:   map[string]*backendHealth{},
			card:     vh.Card,

			discovered: newDiscoveryCache(),
			access:     vh.Access,
			hooks:      vh.Hooks,
			limits:     vh.RateLimits,
			allowance:  policy.NewAllowance(vh.RateLimits),
			schemas:    newToolSchemas(),
			search:     newToolSearch(vh.ToolSearch),
			recheck:    make(chan struct{}, 1),
		}
		for key, b := range vh.Backends {
			v.keys = append(v.keys, key)
			v.health[key] = &backendHealth{}
			v.runsTasks = v.runsTasks || b.Tasks != nil
			if c := prev.sameStdioClient(name, key, b); c != nil {
				v.clients[key] = c
				continue
			}
			cfg := b.Config
			cfg.Key = key // the map key is the backend's name, whatever the literal says
			if cfg.Stdio != nil {
				stdio := *cfg.Stdio // b is config's, compared on reload: not written
				stdio.VHost = name  // named in the pool's log lines
				cfg.Stdio = &stdio
			}
			v.clients[key] = upstream.New(cfg, opts...)
		}
		sort.Strings(v.keys)
		v.split = naming.NewSplitter(v.keys)
		t.vhosts[name] = v
	}
	return t
}

// sameStdioClient returns t's client of a stdio backend configured
// exactly as b, or nil.
func (t *routingTable) sameStdioClient(vh, key string, b *Backend) *upstream.Client {
	if t == nil || b.Transport != upstream.TransportStdio {
		return nil
	}
	v, ok := t.vhosts[vh]
	if !ok || v.backends[key] == nil || !reflect.DeepEqual(v.backends[key], b) {
		return nil
	}
	return v.clients[key]
}

// close releases the table's backend clients. A stdio backend's close
// waits for its processes.
func (t *routingTable) close() { t.closeExcept(nil) }

// closeExcept is close, sparing the clients next took over.
func (t *routingTable) closeExcept(next *routingTable) {
	kept := map[*upstream.Client]bool{}
	if next != nil {
		for _, v := range next.vhosts {
			for _, c := range v.clients {
				kept[c] = true
			}
		}
	}
	var wg sync.WaitGroup
	for _, v := range t.vhosts {
		for _, c := range v.clients {
			if !kept[c] {
				wg.Go(c.Close)
			}
		}
	}
	wg.Wait()
}

// toolAliases is each backend's tool_name_aliases, by backend key.
func toolAliases(backends map[string]*Backend) map[string]map[string]string {
	out := make(map[string]map[string]string, len(backends))
	for key, b := range backends {
		out[key] = b.ToolNameAliases
	}
	return out
}

// publishedURI is the URI under which a backend's resource is listed and
// subscribed to on v: the name access rules judge.
func (v *vhost) publishedURI(backend, uri string) string {
	if v.single() {
		return uri
	}
	return naming.PublishURI(backend, uri)
}

// Reload swaps in a new set of virtual hosts. Requests already running
// finish on the old table; new ones use the new. It returns the names of
// the vhosts whose backends or access rules changed, for the session
// runtime to tell their GET streams (session.Runtime.VHostsChanged: tools,
// resources and prompts list_changed, since the gateway's lists may have
// changed even if no backend's did, and rebuilt listeners).
//
// Each instance reloads its own config, so each notifies the streams it
// holds; no cross-instance traffic is needed.
func (r *Router) Reload(vhosts map[string]*VirtualHost) []string {
	prev := r.table.Load()
	next := buildRoutingTable(vhosts, prev, r.clientOptions()...)
	prev = r.table.Swap(next)
	changed := map[string]bool{}
	var names []string
	for name, v := range next.vhosts {
		if old, ok := prev.vhosts[name]; !ok || !reflect.DeepEqual(old.backends, v.backends) || !old.access.Equal(v.access) || !old.search.equal(v.search) {
			changed[name] = true
			names = append(names, name)
		}
	}
	for name := range prev.vhosts {
		if _, ok := next.vhosts[name]; !ok {
			changed[name] = true
			names = append(names, name)
		}
	}
	// In the background: a stdio backend's pool waits for the requests
	// still using its processes (Router.Close waits for it).
	r.cleanup.Go(func() { prev.closeExcept(next) })
	close(prev.retired)
	r.fed.watchTable(next)
	return names
}
