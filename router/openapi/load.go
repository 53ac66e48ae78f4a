package openapi

// Reading a description: the root document from a file or an http(s) URL,
// the documents its references name under the gateway's policy (files
// beside the root, URLs only under a configured prefix), each bounded in
// size, then parsed by kin-openapi (Swagger 2.0 converted to 3.0 first)
// and checked for what a call needs as each operation is compiled: an
// example that does not match its schema is not an error.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v3"
)

const (
	// fetchTimeout bounds the reading of one document over http(s).
	fetchTimeout = 30 * time.Second
	// maxDocuments bounds how many documents one description reads.
	maxDocuments = 256
)

// Load reads, parses and compiles the description o names. Its errors
// say what is wrong in words a config message can carry (the caller adds
// the file, field and line).
func Load(ctx context.Context, o Options) (*API, error) {
	r, err := newReader(o)
	if err != nil {
		return nil, fieldError("spec", err)
	}
	data, err := r.read(ctx, r.root)
	if err != nil {
		return nil, fieldError("spec", fmt.Errorf("cannot read the description %s of backend %q: %w", r.where(), o.Backend, err))
	}
	doc, err := r.parse(ctx, data)
	if err != nil {
		return nil, fieldError("spec", err)
	}
	a, err := compile(doc, r, o)
	return a, fieldError("spec", err)
}

// reader reads the documents of one description under its policy.
type reader struct {
	root    *url.URL // a file (Path only) or an http(s) URL
	rootDir string   // a file root's directory, cleaned; "" for a URL root
	remote  []string // URL prefixes references may read
	client  *http.Client
	reads   int
}

func newReader(o Options) (*reader, error) {
	r := &reader{remote: o.RemoteRefs}
	spec := strings.TrimSpace(o.Spec)
	switch {
	case spec == "":
		return nil, errors.New("no description given")
	case strings.HasPrefix(spec, "https://") || strings.HasPrefix(spec, "http://"):
		u, err := url.Parse(spec)
		if err != nil || u.Host == "" {
			// Not echoed: what cannot be parsed cannot be redacted.
			return nil, fmt.Errorf("backend %q: its description's address is not a URL", o.Backend)
		}
		r.root = u
	default:
		abs, err := filepath.Abs(spec)
		if err != nil {
			return nil, err
		}
		r.root = &url.URL{Path: filepath.ToSlash(abs)}
		r.rootDir = path.Dir(r.root.Path)
	}
	r.client = &http.Client{
		Timeout: fetchTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 || !SameOrigin(req.URL, via[0].URL) {
				return errors.New("redirected to another origin")
			}
			return nil
		},
	}
	return r, nil
}

// read reads one document, the root or one a reference names.
func (r *reader) read(ctx context.Context, loc *url.URL) ([]byte, error) {
	if r.reads++; r.reads > maxDocuments {
		return nil, fmt.Errorf("more than %d documents referenced", maxDocuments)
	}
	if loc.Scheme == "http" || loc.Scheme == "https" {
		if !r.remoteAllowed(loc) {
			return nil, fmt.Errorf("reference to %s: remote references are followed only under a prefix listed in openapi.remote_refs", redactURL(loc))
		}
		data, err := r.fetch(ctx, loc)
		if err != nil && !r.isRoot(loc) { // Load names the root
			err = fmt.Errorf("fetching %s: %w", redactURL(loc), err)
		}
		return data, err
	}
	if loc.Scheme != "" && loc.Scheme != "file" {
		return nil, fmt.Errorf("reference with scheme %q: only files and http(s) URLs are read", loc.Scheme)
	}
	if r.rootDir == "" {
		return nil, fmt.Errorf("reference to the file %s from a description read over http(s)", loc.Path)
	}
	p := path.Clean(loc.Path)
	if p != r.root.Path && !strings.HasPrefix(p, r.rootDir+"/") {
		return nil, fmt.Errorf("reference to %s, outside the description's directory %s", p, r.rootDir)
	}
	f, err := os.Open(filepath.FromSlash(p))
	if err != nil {
		return nil, errors.Unwrap(err) // the path is said by the caller; keep the reason
	}
	defer f.Close()
	return readBounded(f, p)
}

// where names the description in an error: its file, or its URL without
// user information or query (either may hold a key).
func (r *reader) where() string {
	if r.rootDir != "" {
		return filepath.FromSlash(r.root.Path)
	}
	return redactURL(r.root)
}

// isRoot reports whether loc is the description's own URL.
func (r *reader) isRoot(loc *url.URL) bool {
	return r.root.Scheme != "" && loc.String() == r.root.String()
}

// remoteAllowed reports whether loc may be fetched: the root itself, or
// under a configured prefix.
func (r *reader) remoteAllowed(loc *url.URL) bool {
	s := loc.String()
	if r.isRoot(loc) {
		return true
	}
	for _, p := range r.remote {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// fetch GETs one document. Its errors leave loc to the caller, which
// names it redacted.
func (r *reader) fetch(ctx context.Context, loc *url.URL) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, application/yaml, text/yaml, */*")
	resp, err := r.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text would repeat the URL, query included
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return readBounded(resp.Body, redactURL(loc))
}

// readBounded reads a whole document of at most MaxDocumentBytes.
func readBounded(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxDocumentBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxDocumentBytes {
		return nil, fmt.Errorf("%s is larger than %d MiB", name, MaxDocumentBytes>>20)
	}
	return data, nil
}

// redactURL is a URL as an error may show it: no user information, no
// query (either may hold a key).
func redactURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery = nil, "", false
	return c.String()
}

// parse parses the root document and resolves its references: Swagger
// 2.0 is converted to OpenAPI 3.0, 3.x is taken as it is.
func (r *reader) parse(ctx context.Context, data []byte) (*openapi3.T, error) {
	data, err := asJSON(data)
	if err != nil {
		return nil, fmt.Errorf("the description is neither JSON nor YAML: %w", err)
	}
	var head struct {
		Swagger string `json:"swagger"`
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("the description is not an object: %w", err)
	}
	loader := openapi3.NewLoader()
	loader.Context = ctx
	loader.IsExternalRefsAllowed = true // ReadFromURIFunc decides which
	loader.ReadFromURIFunc = func(_ *openapi3.Loader, loc *url.URL) ([]byte, error) {
		return r.read(ctx, loc)
	}
	var doc *openapi3.T
	switch {
	case strings.HasPrefix(head.Swagger, "2."):
		var doc2 openapi2.T
		if err := json.Unmarshal(data, &doc2); err != nil {
			return nil, fmt.Errorf("invalid Swagger 2.0 description: %w", err)
		}
		if doc, err = openapi2conv.ToV3WithLoader(&doc2, loader, r.root); err != nil {
			return nil, fmt.Errorf("invalid Swagger 2.0 description: %w", err)
		}
	case strings.HasPrefix(head.OpenAPI, "3.0."), strings.HasPrefix(head.OpenAPI, "3.1."):
		if doc, err = loader.LoadFromDataWithPath(data, r.root); err != nil {
			return nil, fmt.Errorf("invalid OpenAPI description: %w", err)
		}
	case head.OpenAPI != "":
		return nil, fmt.Errorf("OpenAPI %q is not supported (3.0, 3.1 and Swagger 2.0 are)", head.OpenAPI)
	default:
		return nil, errors.New("not an OpenAPI description: no openapi or swagger field")
	}
	// kin-openapi's Validate is not run: it refuses descriptions in wide
	// use (GitHub's has paths it calls conflicting). What a call needs is
	// checked as each operation is compiled instead.
	return doc, nil
}

// asJSON returns a document as JSON: YAML (a superset) converted.
func asJSON(data []byte) ([]byte, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return trimmed, nil
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return json.Marshal(stringKeys(v, 0))
}

// stringKeys makes YAML's mappings JSON objects: a key YAML reads as a
// number (a response code, 200:) becomes its text.
func stringKeys(v any, depth int) any {
	if depth > 512 {
		return nil // deeper than any description; the parser will say what is missing
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = stringKeys(e, depth+1)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = stringKeys(e, depth+1)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = stringKeys(e, depth+1)
		}
		return x
	}
	return v
}

// SameOrigin reports whether two URLs share scheme, host and port.
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(hostPort(a), hostPort(b))
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return u.Hostname() + ":443"
	case "http":
		return u.Hostname() + ":80"
	}
	return u.Host
}
