package capability

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/mcpgw/gateway/store"
)

// Merged builds the downstream ServerCapabilities from every
// backend snapshot, never from one: a capability is on when at least one
// backend has it and the gateway routes it.
// resources.subscribe is on when any backend advertises it. listChanged is
// on for tools, resources and prompts: the gateway forwards backends'
// list_changed and emits its own when a vhost's config changes.
// capabilities.extensions is the union of the backends' extensions that
// the gateway routes what they need of (routed: Session- or
// ModernExtensions); the Skills extension's directoryRead is on when any
// backend's is. With no capable backend the result is the empty object.
func Merged(snaps map[string]*store.BackendSnapshot, routed map[string]bool) map[string]any {
	out := map[string]any{}
	extensionOwner := map[string]string{}
	directoryRead := false // a backend's skills declare directoryRead
	for _, s := range snaps {
		c := Of(s)
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
		for id, settings := range c.Extensions {
			if !routed[id] || len(settings) == 0 || string(settings) == "null" {
				continue
			}
			ext, _ := out["extensions"].(map[string]json.RawMessage)
			if ext == nil {
				ext = map[string]json.RawMessage{}
				out["extensions"] = ext
			}
			// One backend's settings stand for all: the first by key, so
			// every instance advertises the same.
			if owner, ok := extensionOwner[id]; !ok || s.Key < owner {
				ext[id] = settings
				extensionOwner[id] = s.Key
			}
			if id == Skills && c.ExtensionFlag(Skills, DirectoryRead) {
				directoryRead = true
			}
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
	if ext, _ := out["extensions"].(map[string]json.RawMessage); directoryRead && ext != nil {
		ext[Skills] = withDirectoryRead(ext[Skills])
	}
	return out
}

// withDirectoryRead is Skills extension settings with directoryRead true:
// the vhost implements resources/directory/read when any of its backends
// does (the gateway routes each read to the backend owning the URI, and
// answers -32602 for a backend that does not). Settings that already say
// so pass byte for byte (a single backend's, for one).
func withDirectoryRead(settings json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(settings, &m) != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	if string(m[DirectoryRead]) == "true" {
		return settings
	}
	m[DirectoryRead] = json.RawMessage("true")
	out, err := json.Marshal(m)
	if err != nil {
		return settings
	}
	return out
}

// JoinedInstructions joins the backends' instructions, each under its key,
// in key order. A single-backend vhost passes its instructions unchanged.
func JoinedInstructions(keys []string, snaps map[string]*store.BackendSnapshot) string {
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

// Extensions (capabilities.extensions) a backend or a client may
// advertise. The gateway passes one on only when it routes what the
// extension needs, so neither side starts what the gateway cannot carry;
// any other is dropped from what clients and backends are told.
//
//   - MCP Apps (io.modelcontextprotocol/ui), for both generations: its
//     ui:// resources are published unambiguously and its tools callable
//     (the renaming rule, router/naming).
//   - Tasks (io.modelcontextprotocol/tasks), for 2026-07-28 requests and
//     backends only: their tasks/get, tasks/update and tasks/cancel are
//     routed by the gateway's sealed task id (router/tasks.go). A
//     2025-era session is not told of it yet.
//   - Skills (io.modelcontextprotocol/skills, SEP-2640), for both
//     generations: skills/list fans out, skills/get and
//     resources/directory/read are routed by URI, and skill:// resources
//     are published unambiguously (router/naming/skills.go).
var (
	SessionExtensions = map[string]bool{"io.modelcontextprotocol/ui": true, Skills: true}
	ModernExtensions  = map[string]bool{"io.modelcontextprotocol/ui": true, "io.modelcontextprotocol/tasks": true, Skills: true}
)

// Skills is the Skills extension's id, and DirectoryRead its setting that
// says the server implements resources/directory/read.
const (
	Skills        = "io.modelcontextprotocol/skills"
	DirectoryRead = "directoryRead"
)

// ForwardedClient is a client's capabilities as a backend is told them:
// without the extensions the gateway does not route (routed: Session- or
// ModernExtensions).
func ForwardedClient(raw json.RawMessage, routed map[string]bool) json.RawMessage {
	if !bytes.Contains(raw, []byte(`"extensions"`)) {
		return raw
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(raw, &caps) != nil || caps == nil {
		return raw
	}
	var ext map[string]json.RawMessage
	if json.Unmarshal(caps["extensions"], &ext) != nil {
		return raw
	}
	for id := range ext {
		if !routed[id] {
			delete(ext, id)
		}
	}
	if len(ext) == 0 {
		delete(caps, "extensions")
	} else {
		caps["extensions"], _ = json.Marshal(ext)
	}
	out, err := json.Marshal(caps)
	if err != nil {
		return raw
	}
	return out
}
