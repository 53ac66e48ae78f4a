package wire

import (
	"maps"
	"slices"
)

// The MCP methods the gateway serves, one row each: every fact a layer
// switches on (does it target one backend, which params field Mcp-Name
// mirrors, may it answer input_required, do hooks run, is it served in
// 2026-07-28, do its results carry cache hints, is it audited) is read
// from this table, so adding a method is adding a row. Its twins hold the
// notifications (notifications.go) and the requests a backend sends its
// client (server_requests.go).

// Method is one MCP method as the gateway serves it.
type Method struct {
	// Routed, for a method that targets one object and so one backend,
	// names the kind of identifier it routes on, for messages ("tool",
	// "resource", "prompt", "reference"); "" for the others.
	Routed string
	// NameField is the params field a 2026-07-28 request's Mcp-Name
	// header mirrors ("name", "uri"); "" when it has none.
	NameField string
	// MultiRoundTrip: a 2026-07-28 request may be answered input_required.
	MultiRoundTrip bool
	// Hooked: pre- and post-hooks (plugins) run around it.
	Hooked bool
	// Modern: served in protocol 2026-07-28 (its removed methods are
	// unknown there: 404, -32601).
	Modern bool
	// Cacheable: its complete 2026-07-28 results carry ttlMs and
	// cacheScope.
	Cacheable bool
	// Session: served only to a 2025-era session.
	Session bool
	// Task: a method of the Tasks extension (SEP-2663), routed by the
	// sealed task id in params.taskId, which Mcp-Name mirrors.
	Task bool
	// TaskAction is what a Task method does to its task.
	TaskAction TaskAction
	// Handshake: it opens a session (the backend may answer with an
	// Mcp-Session-Id; a client's capabilities arrive in it).
	Handshake bool
	// Liveness: answered at once with an empty result, by whoever
	// receives it; nothing else follows from it.
	Liveness bool
	// OpenEnded: its answer is a stream with no end of its own (it lasts
	// while the client listens), so buffering and deadlines do not apply.
	OpenEnded bool
	// Tool: it runs a backend's tool: params.arguments follow the tool's
	// inputSchema (plugins validate them, the audit records them) and a
	// result may report isError.
	Tool bool
	// RateLimited: a vhost's rate limits count it.
	RateLimited bool
	// Taskable: the gateway may run it as a task (Tasks extension) for a
	// backend configured so.
	Taskable bool
	// ParamHeaders: a 2026-07-28 request mirrors the arguments its
	// target's schema marks (x-mcp-header) in Mcp-Param-* headers.
	ParamHeaders bool
	// Arguments is the params field that holds what the client chose of
	// a hooked request ("arguments", "uri"); "" when it has none.
	Arguments string
	// Subscription is what it does to the session's resource
	// subscriptions, which the backend session holds.
	Subscription Subscription
	// ResultURIs says where its result names the backend's own
	// resources, which a multi-backend vhost renames.
	ResultURIs ResultURIs
}

// TaskAction is what a method of the Tasks extension does to its task.
type TaskAction uint8

const (
	// TaskNone: not a Task method.
	TaskNone TaskAction = iota
	// TaskReads: it reads the task's status, and its result once it has
	// one (tasks/get).
	TaskReads
	// TaskAnswers: it answers the task's input requests (tasks/update).
	TaskAnswers
	// TaskCancels: it cancels the task (tasks/cancel).
	TaskCancels
)

// Subscription is a method's effect on a session's resource
// subscriptions.
type Subscription uint8

const (
	// SubscriptionNone: it does not change them.
	SubscriptionNone Subscription = iota
	// Subscribes: it adds one (resources/subscribe).
	Subscribes
	// Unsubscribes: it drops one, which is never refused, so a client
	// can drop a subscription to a resource it no longer sees.
	Unsubscribes
)

// ResultURIs is where a method's result names resources.
type ResultURIs uint8

const (
	// URIsNone: its result names none.
	URIsNone ResultURIs = iota
	// URIsInContent: content blocks in result.content (resource links,
	// embedded resources) and a tool's UI resource in result._meta.
	URIsInContent
	// URIsInMessages: content blocks in each of result.messages.
	URIsInMessages
	// URIsInContents: the uri of each of result.contents.
	URIsInContents
	// URIsInChildren: the uri of each of result.resources (a
	// directory's children).
	URIsInChildren
	// URIsInSkill: the skill a result describes, which is kept byte for
	// byte where nothing changes.
	URIsInSkill
)

var methods = map[string]Method{
	"initialize":               {Session: true, Handshake: true},
	"ping":                     {Session: true, Liveness: true},
	"logging/setLevel":         {Session: true},
	"server/discover":          {Modern: true, Cacheable: true},
	"subscriptions/listen":     {Modern: true, OpenEnded: true},
	"tools/list":               {Modern: true, Cacheable: true},
	"prompts/list":             {Modern: true, Cacheable: true},
	"resources/list":           {Modern: true, Cacheable: true},
	"resources/templates/list": {Modern: true, Cacheable: true},
	"tools/call": {Routed: "tool", NameField: "name", MultiRoundTrip: true, Hooked: true, Modern: true,
		Tool: true, RateLimited: true, Taskable: true, ParamHeaders: true, Arguments: "arguments", ResultURIs: URIsInContent},
	"prompts/get": {Routed: "prompt", NameField: "name", MultiRoundTrip: true, Hooked: true, Modern: true,
		Arguments: "arguments", ResultURIs: URIsInMessages},
	"resources/read": {Routed: "resource", NameField: "uri", MultiRoundTrip: true, Hooked: true, Modern: true, Cacheable: true,
		Arguments: "uri", ResultURIs: URIsInContents},
	"resources/subscribe":   {Routed: "resource", Session: true, Subscription: Subscribes},
	"resources/unsubscribe": {Routed: "resource", Session: true, Subscription: Unsubscribes},
	"completion/complete":   {Routed: "reference", Modern: true},
	"tasks/get":             {NameField: "taskId", Modern: true, Task: true, TaskAction: TaskReads},
	"tasks/update":          {NameField: "taskId", Modern: true, Task: true, TaskAction: TaskAnswers},
	"tasks/cancel":          {NameField: "taskId", Modern: true, Task: true, TaskAction: TaskCancels},
	// The Skills extension (SEP-2640): skills/list fans out like the
	// lists above; skills/get and resources/directory/read route by URI
	// like resources/read (no Mcp-Name: the revision mirrors none for them).
	"skills/list":              {Modern: true, Cacheable: true},
	"skills/get":               {Routed: "skill", Modern: true, Cacheable: true, ResultURIs: URIsInSkill},
	"resources/directory/read": {Routed: "resource", Modern: true, ResultURIs: URIsInChildren},
}

// ExtensionTasks is the Tasks extension's id (SEP-2663).
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// ExtensionSkills is the Skills extension's id (SEP-2640).
const ExtensionSkills = "io.modelcontextprotocol/skills"

// LookupMethod is method's row; ok is false for a method the gateway does
// not serve (notifications are not in the table).
func LookupMethod(method string) (m Method, ok bool) {
	m, ok = methods[method]
	return m, ok
}

// MethodOf is method's row, the zero Method for one not served.
func MethodOf(method string) Method { return methods[method] }

// Audited reports whether the method's requests go to the audit trail:
// the routed ones, each a caller's use of one backend's tool, prompt or
// resource.
func (m Method) Audited() bool { return m.Routed != "" }

// MethodNames are the table's methods, sorted: what a layer that keeps a
// row per method (the router's dispatch, metrics labels) is tested
// against, so a method added here without its row fails a test.
func MethodNames() []string { return slices.Sorted(maps.Keys(methods)) }

// ClientNotifications are the notifications a client sends that the
// gateway serves (they are not in the method table: no answer, no row).
var ClientNotifications = [...]string{
	"notifications/initialized", "notifications/cancelled", "notifications/progress", "notifications/roots/list_changed",
}

// names holds the table's own copy of every method and client
// notification name: a label made from it keeps no reference to a
// request's memory.
var names = func() map[string]string {
	m := make(map[string]string, len(methods)+len(ClientNotifications))
	for k := range methods {
		m[k] = k
	}
	for _, n := range ClientNotifications {
		m[n] = n
	}
	return m
}()

// KnownName is the table's copy of method when the gateway serves it (a
// method or a client notification); ok is false for any other name.
func KnownName(method string) (name string, ok bool) {
	name, ok = names[method]
	return name, ok
}

// LogLevels are MCP's log levels (logging/setLevel, a 2026-07-28
// request's _meta logLevel, notifications/message), least severe first.
var LogLevels = [...]string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// LogLevelRank is level's place in LogLevels, from 1; 0 for a string
// that is not a level.
func LogLevelRank(level string) int {
	for i, l := range LogLevels {
		if l == level {
			return i + 1
		}
	}
	return 0
}

// ValidLogLevel reports whether level is an MCP log level.
func ValidLogLevel(level string) bool { return LogLevelRank(level) > 0 }
