package handler_test

import (
	"net/http"
	"strings"
	"testing"
)

// firstEventID returns the id of the first SSE event of an event-stream body.
func firstEventID(t *testing.T, body string) string {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			return id
		}
	}
	t.Fatalf("no event id in %q", body)
	return ""
}

// A Last-Event-ID the log never issued is refused at once: a stream that
// does not exist is not held open, and an id from the future, which would
// swallow every later event, is not taken as a position.
func TestResume_RefusesIDsTheLogNeverIssued(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize("alice", "demo")
	// A finished call answered as a stream: it can be resumed to its end.
	call := g.do(req{session: sid, headers: map[string]string{"Accept": "text/event-stream"},
		body: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"gateway-one-progress","arguments":{"steps":2},"_meta":{"progressToken":"p"}}}`})
	if call.status != http.StatusOK || !strings.Contains(call.body, `"id":9`) {
		t.Fatalf("streamed call: %d %s", call.status, call.body)
	}
	first := firstEventID(t, call.body)
	stream, _, ok := strings.Cut(first, "_")
	if !ok {
		t.Fatalf("first event id %q is not a call stream's", first)
	}

	for _, tc := range []struct {
		name, lastEventID string
		want              int
	}{
		{"unknown call stream", "nosuchstream_1-0", http.StatusBadRequest},
		{"call stream id from the future", stream + "_99999999999999-0", http.StatusBadRequest},
		{"session stream id from the future", "99999999999999-0", http.StatusBadRequest},
		{"malformed", "not-an-id", http.StatusBadRequest},
		{"the call's own first event", first, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(req{method: http.MethodGet, session: sid,
				headers: map[string]string{"Accept": "text/event-stream", "Last-Event-ID": tc.lastEventID}})
			if r.status != tc.want {
				t.Fatalf("GET with Last-Event-ID %q: %d %s, want %d", tc.lastEventID, r.status, r.body, tc.want)
			}
			if tc.want == http.StatusOK && !strings.Contains(r.body, `"id":9`) {
				t.Fatalf("resumed stream %q does not end with the call's answer", r.body)
			}
			if tc.want == http.StatusBadRequest && r.rpc.Error == nil {
				t.Fatalf("no JSON-RPC error in %q", r.body)
			}
		})
	}
}
