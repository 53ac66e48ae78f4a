package handler

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpgw/gateway/internal/wire"
)

// The refusals a newcomer meets first (an unknown vhost, a browser Origin
// or a Host not allowed, a missing or unknown session), worded to say
// what was expected and where to fix it. The client is told the value it
// sent and the config setting; the operator's log line (the request
// line's detail) is also told what the config holds, which a caller that
// is not yet authenticated is not.

// maxListed bounds the names a log detail lists.
const maxListed = 10

// refuseUnknownVHost answers 404 for a vhost the config does not have.
func (s *server) refuseUnknownVHost(w http.ResponseWriter, vhost string) {
	noteOf(w).setDetail("configured virtual hosts: " + listed(s.opts.Router.VHostNames()))
	writeHTTPError(w, http.StatusNotFound, codeInvalidRequest, fmt.Sprintf(
		"unknown virtual host %s: the MCP endpoint is /servers/{vhost}/mcp with {vhost} one of the config's virtual_hosts (GET /status lists them)",
		wire.Quote(vhost)))
}

// originRefusal is the 403's message for an Origin not allowed.
func originRefusal(origin string) string {
	return fmt.Sprintf("origin not allowed: %s is not on the config's allowed_origins (add it there, or call from a page of the gateway's own origin)",
		wire.Quote(origin))
}

// missingSession is the 400's message for a request without a session
// id that needs one.
const missingSession = "missing Mcp-Session-Id header: every request but initialize carries the session id " +
	"that the initialize answer gave in its Mcp-Session-Id header; send initialize first"

// refuseUnknownSession answers 404 for a session id that names no
// session of this caller on this vhost, the same whichever it is (so ids
// cannot be probed); the log's detail says which.
func (s *server) refuseUnknownSession(w http.ResponseWriter, why string) {
	noteOf(w).setDetail(why)
	msg := "session not found: no session with this Mcp-Session-Id for this caller on this virtual host; " +
		"it expired (sessions end after session_ttl"
	if ttl := s.opts.Router.SessionTTL(); ttl > 0 {
		msg += ", " + ttl.String()
	}
	msg += ", without use) or was deleted: send initialize for a new session"
	writeHTTPError(w, http.StatusNotFound, codeSessionNotFound, msg)
}

// listed joins at most maxListed names, saying how many more there are.
func listed(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more (GET /status lists them)", strings.Join(names[:maxListed], ", "), len(names)-maxListed)
}
