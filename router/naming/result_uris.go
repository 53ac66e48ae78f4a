package naming

import (
	"bytes"
	"encoding/json"

	"github.com/mcpgw/gateway/internal/wire"
)

// A backend's results name its own resources: resource_link and embedded
// resource content blocks (tools/call, prompts/get), the contents of a
// resources/read, the children of a resources/directory/read and the skill
// of a skills/get (skills.go), and the UI resource an MCP Apps tool renders with
// (_meta.ui.resourceUri, the deprecated flat _meta["ui/resourceUri"], and
// OpenAI Apps SDK's _meta["openai/outputTemplate"]). On a multi-backend
// vhost each is published by the renaming rule (naming.go), so a client
// that follows one through the same vhost reaches the right backend.
//
// Results are otherwise forwarded as raw bytes: a result is decoded only
// when it can hold such a URI (a cheap scan first), and left byte for byte
// when nothing in it changes.

// uiMetaKeys are the _meta keys that name a tool's UI resource, flat.
var uiMetaKeys = [...]string{"ui/resourceUri", "openai/outputTemplate"}

// MayNameURIs reports whether a result can hold a URI to publish.
func MayNameURIs(result json.RawMessage) bool {
	return bytes.Contains(result, []byte(`"uri"`)) || bytes.Contains(result, []byte(`resourceUri"`)) || bytes.Contains(result, []byte(`"openai/outputTemplate"`))
}

// PublishResultURIs publishes the URIs a routed result of method holds
// for backend key of a multi-backend vhost.
func PublishResultURIs(key, method string, result json.RawMessage) json.RawMessage {
	if !MayNameURIs(result) {
		return result
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(result, &res) != nil || res == nil {
		return result
	}
	changed := false
	where := wire.MethodOf(method).ResultURIs
	switch where {
	case wire.URIsInContent:
		changed = publishBlocks(key, res, "content")
		changed = PublishUIMeta(key, res) || changed
	case wire.URIsInMessages:
		var msgs []map[string]json.RawMessage
		if json.Unmarshal(res["messages"], &msgs) == nil {
			hit := false
			for _, m := range msgs {
				hit = publishBlocks(key, m, "content") || hit
			}
			if hit {
				res["messages"], _ = json.Marshal(msgs)
				changed = true
			}
		}
	case wire.URIsInContents:
		changed = publishEach(key, res, "contents", func(c map[string]json.RawMessage) bool { return publishField(key, c, "uri") })
	case wire.URIsInChildren: // SEP-2640: a directory's children
		changed = publishEach(key, res, "resources", func(c map[string]json.RawMessage) bool { return publishField(key, c, "uri") })
	case wire.URIsInSkill:
		changed = publishSkillResult(key, res)
	}
	if !changed {
		return result
	}
	if where == wire.URIsInSkill {
		return wire.RawObject(res) // the skill's frontmatter byte for byte (skills.go)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return result
	}
	return out
}

// publishBlocks publishes the URIs of the content blocks in obj[field],
// which is one block or an array of them.
func publishBlocks(key string, obj map[string]json.RawMessage, field string) bool {
	raw := bytes.TrimSpace(obj[field])
	if len(raw) > 0 && raw[0] == '{' {
		var b map[string]json.RawMessage
		if json.Unmarshal(raw, &b) != nil || !publishBlock(key, b) {
			return false
		}
		obj[field], _ = json.Marshal(b)
		return true
	}
	return publishEach(key, obj, field, func(b map[string]json.RawMessage) bool { return publishBlock(key, b) })
}

// publishBlock publishes a resource_link's uri or an embedded resource's
// resource.uri.
func publishBlock(key string, b map[string]json.RawMessage) bool {
	var typ string
	_ = json.Unmarshal(b["type"], &typ)
	switch typ {
	case "resource_link":
		return publishField(key, b, "uri")
	case "resource":
		var res map[string]json.RawMessage
		if json.Unmarshal(b["resource"], &res) != nil || res == nil || !publishField(key, res, "uri") {
			return false
		}
		b["resource"], _ = json.Marshal(res)
		return true
	}
	return false
}

// publishEach applies fn to each object of the array obj[field] and
// writes the array back when fn changed one.
func publishEach(key string, obj map[string]json.RawMessage, field string, fn func(map[string]json.RawMessage) bool) bool {
	var items []map[string]json.RawMessage
	if json.Unmarshal(obj[field], &items) != nil {
		return false
	}
	changed := false
	for _, it := range items {
		if it != nil && fn(it) {
			changed = true
		}
	}
	if changed {
		obj[field], _ = json.Marshal(items)
	}
	return changed
}

// publishField publishes the URI string obj[field], if there is one.
func publishField(key string, obj map[string]json.RawMessage, field string) bool {
	var uri string
	if json.Unmarshal(obj[field], &uri) != nil || uri == "" {
		return false
	}
	obj[field], _ = json.Marshal(PublishURI(key, uri))
	return true
}

// PublishUIMeta publishes the UI resource URIs in obj["_meta"] (a tool in
// tools/list, or a tools/call result).
func PublishUIMeta(key string, obj map[string]json.RawMessage) bool {
	var meta map[string]json.RawMessage
	if json.Unmarshal(obj["_meta"], &meta) != nil || meta == nil {
		return false
	}
	changed := false
	for _, k := range uiMetaKeys {
		changed = publishField(key, meta, k) || changed
	}
	var ui map[string]json.RawMessage
	if json.Unmarshal(meta["ui"], &ui) == nil && ui != nil && publishField(key, ui, "resourceUri") {
		meta["ui"], _ = json.Marshal(ui)
		changed = true
	}
	if changed {
		obj["_meta"], _ = json.Marshal(meta)
	}
	return changed
}
