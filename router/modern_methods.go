package router

// The methods of protocol 2026-07-28, as the gateway serves them. Its
// removed methods (initialize, ping, logging/setLevel, resources/subscribe
// and unsubscribe) are unknown in that generation: HTTP 404 and -32601,
// like any method it never had.
var modernMethods = map[string]bool{
	"server/discover":          true,
	"subscriptions/listen":     true,
	"tools/list":               true,
	"tools/call":               true,
	"prompts/list":             true,
	"prompts/get":              true,
	"resources/list":           true,
	"resources/templates/list": true,
	"resources/read":           true,
	"completion/complete":      true,
}

// ModernMethod reports whether method is a request of protocol 2026-07-28.
func ModernMethod(method string) bool { return modernMethods[method] }

// NameField names the params field a modern request's Mcp-Name header
// mirrors ("name" or "uri"), or "" for a method without one.
func NameField(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	}
	return ""
}

// multiRoundTrip reports whether a method may answer input_required
// (protocol 2026-07-28's multi-round-trip requests).
func multiRoundTrip(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read":
		return true
	}
	return false
}

// logLevels are the levels of logging/setLevel and of a modern request's
// _meta logLevel, least severe first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// ValidLogLevel reports whether level is an MCP log level.
func ValidLogLevel(level string) bool {
	for _, l := range logLevels {
		if l == level {
			return true
		}
	}
	return false
}
