package envelope

import (
	"encoding/json"
	"testing"
)

var gateway = json.RawMessage(`{"name":"mcpgw","version":"dev"}`)

// A result for a 2026-07-28 client gets the envelope; the same result on
// its way to a 2025-era session loses it again, byte for byte.
func TestDecorateThenStrip(t *testing.T) {
	for _, tc := range []struct {
		name, result string
		hints        *Hints
		want         string
	}{
		{"a tool result", `{"content":[{"type":"text","text":"hi"}]}`, nil,
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpgw","version":"dev"}},"content":[{"type":"text","text":"hi"}],"resultType":"complete"}`},
		{"a list page, private", `{"tools":[]}`, &Hints{TTLMs: 5000, Private: true},
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpgw","version":"dev"}},"cacheScope":"private","resultType":"complete","tools":[],"ttlMs":5000}`},
		{"an interim result keeps no hints", `{"resultType":"input_required","ttlMs":9,"cacheScope":"public"}`, &Hints{TTLMs: 5000},
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpgw","version":"dev"}},"resultType":"input_required"}`},
		{"a task keeps its ttlMs", `{"resultType":"task","taskId":"t1","status":"working","ttlMs":60000,"cacheScope":"public"}`, &Hints{TTLMs: 5},
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpgw","version":"dev"}},"resultType":"task","status":"working","taskId":"t1","ttlMs":60000}`},
		{"a backend's own hints stand, private wins", `{"contents":[],"ttlMs":60000,"cacheScope":"public"}`, &Hints{FromResult: true, Private: true},
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpgw","version":"dev"}},"cacheScope":"private","contents":[],"resultType":"complete","ttlMs":60000}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decorate(json.RawMessage(tc.result), tc.hints, gateway)
			if err != nil || string(got) != tc.want {
				t.Fatalf("Decorate: %s, %v\nwant %s", got, err, tc.want)
			}
			stripped := Strip(got)
			var m map[string]json.RawMessage
			if err := json.Unmarshal(stripped, &m); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"resultType", "ttlMs", "cacheScope", "_meta"} {
				if _, ok := m[f]; ok {
					t.Errorf("Strip kept %s: %s", f, stripped)
				}
			}
		})
	}
	plain := json.RawMessage(`{"content":[],  "isError":false}`)
	if got := Strip(plain); string(got) != string(plain) {
		t.Fatalf("a result with no envelope changed: %s", got)
	}
}

// HintsOf: a backend that says nothing allows no caching; Merge keeps the
// shorter lifetime and private if either is.
func TestHints(t *testing.T) {
	if h := HintsOf(map[string]json.RawMessage{}); h != (Hints{}) {
		t.Fatalf("no fields: %+v", h)
	}
	a := HintsOf(map[string]json.RawMessage{"ttlMs": json.RawMessage(`3000`), "cacheScope": json.RawMessage(`"private"`)})
	b := Hints{TTLMs: 9000}
	if got := a.Merge(b); got != (Hints{TTLMs: 3000, Private: true}) {
		t.Fatalf("merge: %+v", got)
	}
}
