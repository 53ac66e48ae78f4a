package naming

import (
	"encoding/json"
	"errors"

	"github.com/mcpgw/gateway/internal/wire"
)

// A Skills extension entry (SEP-2640's Skill: a skills/list item, a
// skills/get result's skill) names resources twice: its own uri (the
// skill's SKILL.md) and each file of its resources manifest. On a
// multi-backend vhost both are published by the renaming rule, so that a
// client that reads a file the manifest names reaches the backend that
// serves it. Nothing else of the entry changes: frontmatter is the
// author's, verbatim, and digests and sizes are of file bytes, which
// resources/read passes through untouched.

// errMalformedSkill: a skill entry is not an object with a string uri.
var errMalformedSkill = errors.New("a skill entry is not an object with a string uri")

// PublishSkill returns a skill entry of backend key as a multi-backend
// vhost publishes it, and its published uri. The members are kept as the
// backend wrote them, frontmatter byte for byte; only uri and each
// resources[].uri are replaced. resources that is not an array (the
// SEP's "dynamic") passes unchanged.
func PublishSkill(key string, entry json.RawMessage) (json.RawMessage, string, error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(entry, &fields) != nil || fields == nil {
		return nil, "", errMalformedSkill
	}
	var uri string
	if json.Unmarshal(fields["uri"], &uri) != nil || uri == "" {
		return nil, "", errMalformedSkill
	}
	published := PublishURI(key, uri)
	fields["uri"], _ = json.Marshal(published)
	publishEach(key, fields, "resources", func(f map[string]json.RawMessage) bool { return publishField(key, f, "uri") })
	// wire.RawObject writes the members' bytes as they are, where
	// encoding/json would re-escape them (frontmatter's "<" as \u003c).
	return wire.RawObject(fields), published, nil
}

// KeepsName reports whether a resource (or template) at uri keeps its
// name on a multi-backend vhost: a skill:// resource, whose name the SEP
// has be the skill's own (a SKILL.md's is its frontmatter name), and
// whose published URI already tells backends apart.
func KeepsName(uri string) bool { return keptScheme(uri) == skillScheme }

// SkillURI is a skill entry's uri, unchanged ("" when it has none).
func SkillURI(entry json.RawMessage) string {
	var e struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(entry, &e)
	return e.URI
}

// publishSkillResult publishes the skill of a skills/get result.
func publishSkillResult(key string, res map[string]json.RawMessage) bool {
	raw, ok := res["skill"]
	if !ok {
		return false
	}
	out, _, err := PublishSkill(key, raw)
	if err != nil {
		return false
	}
	res["skill"] = out
	return true
}
