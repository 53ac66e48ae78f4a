package modernonly

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Header names and _meta keys of revision 2026-07-28.
const (
	versionHeader = "Mcp-Protocol-Version"
	metaVersion   = "io.modelcontextprotocol/protocolVersion"
)

// maxBody is go-sdk's own limit, applied here because the front reads the
// body before go-sdk does.
const maxBody = mcp.DefaultMaxRequestBodyBytes

// maxRequested caps the client's version echoed in -32022's data, which is
// quoted input.
const maxRequested = 64

// RefuseLegacy wraps a 2026-07-28 handler so that nothing of the session
// protocol reaches it:
//
//   - any method but POST (GET streams, DELETE of a session, ...): 405,
//     Allow: POST;
//   - a POST whose MCP-Protocol-Version header is 2026-07-28 or later (go-sdk
//     compares versions as strings, and so does this) goes to next, which
//     checks its _meta (-32602 when missing) and the rest;
//   - a POST without that header whose body carries a modern
//     _meta protocolVersion goes to next too when the header is absent
//     (go-sdk answers -32020, header required), and gets -32020 here when
//     the header names an older version (go-sdk would answer plain text);
//   - any other POST (initialize, a legacy call, a notification, a response,
//     a batch) gets 400 and JSON-RPC -32022 with data
//     {"supported":["2026-07-28"],"requested":<the version it asked for>}:
//     initialize's params.protocolVersion, else the header, else 2025-03-26
//     (what a client that sends no header speaks);
//   - a body that is not JSON gets 400 and -32700.
//
// Each refusal is logged at warning level on logger (nil: not logged): in a
// run through the gateway, one means that the gateway sent the server
// something of the session protocol.
func RefuseLegacy(next http.Handler, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			logger.Warn("refused: the session protocol's HTTP method", "http_method", r.Method, "status", http.StatusMethodNotAllowed,
				"session_id", r.Header.Get("Mcp-Session-Id"))
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, fmt.Sprintf("Method Not Allowed: this server speaks MCP %s only, which has no %s endpoint", ProtocolVersion, r.Method), http.StatusMethodNotAllowed)
			return
		}
		header := r.Header.Get(versionHeader)
		if header >= ProtocolVersion {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
				http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))

		msg, ok := peek(body)
		switch {
		case !ok:
			logger.Warn("refused: not JSON", "code", -32700)
			writeError(w, nil, -32700, "Parse error: the body is not a JSON-RPC message", nil)
		case msg.metaVersion >= ProtocolVersion && header == "":
			next.ServeHTTP(w, r)
		case msg.metaVersion >= ProtocolVersion:
			logger.Warn("refused: modern _meta with an older header", "method", msg.method, "header", header, "code", mcp.CodeHeaderMismatch)
			writeError(w, msg.id, mcp.CodeHeaderMismatch, fmt.Sprintf("Header mismatch: %s header value %q does not match _meta %s %q",
				versionHeader, clip(header), metaVersion, clip(msg.metaVersion)), nil)
		default:
			requested := "2025-03-26"
			switch {
			case msg.method == "initialize" && msg.initVersion != "":
				requested = msg.initVersion
			case header != "":
				requested = header
			}
			logger.Warn("refused: not a 2026-07-28 request", "method", describe(msg), "header", header,
				"requested", clip(requested), "code", mcp.CodeUnsupportedProtocolVersion)
			writeError(w, msg.id, mcp.CodeUnsupportedProtocolVersion,
				fmt.Sprintf("Unsupported protocol version: this server speaks %s only (no initialize, no sessions)", ProtocolVersion),
				&mcp.UnsupportedProtocolVersionData{Supported: []string{ProtocolVersion}, Requested: clip(requested)})
		}
	})
}

// message is what the front reads of a POSTed body.
type message struct {
	id          json.RawMessage // nil for a notification, a batch or an id it cannot echo
	method      string
	initVersion string // initialize's params.protocolVersion
	metaVersion string // params._meta's protocolVersion
}

// describe names a refused message for the log: its method, or what it is
// when it has none.
func describe(m message) string {
	switch {
	case m.method != "":
		return m.method
	case m.id != nil:
		return "(a response)"
	default:
		return "(a batch or another shape)"
	}
}

// peek reads a body's message; ok is false when it is not JSON. A batch or
// a response is a message with no method.
func peek(body []byte) (m message, ok bool) {
	if !json.Valid(body) {
		return m, false
	}
	var raw struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
			Meta            struct {
				ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &raw) != nil {
		// Valid JSON of another shape (a batch, a string, mistyped fields):
		// a message the front refuses as it is.
		return m, true
	}
	m.method, m.initVersion, m.metaVersion = raw.Method, raw.Params.ProtocolVersion, raw.Params.Meta.ProtocolVersion
	if id := bytes.TrimSpace(raw.ID); len(id) > 0 && (id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9')) {
		m.id = id
	}
	return m, true
}

// writeError answers 400 with one JSON-RPC error; a nil id is written as
// null (the id could not be read, or the message had none).
func writeError(w http.ResponseWriter, id json.RawMessage, code int, message string, data any) {
	if id == nil {
		id = json.RawMessage("null")
	}
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	body, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, message, data}})
	if err != nil { // only the id can fail, and it came from valid JSON
		http.Error(w, message, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(body)
}

// clip shortens quoted input to maxRequested bytes of valid UTF-8.
func clip(s string) string {
	if len(s) <= maxRequested {
		return s
	}
	// A rune cut in two becomes invalid bytes, which ToValidUTF8 drops.
	return strings.ToValidUTF8(s[:maxRequested], "") + "..."
}
