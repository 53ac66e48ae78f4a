package router

import (
	"sort"
	"strings"

	"github.com/mcpgw/gateway/store"
)

// mergedCapabilities builds the downstream ServerCapabilities from every
// backend snapshot, never from one: a capability is on when at least one
// backend has it and the gateway routes it.
// resources.subscribe is on when any backend advertises it. listChanged is
// on for tools, resources and prompts: the gateway forwards backends'
// list_changed and emits its own when a vhost's config changes.
// With no capable backend the result is the empty object.
func mergedCapabilities(snaps map[string]*store.BackendSnapshot) map[string]any {
	out := map[string]any{}
	for _, s := range snaps {
		c := capabilitiesOf(s)
		if c.Tools != nil {
			out["tools"] = map[string]any{"listChanged": true}
		}
		if c.Prompts != nil {
			out["prompts"] = map[string]any{"listChanged": true}
		}
		if c.Completions != nil {
			out["completions"] = map[string]any{}
		}
		if c.Logging != nil {
			out["logging"] = map[string]any{}
		}
		if c.Resources != nil {
			r, _ := out["resources"].(map[string]any)
			if r == nil {
				r = map[string]any{"listChanged": true}
				out["resources"] = r
			}
			if c.Resources.Subscribe {
				r["subscribe"] = true
			}
		}
	}
	return out
}

// joinedInstructions joins the backends' instructions, each under its key,
// in key order. A single-backend vhost passes its instructions unchanged.
func joinedInstructions(keys []string, snaps map[string]*store.BackendSnapshot) string {
	if len(keys) == 1 {
		if s := snaps[keys[0]]; s.OK() {
			return s.Instructions
		}
		return ""
	}
	var parts []string
	sorted := append([]string(nil), keys...)
	sort.Strings(sorted)
	for _, k := range sorted {
		if s := snaps[k]; s.OK() && strings.TrimSpace(s.Instructions) != "" {
			parts = append(parts, "## "+k+"\n"+strings.TrimSpace(s.Instructions))
		}
	}
	return strings.Join(parts, "\n\n")
}
