package config

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/openapi"
	"github.com/mcpgw/gateway/router/upstream"
)

// rawOpenAPI is a backend's `openapi` block: the backend is a REST API,
// its tools made from an OpenAPI description (router/openapi), instead of
// an MCP server at `url` or a `command`.
type rawOpenAPI struct {
	// The description: a file (relative to the config file) or an
	// http(s) URL; OpenAPI 3.0, 3.1 or Swagger 2.0, JSON or YAML.
	Spec string `yaml:"spec"`
	// Where the API is called. Default: the description's first server,
	// its variables at their defaults.
	BaseURL string `yaml:"base_url"`
	// The operations made tools: operationId globs, or "METHOD /path"
	// globs ('*' any run of characters). Default: all. Each must match at
	// least one operation.
	Operations []string `yaml:"operations"`
	// Bounds a response body in bytes: a larger one is refused, never
	// held whole. At most 256MiB.
	MaxResponseBytes *int64 `yaml:"max_response_bytes" jsonschema:"default=1048576,minimum=1,maximum=268435456"`
	// URL prefixes that $refs to other documents over http(s) may be read
	// from; none by default. Files beside the description are always
	// read.
	RemoteRefs []string `yaml:"remote_refs"`
}

// maxOpenAPIResponseBytes bounds max_response_bytes: a response is held
// whole while it becomes a result.
const maxOpenAPIResponseBytes = 256 << 20

// openAPI validates a backend's `openapi` block and loads its
// description, after the backend's credentials and add_headers (which
// its security schemes are checked against). It sets b's transport and
// compiled API.
func (v *validator) openAPI(path string, raw *rawBackend, b *router.Backend) {
	p := joinPath(path, "openapi")
	o := raw.OpenAPI
	errsBefore := len(v.errs)
	v.openAPIRefusals(path, raw)
	b.Transport, b.URL = upstream.TransportOpenAPI, ""
	opts := openapi.Options{Backend: b.Key, BaseURL: strings.TrimSpace(o.BaseURL), MaxResponseBytes: openapi.DefaultMaxResponseBytes,
		Credentials: openapi.Credentials{Bearer: b.Credentials != nil}}
	spec := strings.TrimSpace(o.Spec)
	switch {
	case spec == "":
		v.errf(joinPath(p, "spec"), "required: the OpenAPI description (a file, or an http(s) URL)")
		return
	case strings.HasPrefix(spec, "https://"), strings.HasPrefix(spec, "http://"):
		if u, err := url.Parse(spec); err != nil || u.Host == "" {
			v.errf(joinPath(p, "spec"), "%q is not a URL", displayURL(spec))
			return
		}
		opts.Spec = spec
	default:
		opts.Spec = v.fromConfigDir(spec)
	}
	if opts.BaseURL != "" {
		v.backendURL(joinPath(p, "base_url"), opts.BaseURL)
	}
	for i, g := range o.Operations {
		if strings.TrimSpace(g) == "" {
			v.errf(indexPath(joinPath(p, "operations"), i), "empty glob")
			return
		}
		opts.Operations = append(opts.Operations, strings.TrimSpace(g))
	}
	if o.MaxResponseBytes != nil {
		if *o.MaxResponseBytes < 1 || *o.MaxResponseBytes > maxOpenAPIResponseBytes {
			v.errf(joinPath(p, "max_response_bytes"), "must be between 1 and %d, not %d", maxOpenAPIResponseBytes, *o.MaxResponseBytes)
		}
		opts.MaxResponseBytes = *o.MaxResponseBytes
	}
	for i, r := range o.RemoteRefs {
		u, err := url.Parse(r)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			v.errf(indexPath(joinPath(p, "remote_refs"), i), "%q is not an http(s) URL prefix", displayURL(r))
			continue
		}
		opts.RemoteRefs = append(opts.RemoteRefs, r)
	}
	for name := range b.AddHeaders {
		opts.Credentials.Headers = append(opts.Credentials.Headers, http.CanonicalHeaderKey(name))
	}
	for name := range b.HeaderTemplates {
		opts.Credentials.Headers = append(opts.Credentials.Headers, http.CanonicalHeaderKey(name))
	}
	if len(v.errs) > errsBefore {
		return // the description is read once the block itself is right
	}
	slices.Sort(opts.Credentials.Headers)
	key, _ := json.Marshal(opts)
	if api := v.apis[string(key)]; api != nil {
		b.OpenAPI = api
		return
	}
	api, err := openapi.Load(context.Background(), opts)
	if err != nil {
		field := "spec"
		var fe *openapi.Error
		if errors.As(err, &fe) {
			field = fe.Field
		}
		switch field {
		case "security":
			v.errf(p, "%s", err.Error())
		default:
			v.errf(joinPath(p, field), "%s", err.Error())
		}
		return
	}
	if v.apis == nil {
		v.apis = map[string]*openapi.API{}
	}
	v.apis[string(key)] = api
	b.OpenAPI = api
}

// openAPIRefusals refuses what only an MCP backend has.
func (v *validator) openAPIRefusals(path string, raw *rawBackend) {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"url", strings.TrimSpace(raw.URL) != ""},
		{"transport", raw.Transport != ""},
	} {
		if f.set {
			v.errf(joinPath(path, f.name), "has no use with openapi: the backend is the REST API the description describes")
		}
	}
	if raw.Session == string(router.SessionReuse) {
		v.errf(joinPath(path, "session"), "reuse has no meaning with openapi: a REST API keeps no MCP session")
	}
}
