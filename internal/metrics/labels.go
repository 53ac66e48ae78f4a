package metrics

import "github.com/mcpgw/gateway/internal/wire"

// rpcLabel maps a JSON-RPC method to a label value from a closed set: the
// methods of wire's method table and the client notifications the gateway
// serves (wire.KnownName), "response" for a client's answer to a server
// request, and "other" for anything else, so made-up method names cannot
// create series. The label is the table's copy of the name: it keeps no
// reference to the request's memory.
func rpcLabel(method string) string {
	if name, ok := wire.KnownName(method); ok {
		return name
	}
	if method == "response" {
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
