package skillserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// front answers the Skills extension's methods (skills/list, skills/get,
// resources/directory/read) and hands every other request to go-sdk's
// handler, body untouched. It answers for either generation: a 2026-07-28
// request (params._meta names a protocol version) gets the revision's
// resultType and cache hints, a session's request the plain result.
type front struct {
	next          http.Handler
	catalog       *Catalog
	pageSize      int
	directoryRead bool
}

// maxBody bounds a request body the front reads.
const maxBody = 1 << 20

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		f.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "reading the body failed", http.StatusBadRequest)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			URI    string `json:"uri"`
			Cursor string `json:"cursor"`
			Meta   struct {
				Version string `json:"io.modelcontextprotocol/protocolVersion"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil || !f.serves(req.Method) || len(req.ID) == 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.next.ServeHTTP(w, r)
		return
	}
	result, rpcErr := f.answer(req.Method, req.Params.URI, req.Params.Cursor)
	msg := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	switch {
	case rpcErr != nil:
		msg["error"] = rpcErr
	default:
		if req.Params.Meta.Version != "" { // a 2026-07-28 request
			result["resultType"] = "complete"
			if req.Method != "resources/directory/read" {
				result["ttlMs"], result["cacheScope"] = 60000, "public"
			}
		}
		msg["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		w.Header().Set("Mcp-Session-Id", sid)
	}
	_ = json.NewEncoder(w).Encode(msg)
}

// serves reports whether the front answers method.
func (f *front) serves(method string) bool {
	switch method {
	case "skills/list", "skills/get":
		return true
	case "resources/directory/read":
		return f.directoryRead
	}
	return false
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func invalidParams(format string, args ...any) *rpcError {
	return &rpcError{Code: -32602, Message: fmt.Sprintf(format, args...)}
}

// answer is the result of one of the front's methods, or its error.
func (f *front) answer(method, uri, cursor string) (map[string]any, *rpcError) {
	switch method {
	case "skills/list":
		return f.list(cursor)
	case "skills/get":
		s := f.catalog.skillAtURI(uri)
		if s == nil {
			return nil, invalidParams("No skill is served at %s", uri)
		}
		return map[string]any{"skill": s.Entry()}, nil
	default: // resources/directory/read
		dir, ok := strings.CutPrefix(uri, Scheme)
		children, isDir := f.catalog.children(dir)
		if !ok || !isDir {
			return nil, invalidParams("%s is not a directory resource", uri)
		}
		return map[string]any{"resources": children}, nil
	}
}

// list is one page of skills/list: the cursor is the index of the page's
// first skill.
func (f *front) list(cursor string) (map[string]any, *rpcError) {
	skills := f.catalog.Skills()
	from := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 || n > len(skills) {
			return nil, invalidParams("invalid cursor")
		}
		from = n
	}
	to := len(skills)
	if f.pageSize > 0 {
		to = min(from+f.pageSize, to)
	}
	entries := make([]map[string]any, 0, to-from)
	for _, s := range skills[from:to] {
		entries = append(entries, s.Entry())
	}
	res := map[string]any{"skills": entries}
	if to < len(skills) {
		res["nextCursor"] = strconv.Itoa(to)
	}
	return res, nil
}
