package wire

// A backend asks its client things in the middle of a request: these
// requests run from server to client, so they are not in the method table
// (the gateway serves none of them, it forwards them or answers them).
// Their facts say whether the client may be asked at all.

// ServerRequest is one server-to-client request as the gateway relays it.
type ServerRequest struct {
	// Capability is the client capability a client must have declared
	// to be sent it ("sampling", "elicitation", "roots"); "" when none.
	Capability string
	// Liveness: it is answered at once with an empty result by the
	// gateway itself, never forwarded (ping).
	Liveness bool
}

var serverRequests = map[string]ServerRequest{
	"sampling/createMessage": {Capability: "sampling"},
	"elicitation/create":     {Capability: "elicitation"},
	"roots/list":             {Capability: "roots"},
	"ping":                   {Liveness: true},
}

// LookupServerRequest is method's row; ok is false for a request the
// gateway neither forwards nor answers (it answers -32601).
func LookupServerRequest(method string) (r ServerRequest, ok bool) {
	r, ok = serverRequests[method]
	return r, ok
}

// ServerRequestOf is method's row, the zero ServerRequest for one not
// known.
func ServerRequestOf(method string) ServerRequest { return serverRequests[method] }
