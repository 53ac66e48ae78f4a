// Package naming holds the one renaming rule of a multi-backend virtual
// host (what a backend names is published "{key}-name", ui:// resources
// "ui://{key}/...") and its inverse, and a vhost's tool aliases. It knows
// nothing of requests: the router applies it to lists, results,
// notifications and routing alike.
package naming

import "strings"

// The one renaming rule of a multi-backend virtual host, used by lists,
// results, notifications and routing alike (a single-backend vhost
// publishes everything unchanged):
//
//   - a tool or prompt name N of backend key is published "{key}-N";
//   - a resource URI or URI template U is published "{key}-U"
//     ("gateway-one-test://x"), except
//   - an MCP Apps UI resource "ui://R", published "ui://{key}/R": hosts
//     render only ui:// resources (the ext-apps host library refuses any
//     other scheme), so the scheme stays and the key becomes the first
//     path segment.
//
// Routing reverses it with the Splitter's rule: keys are tried longest
// first, and the key must be followed by "-" (or, in a ui:// URI, by "/")
// and a non-empty rest.

// uiScheme is the scheme of MCP Apps UI resources.
const uiScheme = "ui://"

// PublishURI is the URI (or URI template) a client sees for backend key's
// uri on a multi-backend vhost.
func PublishURI(key, uri string) string {
	if rest, ok := strings.CutPrefix(uri, uiScheme); ok {
		return uiScheme + key + "/" + rest
	}
	return Prefix(key, uri)
}

// SplitURI is PublishURI's inverse: the backend key and the backend's URI.
func (s *Splitter) SplitURI(uri string) (key, backendURI string, ok bool) {
	rest, isUI := strings.CutPrefix(uri, uiScheme)
	if !isUI {
		return s.Split(uri)
	}
	for _, k := range s.keys {
		if len(rest) > len(k)+1 && strings.HasPrefix(rest, k) && rest[len(k)] == '/' {
			return k, uiScheme + rest[len(k)+1:], true
		}
	}
	return "", "", false
}
