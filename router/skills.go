package router

import (
	"encoding/json"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/capability"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The Skills extension (SEP-2640) through a virtual host:
//
//   - skills/list is one more list of the fan-out (list_fanout.go), asked
//     of every backend that declares the extension; an entry is named by
//     its uri (its SKILL.md's), published by the renaming rule with every
//     file of its manifest (naming.PublishSkill), and access rules judge
//     that published uri;
//   - skills/get and resources/directory/read are routed by URI like
//     resources/read (routed.go); their results' URIs are published
//     (naming.PublishResultURIs), and a directory's children the caller
//     may not see are left out;
//   - skill files are ordinary resources: resources/read, resources/list
//     and the rest already route and publish them.
//
// A single-backend vhost passes all of it unchanged.

// skillsRefusal refuses a skills/get or resources/directory/read whose
// owning backend is known not to serve it (its snapshot declares no Skills
// extension, or no directoryRead), as the SEP has a server answer a URI it
// does not serve: -32602, the message of an unknown URI. A backend whose
// snapshot is not known yet is asked. A single-backend vhost passes the
// request through, as it passes everything.
func (rc *routedCalls) skillsRefusal(v *vhost, c *Call, t *target) *jsonrpc.Error {
	row := rowOf(c.Request.Method)
	if v.single() || !row.skills {
		return nil
	}
	snap := c.peer.backends[t.backend]
	if !snap.OK() {
		return nil
	}
	caps := capability.Of(snap)
	switch {
	case !caps.Has(capability.Skills):
		return unknownIdentifier(t.kind, t.public)
	case row.directory && !caps.ExtensionFlag(capability.Skills, capability.DirectoryRead):
		return invalidParams("%s is not a directory resource this virtual host serves", wire.Quote(t.public))
	}
	return nil
}

// visibleChildren leaves out of a resources/directory/read result the
// children the caller's access rules hide, as resources/list does.
func visibleChildren(result json.RawMessage, access policy.View) json.RawMessage {
	if access.All() {
		return result
	}
	var res map[string]json.RawMessage
	var children []json.RawMessage
	if json.Unmarshal(result, &res) != nil || json.Unmarshal(res["resources"], &children) != nil {
		return result
	}
	kept := children[:0]
	for _, child := range children {
		var c struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(child, &c) == nil && access.Visible(c.URI) {
			kept = append(kept, child)
		}
	}
	if len(kept) == len(children) {
		return result
	}
	return wire.RawObjectArray(res, "resources", kept)
}
