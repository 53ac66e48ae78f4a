// Package naming holds the one renaming rule of a multi-backend virtual
// host (what a backend names is published "{key}-name", ui:// and skill://
// resources "ui://{key}/...", "skill://{key}/...") and its inverse, and a
// vhost's tool aliases. It knows
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
//     path segment;
//   - a skill resource "skill://P/F" (SEP-2640), published
//     "skill://{key}/P/F": the scheme stays, the key becomes the URI's
//     authority and the first segment of the skill's organizational
//     prefix, and the skill path still ends in the skill's name (the SEP's
//     one structural rule; the key is a valid reg-name, as the SEP asks of
//     the authority). A skill's frontmatter is never touched.
//
// Routing reverses it with the Splitter's rule: keys are tried longest
// first, and the key must be followed by "-" (or, in a ui:// or skill://
// URI, by "/") and a non-empty rest.

// Schemes whose URIs keep their scheme when published: the key becomes
// the first path segment.
const (
	uiScheme    = "ui://"
	skillScheme = "skill://"
)

// keptScheme is the scheme-keeping prefix uri starts with, or "".
func keptScheme(uri string) string {
	switch {
	case strings.HasPrefix(uri, uiScheme):
		return uiScheme
	case strings.HasPrefix(uri, skillScheme):
		return skillScheme
	}
	return ""
}

// PublishURI is the URI (or URI template) a client sees for backend key's
// uri on a multi-backend vhost.
func PublishURI(key, uri string) string {
	if scheme := keptScheme(uri); scheme != "" {
		return scheme + key + "/" + uri[len(scheme):]
	}
	return Prefix(key, uri)
}

// SplitURI is PublishURI's inverse: the backend key and the backend's URI.
func (s *Splitter) SplitURI(uri string) (key, backendURI string, ok bool) {
	scheme := keptScheme(uri)
	if scheme == "" {
		return s.Split(uri)
	}
	rest := uri[len(scheme):]
	for _, k := range s.keys {
		if len(rest) > len(k)+1 && strings.HasPrefix(rest, k) && rest[len(k)] == '/' {
			return k, scheme + rest[len(k)+1:], true
		}
	}
	return "", "", false
}

// URIPrefixes are the prefixes every URI backend key publishes on a
// multi-backend vhost begins with, whatever its scheme: what access rules
// are asked about before a list asks the backend (router/access.go).
func URIPrefixes(key string) [3]string {
	return [3]string{Prefix(key, ""), uiScheme + key + "/", skillScheme + key + "/"}
}
