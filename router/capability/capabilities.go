// Package capability reads what backends advertise (their
// ServerCapabilities, from the snapshot in the store) and builds what the
// gateway advertises for a virtual host from all of them, never from one.
package capability

import (
	"encoding/json"

	"github.com/mcpgw/gateway/store"
)

// Set is what the gateway reads of a backend's
// ServerCapabilities, decoded from its snapshot in one place for every
// use: which lists to fan out to it (has), what the merged initialize
// result advertises (Merged), and whether a GET stream needs a
// listener on it (SendsUnsolicited).
//
// It decodes into a small struct rather than the SDK's full type, so
// unknown or future capability fields never fail the decode; a malformed
// snapshot advertises nothing.
type Set struct {
	Tools       *Flags `json:"tools"`
	Prompts     *Flags `json:"prompts"`
	Resources   *Flags `json:"resources"`
	Completions *Flags `json:"completions"`
	Logging     *Flags `json:"logging"`
	// Extensions are the backend's capabilities.extensions, by id.
	Extensions map[string]json.RawMessage `json:"extensions"`
}

// capability is one advertised capability and the flags the gateway
// reads of it. A capability is advertised when its field is present and
// not null, whatever its value holds.
type Flags struct {
	ListChanged bool // tools, prompts, resources: the backend sends list_changed
	Subscribe   bool // resources: the backend takes resources/subscribe
}

// UnmarshalJSON never fails: a capability whose value is not the object
// the spec says is still advertised, with no flags.
func (c *Flags) UnmarshalJSON(b []byte) error {
	var v struct {
		ListChanged bool `json:"listChanged"`
		Subscribe   bool `json:"subscribe"`
	}
	if json.Unmarshal(b, &v) == nil {
		c.ListChanged, c.Subscribe = v.ListChanged, v.Subscribe
	}
	return nil
}

// Of decodes a snapshot's capabilities; a failed or missing
// snapshot advertises nothing.
func Of(s *store.BackendSnapshot) Set {
	var c Set
	if s.OK() && len(s.Capabilities) > 0 {
		_ = json.Unmarshal(s.Capabilities, &c) // a malformed snapshot advertises nothing
	}
	return c
}

// Has reports whether a top-level capability is advertised, by its name
// in ServerCapabilities ("tools", "prompts", "resources", "completions",
// "logging"), or an extension, by its id.
func (c Set) Has(name string) bool {
	switch name {
	case "tools":
		return c.Tools != nil
	case "prompts":
		return c.Prompts != nil
	case "resources":
		return c.Resources != nil
	case "completions":
		return c.Completions != nil
	case "logging":
		return c.Logging != nil
	}
	// An extension, by its id ("io.modelcontextprotocol/skills"):
	// declared with settings that are not null.
	settings, ok := c.Extensions[name]
	return ok && len(settings) > 0 && string(settings) != "null"
}

// ExtensionFlag reports whether an extension is declared with the
// boolean setting flag true (the Skills extension's directoryRead).
func (c Set) ExtensionFlag(id, flag string) bool {
	var settings map[string]json.RawMessage
	if json.Unmarshal(c.Extensions[id], &settings) != nil {
		return false
	}
	return string(settings[flag]) == "true"
}

// SendsUnsolicited reports whether the backend can send a session
// anything it did not ask for: updates for its subscriptions (hasSubs),
// list changes, or log messages at the level the client set
// (hasLogLevel). Only such a backend needs a listener on a GET stream.
func (c Set) SendsUnsolicited(hasSubs, hasLogLevel bool) bool {
	switch {
	case hasSubs && c.Resources != nil && c.Resources.Subscribe:
		return true
	case c.Tools != nil && c.Tools.ListChanged,
		c.Prompts != nil && c.Prompts.ListChanged,
		c.Resources != nil && c.Resources.ListChanged:
		return true
	case hasLogLevel && c.Logging != nil:
		return true
	}
	return false
}

// Has reports whether a backend snapshot advertises a top-level capability.
func Has(s *store.BackendSnapshot, name string) bool { return Of(s).Has(name) }
