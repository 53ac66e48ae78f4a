package router

import (
	"time"

	"github.com/mcpgw/gateway/internal/servercard"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/upstream"
)

// SessionMode says how a backend's own MCP session is handled: who a
// backend session belongs to, and so whose calls share the state a
// stateful backend keeps in it. Whatever the mode, a backend session is
// never shared by two principals (see backend_session_owner.go).
type SessionMode string

const (
	// SessionAuto (the default) makes a backend behave as it does for a
	// client connected DIRECT: a 2026-07-28 backend gets one exchange per
	// request; a backend that hands out session ids at initialize gets one
	// backend session per gateway session (as SessionReuse), so a stateful
	// server keeps its state across a 2025 client's calls and only the
	// first call pays its initialize; a sessionless (2026-07-28) caller
	// gets a backend session of its own per request. It is the default
	// because it is what the backend's author tested against, and because
	// a per-request session costs a stateful server's initialize (about a
	// second for FastMCP) on every call and loses the state between them.
	SessionAuto SessionMode = "auto"
	// SessionPerRequest opens a fresh backend session for each routed
	// request and closes it (DELETE) after: nothing is kept.
	SessionPerRequest SessionMode = "per-request"
	// SessionReuse keeps one backend session per gateway session, its id
	// in the session's snapshot in the store, and always opens it with the
	// session handshake, even on a backend that also speaks 2026-07-28. A
	// sessionless caller gets a per-request backend session.
	SessionReuse SessionMode = "reuse"
	// SessionPerPrincipal keeps one backend session per principal, vhost
	// and backend, its id in the store, opened with that principal's
	// credentials, and used by every client of the principal, sessionless
	// or not: the backend's state is shared by all of them (and by no one
	// else).
	SessionPerPrincipal SessionMode = "per-principal"
)

// SessionModes lists the modes in the order config errors name them.
var SessionModes = []SessionMode{SessionAuto, SessionPerRequest, SessionReuse, SessionPerPrincipal}

// Backend is one configured upstream MCP server of a virtual host.
type Backend struct {
	// Config is how to reach the backend (key, URL, transport, timeout,
	// header policy): what the backend client takes, as it is. Its Key is
	// the backend map key, the public prefix on multi-backend vhosts.
	upstream.Config
	// ToolNameAliases maps a downstream alias to the backend's tool name.
	ToolNameAliases map[string]string
	// Session is who the backend's own sessions belong to (SessionMode);
	// "" is SessionAuto.
	Session SessionMode
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
	// ToolSearch, when set, lists a search instead of every tool
	// (tool_search.go); nil: tools/list lists every tool.
	ToolSearch *ToolSearch
}

// ToolSearch is a virtual host's tool_search block, compiled.
type ToolSearch struct {
	// Always matches the published names of the tools still listed
	// (besides those whose _meta says anthropic/alwaysLoad: true); nil:
	// none.
	Always *policy.Names
	// Results is how many tools a search returns when it does not say:
	// 1 to MaxSearchResults (0: DefaultSearchResults).
	Results int
}

// DefaultSearchResults and MaxSearchResults are ToolSearch.Results's
// default and bound (a search's own limit argument has the same bound).
const (
	DefaultSearchResults = 10
	MaxSearchResults     = 50
)
