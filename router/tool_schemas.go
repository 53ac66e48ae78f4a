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
}

type toolSchemaEntry struct {
	backend string
	schemas map[string]json.RawMessage // tool name -> inputSchema
	expires time.Time
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
			delete(s.entries, k)
		}
	}
}

// toolInputSchema returns the inputSchema of tool (the backend's name) on
// backend, as the backend lists it to this call.
func (r *Router) toolInputSchema(ctx context.Context, v *vhost, c *Call, backend, tool string) (json.RawMessage, error) {
	b := v.backends[backend]
	key := listcache.Key(b.Key, "tools/list#schemas", "", b.PassthroughHeaders, c.Header)
	if v.clients[backend].PerCaller() {
		// Claim templates or token exchange: the backend may list other
		// tools, or other schemas, to each caller.
		key += "\x00" + c.Principal
	}
	s := v.schemas
	s.mu.Lock()
	e, ok := s.entries[key]
	s.mu.Unlock()
	if !ok || !time.Now().Before(e.expires) {
		got, err, _ := s.flight.Do(key, func() (any, error) {
			s.mu.Lock()
			gen := s.gen[backend]
			s.mu.Unlock()
			// Shared by every caller waiting on this key: not cancelled by
			// the first one leaving (the backend timeout still bounds it).
			schemas, err := r.walkToolSchemas(context.WithoutCancel(ctx), v, c, backend)
			if err != nil {
				return nil, err
			}
			ttl := toolSchemaTTL
			if b.ListCacheTTL > 0 {
				ttl = b.ListCacheTTL
			}
			e := toolSchemaEntry{backend: backend, schemas: schemas, expires: time.Now().Add(ttl)}
			s.mu.Lock()
			if s.gen[backend] == gen {
				if len(s.entries) >= listcache.Max {
					clear(s.entries)
				}
				s.entries[key] = e
			}
			s.mu.Unlock()
			return e, nil
		})
		if err != nil {
			return nil, err
		}
		e = got.(toolSchemaEntry)
	}
	schema, ok := e.schemas[tool]
	if !ok {
		return nil, hook.ErrNoToolSchema
	}
	return schema, nil
}

// errToolListFailed: the backend's tools/list failed, so no schema.
var errToolListFailed = errors.New("the backend's tools/list failed")

// walkToolSchemas reads every page of a backend's tools/list.
func (r *Router) walkToolSchemas(ctx context.Context, v *vhost, c *Call, backend string) (map[string]json.RawMessage, error) {
	op := listOps["tools/list"]
	schemas := map[string]json.RawMessage{}
	cursor := ""
	for range toolSchemaMaxPages {
		p := r.listOne(ctx, v, c, op, backend, cursor, false)
		if !p.queried || p.failed {
			return nil, errToolListFailed
		}
		for _, item := range p.items {
			var tool struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			}
			if json.Unmarshal(item, &tool) == nil && tool.Name != "" {
				schemas[tool.Name] = tool.InputSchema
			}
		}
		if p.next == "" {
			return schemas, nil
		}
		cursor = p.next
	}
	return schemas, nil
}
