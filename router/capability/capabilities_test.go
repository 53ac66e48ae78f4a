package capability

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcpgw/gateway/store"
)

// Pure: snapshots are built here, nothing touches Redis or a backend.

func TestBackendCapabilities_Has(t *testing.T) {
	for _, tc := range []struct {
		name string
		snap *store.BackendSnapshot
		want []string // the capabilities has reports, of the five
	}{
		{"every one", snap("a", `{"tools":{},"prompts":{},"resources":{},"completions":{},"logging":{}}`),
			[]string{"tools", "prompts", "resources", "completions", "logging"}},
		{"present with any value", snap("a", `{"tools":true,"logging":[]}`), []string{"tools", "logging"}},
		{"null is absent", snap("a", `{"tools":null,"prompts":{}}`), []string{"prompts"}},
		{"unknown fields ignored", snap("a", `{"experimental":{"x":{}},"tools":{"futureFlag":1}}`), []string{"tools"}},
		{"malformed advertises nothing", snap("a", `{"tools":`), nil},
		{"not an object advertises nothing", snap("a", `[]`), nil},
		{"failed backend advertises nothing", &store.BackendSnapshot{Key: "a", Error: "down", Capabilities: json.RawMessage(`{"tools":{}}`)}, nil},
		{"no snapshot advertises nothing", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, name := range []string{"tools", "prompts", "resources", "completions", "logging", "experimental"} {
				if Has(tc.snap, name) {
					got = append(got, name)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("has = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBackendCapabilities_SendsUnsolicited(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		caps                 string
		hasSubs, hasLogLevel bool
		want                 bool
	}{
		{"nothing to say", `{"tools":{},"prompts":{},"resources":{}}`, true, true, false},
		{"tools list changes", `{"tools":{"listChanged":true}}`, false, false, true},
		{"prompts list changes", `{"prompts":{"listChanged":true}}`, false, false, true},
		{"resources list changes", `{"resources":{"listChanged":true}}`, false, false, true},
		{"subscriptions to a backend that takes them", `{"resources":{"subscribe":true}}`, true, false, true},
		{"subscribe support but no subscription", `{"resources":{"subscribe":true}}`, false, false, false},
		{"log level set on a backend that logs", `{"logging":{}}`, false, true, true},
		{"a backend that logs, no level set", `{"logging":{}}`, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(snap("a", tc.caps)).SendsUnsolicited(tc.hasSubs, tc.hasLogLevel); got != tc.want {
				t.Fatalf("SendsUnsolicited(%v, %v) on %s = %v, want %v", tc.hasSubs, tc.hasLogLevel, tc.caps, got, tc.want)
			}
		})
	}
	failed := &store.BackendSnapshot{Key: "a", Error: "down", Capabilities: json.RawMessage(`{"tools":{"listChanged":true}}`)}
	if Of(failed).SendsUnsolicited(true, true) {
		t.Fatal("a failed backend got a listener")
	}
}
