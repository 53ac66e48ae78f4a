package handler

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/mcpgw/gateway/internal/metrics"
)

func TestPublishedName_ReadsTheRoutedIdentifier(t *testing.T) {
	cases := []struct{ method, params, want string }{
		{"tools/call", `{"name":"gateway-one-echo","arguments":{}}`, "gateway-one-echo"},
		{"prompts/get", `{"name":"gateway-two-greeting"}`, "gateway-two-greeting"},
		{"resources/read", `{"uri":"gateway-one-test://x"}`, "gateway-one-test://x"},
		{"resources/subscribe", `{"uri":"u://1"}`, "u://1"},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"p"}}`, "p"},
		{"completion/complete", `{"ref":{"type":"ref/resource","uri":"r://t"}}`, "r://t"},
		{"tools/list", `{"cursor":"c"}`, ""},
		{"tools/call", `not json`, ""},
		{"tools/call", ``, ""},
	}
	for _, c := range cases {
		if got := publishedName(c.method, json.RawMessage(c.params)); got != c.want {
			t.Errorf("publishedName(%s, %s) = %q, want %q", c.method, c.params, got, c.want)
		}
	}
}

func TestMCPPathVHost_OnlyForTheMCPEndpoint(t *testing.T) {
	for path, want := range map[string]string{"/servers/demo/mcp": "demo", "/healthz": "", "/metrics": "", "/servers/demo": ""} {
		got, ok := mcpPathVHost(path)
		if got != want || ok != (want != "") {
			t.Errorf("mcpPathVHost(%q) = %q %v", path, got, ok)
		}
	}
}

// The note is found through the writers that middleware wraps around the
// request log's, and a writer without one takes notes harmlessly.
func TestNoteOf_FindsTheNoteThroughWrappers(t *testing.T) {
	lw := &loggedWriter{StatusWriter: metrics.StatusWriter{ResponseWriter: httptest.NewRecorder()}}
	wrapped := &metrics.StatusWriter{ResponseWriter: lw}
	noteOf(wrapped).setError(-32602)
	noteOf(wrapped).setSession("sid")
	if !lw.note.hasCode || lw.note.code != -32602 || lw.note.session != "sid" {
		t.Fatalf("note %+v", lw.note)
	}
	noteOf(httptest.NewRecorder()).setError(1) // no log in the chain: nothing to note, no panic
	if h := sessionHash("sid"); len(h) != 8 || h == "sid" {
		t.Fatalf("sessionHash %q", h)
	}
}
