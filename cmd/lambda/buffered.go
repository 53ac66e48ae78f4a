package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpgw/gateway/internal/wire"
)

// The API Gateway and ALB adapters hand the client the response only once
// the handler has returned. Three kinds of exchange cannot work that way:
// the standalone GET stream and protocol 2026-07-28's subscriptions/listen,
// which never return, and a server-to-client request during a call
// (sampling, elicitation, roots), whose answer the client can only send
// after it has seen the request. The middleware here turns them into
// prompt, explained failures instead of requests that hang until the API's
// integration timeout (and the invocation until the function's). A
// 2026-07-28 call's input requests need no such care: they are a result
// (input_required), answered by the client's next request.

// refuseGETStreams answers GET (and HEAD) on the MCP endpoint with 405 and
// a JSON-RPC error, as the Streamable HTTP transport allows a server that
// offers no standalone stream to do; MCP clients then simply go without it.
// Everything else, /healthz and /readyz included, passes.
func refuseGETStreams(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", next)
	// A GET pattern matches HEAD too.
	mux.HandleFunc("GET /servers/{vhost}/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "POST, DELETE")
		writeJSONRPCError(w, http.StatusMethodNotAllowed, codeInvalidRequest,
			"GET streams are not available here: this endpoint buffers responses (API Gateway or ALB), so a stream would never reach the client; "+
				"use POST requests, or the gateway's Lambda Function URL (response streaming) for GET streams")
	})
	return mux
}

// refuseListens answers a subscriptions/listen (a POST whose Mcp-Method
// header names it: the revision requires the header, and the handler
// refuses a request whose header and body disagree) with 404 and -32601,
// what the revision answers a method the server does not serve; a
// 2026-07-28 client then goes without notifications, as it would with a
// server that has none.
func refuseListens(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && wire.MethodOf(r.Header.Get("Mcp-Method")).OpenEnded && strings.HasPrefix(r.URL.Path, "/servers/") {
			// The error names the request (the adapters built the body
			// in memory); a body with no readable id gets null.
			var msg struct {
				ID json.RawMessage `json:"id"`
			}
			if r.Body != nil {
				_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&msg)
			}
			writeJSONRPCErrorFor(w, msg.ID, http.StatusNotFound, codeMethodNotFound,
				"subscriptions/listen is not available here: this endpoint buffers responses (API Gateway or ALB), so its notifications would never reach the client; "+
					"use the gateway's Lambda Function URL (response streaming) to listen")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// withoutServerRequests removes the sampling, elicitation and roots
// capabilities from the client capabilities of an initialize request.
//
// In a buffered mode the client sees a call's SSE events only after the
// call has ended, so it could never answer a backend's sampling,
// elicitation or roots request made during the call: the call would wait
// for that answer until the API's timeout (and the backend for minutes
// more). Without the capability in the session, the gateway answers such
// a request with -32601 at once and the call completes. Sessions started
// here keep this for their whole life, on any endpoint.
func withoutServerRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Body != nil && strings.HasPrefix(r.URL.Path, "/servers/") {
			// The adapters built the body from the event, so it is in
			// memory already; the handler still enforces its size limit.
			body, err := io.ReadAll(r.Body)
			_ = r.Body.Close()
			if err != nil {
				writeJSONRPCError(w, http.StatusBadRequest, codeInvalidRequest, "cannot read request body")
				return
			}
			if out, changed := stripServerRequestCapabilities(body); changed {
				body = out
				r.Header.Set("Content-Length", strconv.Itoa(len(body)))
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		next.ServeHTTP(w, r)
	})
}

// serverRequestCapabilities are the client capabilities that let a server
// send requests to the client in the middle of a call.
var serverRequestCapabilities = []string{"sampling", "elicitation", "roots"}

// stripServerRequestCapabilities rewrites one initialize request without
// serverRequestCapabilities. Anything else (other methods, batches,
// malformed JSON) is returned unchanged for the handler to judge.
func stripServerRequestCapabilities(body []byte) ([]byte, bool) {
	if !bytes.Contains(body, []byte(`"initialize"`)) {
		return body, false // cheap exit for every other request
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		return body, false
	}
	var method string
	if json.Unmarshal(msg["method"], &method) != nil || !wire.MethodOf(method).Handshake {
		return body, false
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil || params == nil {
		return body, false
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(params["capabilities"], &caps) != nil || caps == nil {
		return body, false
	}
	changed := false
	for _, name := range serverRequestCapabilities {
		if _, ok := caps[name]; ok {
			delete(caps, name)
			changed = true
		}
	}
	if !changed {
		return body, false
	}
	var err error
	if params["capabilities"], err = json.Marshal(caps); err != nil {
		return body, false
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return body, false
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return body, false
	}
	return out, true
}
