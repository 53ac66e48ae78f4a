package router

import (
	"time"

	"github.com/mcpgw/gateway/internal/servercard"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/upstream"
)

// SessionMode says how a backend's own MCP session is handled.
type SessionMode string

const (
	// SessionPerRequest opens a fresh backend session for each routed request (default).
	SessionPerRequest SessionMode = "per-request"
	// SessionReuse keeps the backend's session id in the store and reuses it.
	SessionReuse SessionMode = "reuse"
)

// Backend is one configured upstream MCP server of a virtual host.
type Backend struct {
	// Config is how to reach the backend (key, URL, transport, timeout,
	// header policy): what the backend client takes, as it is. Its Key is
	// the backend map key, the public prefix on multi-backend vhosts.
	upstream.Config
	// ToolNameAliases maps a downstream alias to the backend's tool name.
	ToolNameAliases map[string]string
	Session         SessionMode
	// ListCacheTTL, when positive, caches this backend's list pages on
	// each instance for that long (see router/listcache); 0 turns it off.
	ListCacheTTL time.Duration
	// Tasks, when set, names the tools the gateway runs as tasks for this
	// backend, which does not implement the Tasks extension itself (its
	// tasks: block; tasks_run.go). nil: none.
	Tasks TaskPolicy
}

// TaskMode is how the gateway runs one tool of a backend with a tasks:
// block.
type TaskMode string

const (
	// TaskNever: a plain call.
	TaskNever TaskMode = ""
	// TaskOptional: a task when the request declares the extension, a
	// plain call otherwise.
	TaskOptional TaskMode = "optional"
	// TaskRequired: only as a task; -32021 without the extension.
	TaskRequired TaskMode = "required"
)

// TaskPolicy is a backend's tasks: block, compiled (internal/config).
// Tool names are the backend's own.
type TaskPolicy interface {
	Mode(tool string) TaskMode
	// InputFirst: the tool's first question is answered before its task
	// is created (input_before_task).
	InputFirst(tool string) bool
	// ResultTTL is how long a finished task is kept.
	ResultTTL() time.Duration
}

// VirtualHost is one /servers/{name}/mcp endpoint and its backends.
type VirtualHost struct {
	Name     string
	Backends map[string]*Backend
	// Access, when set, limits what each caller sees (CompileAccess);
	// nil: every caller sees every name.
	Access *policy.AccessPolicy
	// Hooks run around this vhost's tools/call, prompts/get and
	// resources/read, after the router-wide Options.Hooks, in order: the
	// configured plugins (package plugins).
	Hooks []hook.Hook
	// RateLimits, when set, count this vhost's tools/call requests in the
	// store (CompileRateLimits); nil: no limits.
	RateLimits *policy.RateLimitPolicy
	// Card is the vhost's Server Card settings (SEP-2127; config
	// virtual_hosts.X.card): nil for the defaults, Off to publish none.
	// The router only keeps them with the vhost (CardOf), so a reload
	// changes cards with the routing table they describe.
	Card *servercard.Config
}
