package wire

// The notifications the gateway meets, one row each, the twin of the
// method table: what a layer does with a notification (forward it on a
// request's stream, drop it from a listen, drop a list cache, filter it by
// log level, stop a request) follows from its facts, not from its name.

// Notification is one MCP notification as the gateway handles it.
type Notification struct {
	// ListChanged names the server list it announces a change of
	// ("tools", "resources", "prompts"); "" for the others.
	ListChanged string
	// ResourceUpdate: it says one resource (params.uri) changed; only a
	// client that may see the resource and subscribed to it gets it.
	ResourceUpdate bool
	// Progress: it reports a request's progress under the request's
	// progressToken.
	Progress bool
	// Log: a log message with a level, sent to a client that asked for
	// messages of that level.
	Log bool
	// Cancel: it cancels the request its params.requestId names.
	Cancel bool
	// Handshake: the client says the session's handshake is done.
	Handshake bool
	// TaskStatus: a task's status changed (Tasks extension).
	TaskStatus bool
	// ListenAck: the acknowledgement a subscriptions/listen stream opens
	// with (protocol 2026-07-28).
	ListenAck bool
	// FromClient: a client sends it to the gateway (which serves it);
	// the others come from backends, or from the gateway itself.
	FromClient bool
}

// AboutRequest reports whether n belongs to one request (its progress,
// its cancellation): it never reaches a stream that is not the request's.
func (n Notification) AboutRequest() bool { return n.Progress || n.Cancel }

// AboutSession reports whether n concerns a backend session's state
// (its lists, its subscribed resources) rather than a request.
func (n Notification) AboutSession() bool { return n.ListChanged != "" || n.ResourceUpdate }

var notifications = map[string]Notification{
	"notifications/tools/list_changed":         {ListChanged: "tools"},
	"notifications/resources/list_changed":     {ListChanged: "resources"},
	"notifications/prompts/list_changed":       {ListChanged: "prompts"},
	"notifications/resources/updated":          {ResourceUpdate: true},
	"notifications/progress":                   {Progress: true, FromClient: true},
	"notifications/message":                    {Log: true},
	"notifications/cancelled":                  {Cancel: true, FromClient: true},
	"notifications/initialized":                {Handshake: true, FromClient: true},
	"notifications/roots/list_changed":         {FromClient: true},
	"notifications/tasks":                      {TaskStatus: true},
	"notifications/subscriptions/acknowledged": {ListenAck: true},
}

// NotificationOf is method's row, the zero Notification for a
// notification the gateway does not know (which it forwards untouched
// where it forwards anything).
func NotificationOf(method string) Notification { return notifications[method] }

// LookupNotification is method's row; ok is false for one not known.
func LookupNotification(method string) (n Notification, ok bool) {
	n, ok = notifications[method]
	return n, ok
}

// ListChanges are the notifications announcing that a server list
// changed, in the order a client is told of them all at once (when its
// vhost's backends change).
var ListChanges = [...]string{
	"notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed",
}
