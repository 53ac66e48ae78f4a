package openapi

// A tool call as an HTTP request: the path template filled, the query
// written, header and cookie parameters set, the body encoded as the
// operation's media type asks, and the backend's own headers (add_headers
// and credentials, from the gateway's credentials machinery) on top, an
// argument never overriding them.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"sort"
	"strings"
)

// Request builds the HTTP request of a call. args are the call's
// arguments, already validated against the inputSchema; hdr are the
// backend's headers (it is not modified).
func (a *API) Request(ctx context.Context, t *Tool, args map[string]json.RawMessage, hdr http.Header) (*http.Request, error) {
	path, query, err := t.pathAndQuery(args)
	if err != nil {
		return nil, err
	}
	h := make(http.Header, len(hdr)+4)
	var cookies []string
	for _, p := range t.params {
		s, ok, err := shapeOf(args[p.arg], p.asJSON)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidArguments, p.arg, err)
		}
		if !ok {
			continue
		}
		switch p.in {
		case "header":
			v, err := headerValue(p, s)
			if err != nil {
				return nil, err
			}
			h.Set(p.name, v)
		case "cookie":
			cookies = append(cookies, cookieValue(p, s))
		}
	}
	// The backend's headers win over arguments; an API key the
	// description sends in the query leaves the headers.
	for k, vs := range hdr {
		if q, isKey := a.queryKeys[k]; isKey {
			if _, used := t.queryKeys[k]; used && len(vs) > 0 {
				query = append(query, escape(q, false)+"="+escape(vs[0], false))
			}
			continue
		}
		if k == "Cookie" {
			cookies = append(cookies, vs...)
			continue
		}
		h[k] = append([]string(nil), vs...)
	}
	if len(cookies) > 0 {
		h.Set("Cookie", strings.Join(cookies, "; "))
	}
	target := strings.TrimRight(t.base.String(), "/") + path
	if len(query) > 0 {
		target += "?" + strings.Join(query, "&")
	}
	var body io.Reader
	var contentType string
	if t.body != nil {
		if raw, ok := args[bodyArg]; ok && string(bytes.TrimSpace(raw)) != "null" {
			b, ct, err := t.encodeBody(raw)
			if err != nil {
				return nil, err
			}
			body, contentType = bytes.NewReader(b), ct
		}
	}
	req, err := http.NewRequestWithContext(ctx, t.method, target, body)
	if err != nil {
		return nil, fmt.Errorf("%w: the request URL: %v", ErrInvalidArguments, err)
	}
	req.Header = h
	req.Header.Set("Accept", t.accept)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req, nil
}

// pathAndQuery fills the path template and writes the query.
func (t *Tool) pathAndQuery(args map[string]json.RawMessage) (string, []string, error) {
	path := t.path
	var query []string
	for _, p := range t.params {
		if p.in != "path" && p.in != "query" {
			continue
		}
		s, ok, err := shapeOf(args[p.arg], p.asJSON)
		if err != nil {
			return "", nil, fmt.Errorf("%w: %s: %v", ErrInvalidArguments, p.arg, err)
		}
		if p.in == "path" {
			if !ok {
				return "", nil, fmt.Errorf("%w: the path parameter %q is required", ErrInvalidArguments, p.arg)
			}
			v, err := pathValue(p, s)
			if err != nil {
				return "", nil, err
			}
			path = strings.ReplaceAll(path, "{"+p.name+"}", v)
			continue
		}
		if !ok {
			continue
		}
		pairs, err := queryPairs(p, s)
		if err != nil {
			return "", nil, err
		}
		query = append(query, pairs...)
	}
	return path, query, nil
}

// encodeBody writes the body argument as the operation's media type.
func (t *Tool) encodeBody(raw json.RawMessage) ([]byte, string, error) {
	switch t.body.kind {
	case bodyJSON:
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return nil, "", fmt.Errorf("%w: body: %v", ErrInvalidArguments, err)
		}
		return b.Bytes(), t.body.mediaType, nil
	case bodyForm:
		fields, err := bodyFields(raw)
		if err != nil {
			return nil, "", err
		}
		var pairs []string
		for _, f := range fields {
			s, ok, err := shapeOf(f.value, false)
			if err != nil || !ok {
				continue
			}
			ps, err := queryPairs(param{name: f.name, style: "form", explode: true}, s)
			if err != nil {
				return nil, "", err
			}
			pairs = append(pairs, ps...)
		}
		return []byte(strings.Join(pairs, "&")), "application/x-www-form-urlencoded", nil
	case bodyMultipart:
		return multipartBody(raw)
	}
	return []byte(primitiveText(raw)), t.body.mediaType, nil
}

type field struct {
	name  string
	value json.RawMessage
}

// bodyFields are a form body's members, sorted by name.
func bodyFields(raw json.RawMessage) ([]field, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: a form body must be an object", ErrInvalidArguments)
	}
	out := make([]field, 0, len(m))
	for k, v := range m {
		out = append(out, field{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// multipartBody writes one part per member: text for strings, numbers
// and booleans, JSON for arrays and objects.
func multipartBody(raw json.RawMessage) ([]byte, string, error) {
	fields, err := bodyFields(raw)
	if err != nil {
		return nil, "", err
	}
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range fields {
		v := bytes.TrimSpace(f.value)
		if string(v) == "null" {
			continue
		}
		hdr := textproto.MIMEHeader{}
		hdr.Set("Content-Disposition", `form-data; name="`+escapeQuotes(f.name)+`"`)
		text := primitiveText(v)
		if len(v) > 0 && (v[0] == '{' || v[0] == '[') {
			hdr.Set("Content-Type", "application/json")
		}
		part, err := w.CreatePart(hdr)
		if err != nil {
			return nil, "", err
		}
		if _, err := part.Write([]byte(text)); err != nil {
			return nil, "", err
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return b.Bytes(), w.FormDataContentType(), nil
}

func escapeQuotes(s string) string {
	return strings.NewReplacer("\\", "\\\\", `"`, "\\\"", "\r", "", "\n", "").Replace(s)
}
