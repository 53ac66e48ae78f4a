package config

import (
	"net/url"
	"reflect"
	"strings"

	"github.com/mcpgw/gateway/internal/servercard"
	"go.yaml.in/yaml/v3"
)

// A virtual host's Server Card (SEP-2127; package internal/servercard):
//
//	virtual_hosts:
//	  demo:
//	    card:                      # optional: every field has a default
//	      name: com.example/demo   # reverse DNS, one slash (default: the
//	                               # public host reversed, /, the vhost)
//	      title: Demo tools        # 1-100 characters (default: the vhost)
//	      description: ...         # 1-100 characters
//	      version: 1.2.0           # no ranges (default: the gateway's version)
//	      website_url: https://example.com/demo
//	      icons: [{src: https://example.com/i.png, mime_type: image/png, sizes: [48x48], theme: light}]
//	  internal:
//	    card: false                # no card, and not in the catalog

// rawCard is card: a mapping, or false (true is the defaults).
type rawCard struct {
	off bool
	// The server name: reverse DNS, one '/', then letters, digits, '.',
	// '_' or '-'. Default: the public host reversed, '/', the vhost.
	Name string `yaml:"name"`
	// A human-readable title, 1 to 100 characters. Default: the vhost.
	Title string `yaml:"title"`
	// What the server is for, 1 to 100 characters.
	Desc string `yaml:"description"`
	// One version, no ranges. Default: the gateway's version.
	Ver string `yaml:"version"`
	// The server's web page (http or https).
	Site string `yaml:"website_url"`
	// Icons of the server.
	Icons []rawIcon `yaml:"icons"`
}

type rawIcon struct {
	// The icon: an http(s) URL or a data: URI.
	Src string `yaml:"src"`
	// Its media type, e.g. image/png.
	MIMEType string `yaml:"mime_type"`
	// Sizes it fits, e.g. 48x48 or any.
	Sizes []string `yaml:"sizes"`
	// The theme it is for.
	Theme string `yaml:"theme" jsonschema:"enum=light,enum=dark"`
}

var rawCardType = reflect.TypeFor[rawCard]()

// UnmarshalYAML takes card: false (and true) as well as a mapping; the
// mapping's fields were checked by checkShape.
func (c *rawCard) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		var on bool
		if err := n.Decode(&on); err != nil {
			return err
		}
		*c = rawCard{off: !on}
		return nil
	}
	type plain rawCard
	return n.Decode((*plain)(c))
}

// card validates a vhost's card settings at path; nil: the defaults.
func (v *validator) card(path string, raw *rawCard) *servercard.Config {
	if raw == nil {
		return nil
	}
	if raw.off {
		return &servercard.Config{Off: true}
	}
	c := &servercard.Config{Name: strings.TrimSpace(raw.Name), Title: raw.Title, Description: raw.Desc,
		Version: strings.TrimSpace(raw.Ver), WebsiteURL: strings.TrimSpace(raw.Site)}
	if c.Name != "" && (!servercard.NameRE.MatchString(c.Name) || len(c.Name) > servercard.MaxName) {
		v.errf(path+".name", "%q is not a server name: reverse DNS, one '/', then letters, digits, '.', '_' or '-' (at most %d bytes)", raw.Name, servercard.MaxName)
	}
	if raw.Title != "" && len(raw.Title) > servercard.MaxTitle {
		v.errf(path+".title", "at most %d bytes", servercard.MaxTitle)
	}
	if raw.Desc != "" && len(raw.Desc) > servercard.MaxDescription {
		v.errf(path+".description", "at most %d bytes", servercard.MaxDescription)
	}
	switch {
	case len(c.Version) > servercard.MaxVersion:
		v.errf(path+".version", "at most %d bytes", servercard.MaxVersion)
	case strings.ContainsAny(c.Version, "^~<>=* ") || strings.HasSuffix(c.Version, ".x") || strings.HasSuffix(c.Version, ".X"):
		v.errf(path+".version", "%q is a version range; a card names one version", c.Version)
	}
	if c.WebsiteURL != "" && !webURL(c.WebsiteURL) {
		v.errf(path+".website_url", "%q is not an http(s) URL", c.WebsiteURL)
	}
	for i, ic := range raw.Icons {
		p := indexPath(path+".icons", i)
		src := strings.TrimSpace(ic.Src)
		if !webURL(src) && !strings.HasPrefix(src, "data:") {
			v.errf(p+".src", "needs an http(s) or data: URI")
		}
		if ic.Theme != "" && ic.Theme != "light" && ic.Theme != "dark" {
			v.errf(p+".theme", "%q is not a theme (want light or dark)", ic.Theme)
		}
		c.Icons = append(c.Icons, servercard.Icon{Src: src, MIMEType: strings.TrimSpace(ic.MIMEType), Sizes: ic.Sizes, Theme: ic.Theme})
	}
	return c
}

// webURL reports whether s is an absolute http or https URL with a host.
func webURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
