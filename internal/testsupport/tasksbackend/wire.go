package tasksbackend

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mcpgw/gateway/internal/wire"
)

// maxBody bounds a request body.
const maxBody = 1 << 20

// _meta keys of a 2026-07-28 request.
const (
	metaVersion      = "io.modelcontextprotocol/protocolVersion"
	metaCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo   = "io.modelcontextprotocol/serverInfo"
	metaSubscription = "io.modelcontextprotocol/subscriptionId"
)

// request is one JSON-RPC request as the server reads it.
type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// call is a request being served: its params decoded, whether it carries
// the Tasks extension in its per-request client capabilities.
type call struct {
	id     json.RawMessage
	method string
	params map[string]json.RawMessage
	tasks  bool // the client declared io.modelcontextprotocol/tasks
	w      http.ResponseWriter
	r      *http.Request
}

// rpcError is a JSON-RPC error and the HTTP status it is sent with.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
	status  int
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

func errorf(code int, format string, args ...any) *rpcError {
	status := http.StatusOK
	switch code {
	case wire.CodeHeaderMismatch, wire.CodeMissingClientCapability, wire.CodeUnsupportedProtocolVersion, wire.CodeParseError, wire.CodeInvalidRequest:
		status = http.StatusBadRequest
	case wire.CodeMethodNotFound:
		status = http.StatusNotFound
	}
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...), status: status}
}

// missingTasks is -32021 naming the extension, as SEP-2663 shows it.
func missingTasks(what string) *rpcError {
	e := errorf(wire.CodeMissingClientCapability, "Missing required client capability: %s needs the %s extension", what, ExtensionID)
	e.Data = map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{ExtensionID: map[string]any{}}}}
	return e
}

// serveHTTP reads one JSON-RPC message, checks it as a 2026-07-28 server
// must, and dispatches it.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "this server speaks MCP "+ProtocolVersion+" only: POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "reading the request body: "+err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, nil, errorf(wire.CodeParseError, "parse error: %v", err))
		return
	}
	if len(req.ID) == 0 || string(req.ID) == "null" {
		// A notification or a response: nothing of either is expected.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	c, rerr := s.admit(w, r, &req)
	if rerr != nil {
		s.logger.Warn("refused", "method", req.Method, "code", rerr.Code, "message", rerr.Message)
		writeError(w, req.ID, rerr)
		return
	}
	s.dispatch(c)
}

// admit checks the version, _meta and the routing headers.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, req *request) (*call, *rpcError) {
	if req.Method == "" {
		return nil, errorf(wire.CodeInvalidRequest, "missing method")
	}
	params := map[string]json.RawMessage{}
	if len(req.Params) > 0 && string(req.Params) != "null" {
		if err := json.Unmarshal(req.Params, &params); err != nil {
			return nil, errorf(wire.CodeInvalidParams, "params must be an object")
		}
	}
	var meta map[string]json.RawMessage
	if raw, ok := params["_meta"]; ok {
		if json.Unmarshal(raw, &meta) != nil {
			return nil, errorf(wire.CodeInvalidParams, "_meta must be an object")
		}
	}
	var version string
	if raw, ok := meta[metaVersion]; ok {
		_ = json.Unmarshal(raw, &version)
	}
	header := strings.TrimSpace(r.Header.Get("Mcp-Protocol-Version"))
	switch {
	case header == "":
		return nil, errorf(wire.CodeHeaderMismatch, "missing MCP-Protocol-Version header")
	case header != ProtocolVersion || (version != "" && version != ProtocolVersion):
		e := errorf(wire.CodeUnsupportedProtocolVersion, "unsupported protocol version")
		requested := version
		if requested == "" {
			requested = header
		}
		e.Data = map[string]any{"supported": []string{ProtocolVersion}, "requested": truncate(requested)}
		return nil, e
	case version == "" || meta[metaCapabilities] == nil:
		return nil, errorf(wire.CodeInvalidParams, "missing _meta keys %s and %s", metaVersion, metaCapabilities)
	case version != header:
		return nil, errorf(wire.CodeHeaderMismatch, "MCP-Protocol-Version header does not match _meta")
	}
	if m := strings.TrimSpace(r.Header.Get("Mcp-Method")); m != req.Method {
		if m == "" {
			return nil, errorf(wire.CodeHeaderMismatch, "missing Mcp-Method header")
		}
		return nil, errorf(wire.CodeHeaderMismatch, "Mcp-Method header %q does not match the body's method %q", truncate(m), truncate(req.Method))
	}
	if field := nameField(req.Method); field != "" {
		var want string
		if raw, ok := params[field]; ok {
			_ = json.Unmarshal(raw, &want)
		}
		got, present := r.Header["Mcp-Name"]
		switch {
		case !present || len(got) == 0:
			return nil, errorf(wire.CodeHeaderMismatch, "missing Mcp-Name header (params.%s)", field)
		case strings.TrimSpace(got[0]) != want:
			return nil, errorf(wire.CodeHeaderMismatch, "Mcp-Name header does not match params.%s", field)
		}
	}
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(meta[metaCapabilities], &caps) != nil {
		return nil, errorf(wire.CodeInvalidParams, "%s must be an object", metaCapabilities)
	}
	_, tasks := caps.Extensions[ExtensionID]
	return &call{id: req.ID, method: req.Method, params: params, tasks: tasks, w: w, r: r}, nil
}

// nameField is the params field that Mcp-Name mirrors for method, if any.
func nameField(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		return "taskId"
	}
	return ""
}

// dispatch serves an admitted call.
func (s *Server) dispatch(c *call) {
	var res any
	var err error
	switch c.method {
	case "server/discover":
		res = s.discover()
	case "tools/list":
		res = s.listTools()
	case "tools/call":
		res, err = s.callTool(c)
	case "tasks/get":
		res, err = s.getTask(c)
	case "tasks/update":
		res, err = s.updateTask(c)
	case "tasks/cancel":
		res, err = s.cancelTask(c)
	case "subscriptions/listen":
		if err = s.listen(c); err == nil {
			return // the stream was the response
		}
	default:
		// tasks/result and tasks/list were removed in v2; everything else
		// this fixture does not serve.
		err = errorf(wire.CodeMethodNotFound, "method not found: %s", truncate(c.method))
	}
	if err != nil {
		var rerr *rpcError
		if !errors.As(err, &rerr) {
			rerr = errorf(wire.CodeInternalError, "%v", err)
		}
		writeError(c.w, c.id, rerr)
		return
	}
	writeResult(c.w, c.id, res)
}

// serverInfo is the server's identity in every result's _meta.
var serverInfo = map[string]any{"name": "mcpgw-tasks-backend", "version": "1.0.0"}

// complete stamps a result as the standard (non-task) result of its
// request: resultType "complete" and the server's identity.
func complete(res map[string]any) map[string]any {
	res["resultType"] = "complete"
	meta, _ := res["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		res["_meta"] = meta
	}
	meta[metaServerInfo] = serverInfo
	return res
}

func (s *Server) discover() map[string]any {
	return complete(map[string]any{
		"supportedVersions": []string{ProtocolVersion},
		"capabilities": map[string]any{
			"tools":      map[string]any{},
			"extensions": map[string]any{ExtensionID: map[string]any{}},
		},
		"serverInfo":   serverInfo,
		"instructions": "SEP-2663 tasks fixture: slow_compute, failing_job, protocol_error_job, confirm_delete, multi_input and test_tool_with_task run as tasks.",
		"ttlMs":        0,
		"cacheScope":   "public",
	})
}

func writeResult(w http.ResponseWriter, id json.RawMessage, res any) {
	writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": id, "result": res})
}

func writeError(w http.ResponseWriter, id json.RawMessage, e *rpcError) {
	if id == nil {
		id = json.RawMessage("null")
	}
	writeJSON(w, e.status, map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"encoding the response failed"}}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// truncate bounds client input quoted back in errors.
func truncate(v string) string {
	if len(v) > 200 {
		return v[:200]
	}
	return v
}
