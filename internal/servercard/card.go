// Package servercard builds the discovery documents of SEP-2127 (MCP
// Server Cards, as its experimental extension modelcontextprotocol/
// experimental-ext-server-card specifies them): one Server Card per
// virtual host, from its card settings and what the gateway knows (the
// endpoint, the protocol versions it speaks, whether it takes bearer
// tokens and where its RFC 9728 metadata is), and the domain's AI
// Catalog listing every card. Cards describe; they never list tools,
// resources or prompts, whoever asks.
package servercard

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net"
	"regexp"
	"slices"
	"strings"
)

// Media types and the card's schema.
const (
	CardMediaType    = "application/mcp-server-card+json"
	CatalogMediaType = "application/ai-catalog+json"
	SchemaURL        = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
	// CatalogVersion is the AI Catalog specVersion the catalog follows.
	CatalogVersion = "1.0"
)

// Bounds of the card's fields, as the card schema has them.
const (
	MaxTitle       = 100
	MaxDescription = 100
	MaxVersion     = 255
	MaxName        = 200
)

// NameRE is a card name's form: reverse DNS, one slash, a server name.
var NameRE = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)

// Config is a virtual host's card settings (config virtual_hosts.X.card);
// an empty field takes its default (Build). Off opts the vhost out: it
// has no card and is not in the catalog.
type Config struct {
	Off         bool
	Name        string
	Title       string
	Description string
	Version     string
	WebsiteURL  string
	Icons       []Icon
}

// Icon is one of the card's icons.
type Icon struct {
	Src      string   `json:"src"`
	MIMEType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

// Facts are what the gateway knows of a vhost when its card is asked for.
type Facts struct {
	// BaseURL is the gateway's URL as clients reach it (public_url, else
	// the request's scheme and Host), without a trailing slash.
	BaseURL string
	// Version is the gateway's own (serverInfo.version): a card's default.
	Version string
	// ProtocolVersions are the MCP revisions the endpoint speaks.
	ProtocolVersions []string
	// BearerAuth: the endpoint takes bearer tokens (auth mode jwt).
	BearerAuth bool
	// ResourceMetadata is the URL of the vhost's RFC 9728 document, when
	// the gateway publishes one.
	ResourceMetadata string
}

// MetaResourceMetadata is the card _meta key naming the vhost's RFC 9728
// Protected Resource Metadata document.
const MetaResourceMetadata = "mcpgw/oauthProtectedResource"

// Endpoint is vhost's MCP endpoint under base.
func Endpoint(base, vhost string) string { return base + "/servers/" + vhost + "/mcp" }

// CardURL is where vhost's card is served: the endpoint + /server-card,
// the location the extension reserves.
func CardURL(base, vhost string) string { return Endpoint(base, vhost) + "/server-card" }

type card struct {
	Schema      string         `json:"$schema"`
	Name        string         `json:"name"`
	Version     string         `json:"version"`
	Description string         `json:"description"`
	Title       string         `json:"title,omitempty"`
	WebsiteURL  string         `json:"websiteUrl,omitempty"`
	Icons       []Icon         `json:"icons,omitempty"`
	Remotes     []remote       `json:"remotes"`
	Meta        map[string]any `json:"_meta,omitempty"`
	// No other member: a card lists no tools, resources or prompts.
}

type remote struct {
	Type                      string          `json:"type"`
	URL                       string          `json:"url"`
	SupportedProtocolVersions []string        `json:"supportedProtocolVersions"`
	Headers                   []header        `json:"headers,omitempty"`
	Authentication            *authentication `json:"authentication,omitempty"`
}

type header struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	IsRequired  bool   `json:"isRequired"`
	IsSecret    bool   `json:"isSecret"`
}

// authentication is SEP-2127's remotes[].authentication (the card schema
// keeps remotes open to it).
type authentication struct {
	Required bool     `json:"required"`
	Schemes  []string `json:"schemes"`
}

// Build is vhost's Server Card: its settings, with defaults for what they
// leave out, and the facts.
func Build(c *Config, vhost string, f Facts) []byte {
	if c == nil {
		c = &Config{}
	}
	doc := card{Schema: SchemaURL, Name: c.Name, Version: c.Version, Description: c.Description,
		Title: c.Title, WebsiteURL: c.WebsiteURL, Icons: c.Icons}
	if doc.Name == "" {
		doc.Name = DefaultName(f.BaseURL, vhost)
	}
	if doc.Version == "" {
		doc.Version = f.Version
	}
	if doc.Description == "" {
		doc.Description = clip("MCP server "+vhost+", a virtual host of the mcpgw gateway", MaxDescription)
	}
	if doc.Title == "" {
		doc.Title = clip(vhost, MaxTitle)
	}
	r := remote{Type: "streamable-http", URL: Endpoint(f.BaseURL, vhost), SupportedProtocolVersions: f.ProtocolVersions}
	if f.BearerAuth {
		r.Headers = []header{{Name: "Authorization", Description: "Bearer token (OAuth 2.1 access token) for this virtual host",
			IsRequired: true, IsSecret: true}}
		r.Authentication = &authentication{Required: true, Schemes: []string{"bearer"}}
		if f.ResourceMetadata != "" {
			r.Authentication.Schemes = append(r.Authentication.Schemes, "oauth2")
			doc.Meta = map[string]any{MetaResourceMetadata: f.ResourceMetadata}
		}
	}
	doc.Remotes = []remote{r}
	out, _ := json.Marshal(doc) // strings and slices only: it cannot fail
	return out
}

// DefaultName is a card's default name: the host of base, reversed
// (gw.example.com: com.example.gw), a slash, the vhost.
func DefaultName(base, vhost string) string {
	labels := strings.FieldsFunc(hostOf(base), func(r rune) bool { return r == '.' })
	slices.Reverse(labels)
	ns := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, strings.Join(labels, "."))
	if ns == "" {
		ns = "local"
	}
	return clip(ns+"/"+vhost, MaxName)
}

// Entry is one vhost in the catalog.
type Entry struct {
	VHost string
	Name  string // the card's name
}

// Catalog is the domain's AI Catalog: an entry per card, each with the
// card's URL and an identifier urn:air:{publisher}:mcp:{vhost}.
func Catalog(base string, entries []Entry) []byte {
	type entry struct {
		Identifier string `json:"identifier"`
		Type       string `json:"type"`
		URL        string `json:"url"`
	}
	doc := struct {
		SpecVersion string  `json:"specVersion"`
		Entries     []entry `json:"entries"`
	}{SpecVersion: CatalogVersion, Entries: []entry{}}
	publisher := publisherOf(base)
	for _, e := range entries {
		doc.Entries = append(doc.Entries, entry{Identifier: "urn:air:" + publisher + ":mcp:" + e.VHost,
			Type: CardMediaType, URL: CardURL(base, e.VHost)})
	}
	out, _ := json.Marshal(doc)
	return out
}

// publisherOf is the domain a catalog's identifiers name: base's host.
func publisherOf(base string) string {
	return strings.ReplaceAll(hostOf(base), ":", "-") // no colons in a URN segment
}

// hostOf is the host of a base URL, lower case, without port or brackets.
func hostOf(base string) string {
	host := base
	if _, rest, ok := strings.Cut(host, "://"); ok {
		host = rest
	}
	host, _, _ = strings.Cut(host, "/")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.Trim(strings.ToLower(host), "[]")
}

// ETag is a document's strong entity tag: a digest of its bytes.
func ETag(doc []byte) string {
	sum := sha256.Sum256(doc)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
}

// clip cuts s to at most n bytes, at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
