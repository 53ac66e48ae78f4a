package metrics

// rpcLabel maps a JSON-RPC method to a label value from a closed set: the
// MCP methods (of either protocol generation) and client notifications
// the gateway serves, "response" for a client's answer to a server
// request, and "other" for anything else, so made-up method names cannot
// create series. Returning constants also keeps no reference to the
// request's memory.
func rpcLabel(method string) string {
	switch method {
	case "initialize":
		return "initialize"
	case "ping":
		return "ping"
	case "tools/list":
		return "tools/list"
	case "tools/call":
		return "tools/call"
	case "resources/list":
		return "resources/list"
	case "resources/read":
		return "resources/read"
	case "resources/templates/list":
		return "resources/templates/list"
	case "resources/subscribe":
		return "resources/subscribe"
	case "resources/unsubscribe":
		return "resources/unsubscribe"
	case "prompts/list":
		return "prompts/list"
	case "prompts/get":
		return "prompts/get"
	case "completion/complete":
		return "completion/complete"
	case "server/discover":
		return "server/discover"
	case "subscriptions/listen":
		return "subscriptions/listen"
	case "skills/list":
		return "skills/list"
	case "skills/get":
		return "skills/get"
	case "resources/directory/read":
		return "resources/directory/read"
	case "logging/setLevel":
		return "logging/setLevel"
	case "notifications/initialized":
		return "notifications/initialized"
	case "notifications/cancelled":
		return "notifications/cancelled"
	case "notifications/progress":
		return "notifications/progress"
	case "notifications/roots/list_changed":
		return "notifications/roots/list_changed"
	case "response":
		return "response"
	}
	return "other"
}

// httpMethodLabel bounds the method label: any other verb is "other".
func httpMethodLabel(method string) string {
	switch method {
	case "GET":
		return "GET"
	case "POST":
		return "POST"
	case "DELETE":
		return "DELETE"
	case "OPTIONS":
		return "OPTIONS"
	case "HEAD":
		return "HEAD"
	}
	return "other"
}
