package capability

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpgw/gateway/store"
)

func snap(key, caps string) *store.BackendSnapshot {
	return &store.BackendSnapshot{Key: key, Capabilities: json.RawMessage(caps)}
}

func TestCapabilityMerge_OnlyWhatBackendsHave(t *testing.T) {
	tests := []struct {
		name  string
		snaps map[string]*store.BackendSnapshot
		want  string
	}{
		{"none reported", map[string]*store.BackendSnapshot{"a": snap("a", `{}`)}, `{}`},
		{"failed backend ignored", map[string]*store.BackendSnapshot{
			"a": {Key: "a", Error: "down", Capabilities: json.RawMessage(`{"tools":{}}`)},
		}, `{}`},
		{"union of tools and prompts", map[string]*store.BackendSnapshot{
			"a": snap("a", `{"tools":{"listChanged":true}}`),
			"b": snap("b", `{"prompts":{}}`),
		}, `{"prompts":{"listChanged":true},"tools":{"listChanged":true}}`},
		{"subscribe kept when any backend has it", map[string]*store.BackendSnapshot{
			"a": snap("a", `{"resources":{}}`),
			"b": snap("b", `{"resources":{"subscribe":true,"listChanged":true}}`),
		}, `{"resources":{"listChanged":true,"subscribe":true}}`},
		{"completions and logging", map[string]*store.BackendSnapshot{
			"a": snap("a", `{"completions":{},"logging":{},"experimental":{"x":{}}}`),
		}, `{"completions":{},"logging":{}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := json.Marshal(Merged(tc.snaps, SessionExtensions))
			var g, w any
			_ = json.Unmarshal(got, &g)
			_ = json.Unmarshal([]byte(tc.want), &w)
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestInstructions_JoinedUnderKeys(t *testing.T) {
	snaps := map[string]*store.BackendSnapshot{
		"b": {Key: "b", Instructions: "use b"},
		"a": {Key: "a", Instructions: "use a"},
		"c": {Key: "c", Error: "down", Instructions: "ignored"},
	}
	got := JoinedInstructions([]string{"a", "b", "c"}, snaps)
	if want := "## a\nuse a\n\n## b\nuse b"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := JoinedInstructions([]string{"b"}, snaps); got != "use b" {
		t.Fatalf("single backend: got %q", got)
	}
}
