package handler_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestAccept_QualityZeroIsNotAcceptable(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize("alice", "demo")
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	cases := []struct {
		name, accept string
		status       int
		contentType  string // of a 200 answer
	}{
		{"json with q=0 only", "application/json;q=0", 406, ""},
		{"json refused, events accepted", "application/json;q=0, text/event-stream", 200, "text/event-stream"},
		{"anything but json", "*/*, application/json; q=0", 200, "text/event-stream"},
		{"events refused", "text/event-stream;q=0, application/json", 200, "application/json"},
		{"both refused", "application/json;q=0.0, text/event-stream;q=0, */*;q=0", 406, ""},
		{"low quality is still acceptable", "application/json;q=0.1", 200, "application/json"},
		{"a wildcard type", "application/*", 200, "application/json"},
		{"everything", "*/*", 200, "application/json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(req{body: list, session: sid, headers: map[string]string{"Accept": tc.accept}})
			if r.status != tc.status {
				t.Fatalf("Accept %q: status %d, want %d: %.200s", tc.accept, r.status, tc.status, r.body)
			}
			if tc.status == http.StatusOK && !strings.HasPrefix(r.header.Get("Content-Type"), tc.contentType) {
				t.Fatalf("Accept %q: answered as %q, want %q", tc.accept, r.header.Get("Content-Type"), tc.contentType)
			}
		})
	}
	// Only the status is read: a GET that is wrongly accepted is a stream.
	hr, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, g.url+"/servers/demo/mcp", nil)
	hr.Header.Set("Accept", "text/event-stream;q=0")
	hr.Header.Set("Authorization", "Bearer "+g.token("alice"))
	hr.Header.Set("Mcp-Session-Id", sid)
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotAcceptable {
		t.Fatalf("GET with text/event-stream;q=0: status %d, want 406", res.StatusCode)
	}
}
