package router

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/listcache"
	"golang.org/x/sync/singleflight"
)

// Plugins that check a tools/call's arguments against the tool's
// inputSchema (validate_arguments) need the schema the backend lists. It
// comes from the backend's own tools/list, walked whole, and is kept per
// instance like the list cache: keyed by backend and the passthrough
// headers it is sent (listcache.Key), and by caller when the backend's
// requests carry per-caller credentials, for the backend's list_cache TTL or
// toolSchemaTTL, dropped on the backend's list_changed and with the
// routing table on reload. Concurrent misses share one walk. It is a
// cache, never session state: losing it costs one walk.
//
// On a vhost with tool_search the same walk also indexes the tools for
// search (tool_search_index.go): one walk, one entry and one invalidation
// serve both, so a backend's list_changed reaches its schemas and its
// search together.

// toolSchemaTTL is how long a backend's schemas are trusted when the
// backend has no list_cache of its own.
const toolSchemaTTL = 30 * time.Second

// toolSchemaMaxPages bounds the walk of one backend's tools/list.
const toolSchemaMaxPages = 100

type toolSchemas struct {
	mu      sync.Mutex
	entries map[string]toolSchemaEntry
	gen     map[string]uint64 // invalidations per backend, as in listcache.Cache
	flight  singleflight.Group
	indexed int // bytes the entries' search indexes hold, at most maxIndexedBytes
}

type toolSchemaEntry struct {
	backend string
	schemas map[string]json.RawMessage // tool name -> inputSchema
	expires time.Time
	// search is the backend's tools indexed for search; nil unless the
	// vhost has tool_search.
	search *indexedTools
}

func newToolSchemas() *toolSchemas {
	return &toolSchemas{entries: map[string]toolSchemaEntry{}, gen: map[string]uint64{}}
}

func (s *toolSchemas) invalidate(backend string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen[backend]++
	for k, e := range s.entries {
		if e.backend == backend {
			s.drop(k, e)
		}
	}
}

// drop removes entry k (e); s.mu is held.
func (s *toolSchemas) drop(k string, e toolSchemaEntry) {
	delete(s.entries, k)
	s.indexed -= e.search.size()
}

// put adds entry k; s.mu is held. Past listcache.Max entries, or
// maxIndexedBytes held by search indexes, the entries are dropped
// first: a cache, bounded, that costs a walk when it forgets.
func (s *toolSchemas) put(k string, e toolSchemaEntry) {
	if old, ok := s.entries[k]; ok {
		s.drop(k, old)
	}
	if len(s.entries) >= listcache.Max || s.indexed+e.search.size() > maxIndexedBytes {
		clear(s.entries)
		s.indexed = 0
	}
	s.entries[k] = e
	s.indexed += e.search.size()
}

// toolInputSchema returns the inputSchema of tool (the backend's name) on
// backend, as the backend lists it to this call.
func (fd *federation) toolInputSchema(ctx context.Context, v *vhost, c *Call, backend, tool string) (json.RawMessage, error) {
	e, err := fd.toolEntry(ctx, v, c, backend)
	if err != nil {
		return nil, err
	}
	schema, ok := e.schemas[tool]
	if !ok {
		return nil, hook.ErrNoToolSchema
	}
	return schema, nil
}

// toolEntry is backend's tools as the backend lists them to this call:
// from the cache, or walked now.
func (fd *federation) toolEntry(ctx context.Context, v *vhost, c *Call, backend string) (toolSchemaEntry, error) {
	e, key, ok := fd.cachedToolEntry(v, c, backend)
	if !ok {
		b := v.backends[backend]
		s := v.schemas
		got, err, _ := s.flight.Do(key, func() (any, error) {
			s.mu.Lock()
			gen := s.gen[backend]
			s.mu.Unlock()
			// Shared by every caller waiting on this key: not cancelled by
			// the first one leaving (the backend timeout still bounds it).
			e, err := fd.walkToolSchemas(context.WithoutCancel(ctx), v, c, backend)
			if err != nil {
				return nil, err
			}
			ttl := toolSchemaTTL
			if b.ListCacheTTL > 0 {
				ttl = b.ListCacheTTL
			}
			e.expires = time.Now().Add(ttl)
			s.mu.Lock()
			if s.gen[backend] == gen {
				s.put(key, e)
			}
			s.mu.Unlock()
			return e, nil
		})
		if err != nil {
			return toolSchemaEntry{}, err
		}
		e = got.(toolSchemaEntry)
	}
	return e, nil
}

// cachedToolEntry is backend's entry for this call when the cache holds
// a fresh one; key is the entry's key either way.
func (fd *federation) cachedToolEntry(v *vhost, c *Call, backend string) (e toolSchemaEntry, key string, ok bool) {
	b := v.backends[backend]
	key = listcache.Key(b.Key, "tools/list#schemas", "", b.PassthroughHeaders, c.Header)
	if v.clients[backend].PerCaller() {
		// Claim templates or token exchange: the backend may list other
		// tools, or other schemas, to each caller.
		key += "\x00" + c.Principal
	}
	s := v.schemas
	s.mu.Lock()
	e, ok = s.entries[key]
	s.mu.Unlock()
	return e, key, ok && time.Now().Before(e.expires)
}

// errToolListFailed: the backend's tools/list failed, so no schema.
var errToolListFailed = errors.New("the backend's tools/list failed")

// walkToolSchemas reads every page of a backend's tools/list: the
// tools' schemas, and on a vhost with tool_search the tools indexed.
func (fd *federation) walkToolSchemas(ctx context.Context, v *vhost, c *Call, backend string) (toolSchemaEntry, error) {
	op := listOps["tools/list"]
	e := toolSchemaEntry{backend: backend, schemas: map[string]json.RawMessage{}}
	var ix *toolIndexer
	if v.search != nil {
		ix = fd.newToolIndexer(v, backend)
	}
	cursor := ""
	for range toolSchemaMaxPages {
		p := fd.listOne(ctx, v, c, op, backend, cursor, false)
		if !p.Queried || p.Failed {
			return e, errToolListFailed
		}
		for _, item := range p.Items {
			var tool struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			}
			if json.Unmarshal(item, &tool) == nil && tool.Name != "" {
				e.schemas[tool.Name] = tool.InputSchema
				ix.add(tool.Name, item)
			}
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	e.search = ix.build()
	return e, nil
}
