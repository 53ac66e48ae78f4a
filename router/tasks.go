package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpgw/gateway/internal/taskid"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The Tasks extension (SEP-2663), passed through to backends that
// implement it. A 2026-07-28 backend told that the client declared the
// extension (capability.ModernExtensions) may answer a tools/call with a
// CreateTaskResult. The client never sees the backend's task id: it gets
// a sealed one (internal/taskid) that carries the vhost, the backend, a
// digest of the caller, the backend's id, the tool's published name and
// an expiry, signed with a key every instance shares. Its tasks/get,
// tasks/update and tasks/cancel, on any instance, are opened, checked
// and sent to that backend with the backend's own id (Mcp-Name is made
// anew from it, upstream/modern.go); nothing of the task is stored by
// the gateway.
//
// Refusals, in order: -32021 when the request does not declare the
// extension; -32602 "unknown task" for a token that does not open (forged,
// another caller's or vhost's, expired), names a backend no longer
// configured, or a tool the caller's access rules now hide: one answer,
// so none tells them apart. (-32020 for an Mcp-Name that is not the
// token: the transport, handler/modern_request.go.)
//
// A 2025-11-25 session that declares the extension in its initialize gets
// the same: the extension in the initialize result (when a backend has
// it), every request of the session treated as declaring it, tasks/* on
// its POSTs, task results with their fields (resultType, ttlMs) kept.
//
// Tasks the gateway runs itself for backends without the extension (a
// backend's tasks: block) have ids of Kind Gateway: tasks_run.go.
//
// Not yet: notifications/tasks on a listen or a session's GET stream.

// taskKeyName names the task-id key in the store.
const taskKeyName = "task-id"

// maxTaskTokenLife is how long a sealed task id lives when its task has
// no TTL (ttlMs null or absent); a task with a TTL is good for that, and
// a minute more for a poll in flight.
const maxTaskTokenLife = 24 * time.Hour

// sealTaskResult replaces the backend's task id in a CreateTaskResult
// with the client's sealed one; any other result passes as it is. An
// error wraps errStoreUnavailable when the key could not be read.
func (r *Router) sealTaskResult(ctx context.Context, v *vhost, c *Call, t *target, result json.RawMessage) (_ json.RawMessage, isTask bool, _ error) {
	var head struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		TTLMs      *int64 `json:"ttlMs"`
	}
	if !bytes.Contains(result, []byte(`"task"`)) || json.Unmarshal(result, &head) != nil || head.ResultType != "task" {
		return result, false, nil
	}
	if head.TaskID == "" {
		return nil, true, fmt.Errorf("backend %s answered a task without a taskId", wire.Quote(t.backend))
	}
	life := maxTaskTokenLife
	if head.TTLMs != nil && *head.TTLMs > 0 {
		life = time.Duration(*head.TTLMs)*time.Millisecond + time.Minute
	}
	token, err := r.sealTaskID(ctx, taskid.Claims{Kind: taskid.Backend, VHost: v.name, Backend: t.backend,
		Principal: taskid.PrincipalDigest(c.Principal), TaskID: head.TaskID, Tool: v.publishedTool(t.backend, t.name),
		Expires: time.Now().Add(life)})
	if err != nil {
		return nil, true, err
	}
	out, ok := wire.Splice(result, wire.Member{Key: "taskId", Value: wire.Quoted(token)})
	if !ok {
		return nil, true, errors.New("a task result is not a JSON object")
	}
	return out, true, nil
}

// sealTaskID seals the client's task id; an error wraps
// errStoreUnavailable when the key could not be read.
func (r *Router) sealTaskID(ctx context.Context, claims taskid.Claims) (string, error) {
	key, err := r.taskKeys.Sign(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: task-id key: %w", errStoreUnavailable, err)
	}
	return taskid.Seal(key, claims)
}

// unknownTask is the one answer for a task id that is not the caller's
// to use, whatever the reason.
func unknownTask(token string) *jsonrpc.Error {
	return invalidParams("unknown task %s: it was not created for this caller on this virtual host, or it has expired", wire.Quote(token))
}

// routeTask answers tasks/get, tasks/update and tasks/cancel: the sealed
// id opened and checked, the request sent to the backend that holds the
// task with its own id, the answer given back with the client's.
func (r *Router) routeTask(ctx context.Context, v *vhost, c *Call) *jsonrpc.Response {
	method, id := c.Request.Method, c.Request.ID
	// The client side: a 2026-07-28 request's _meta and the discovery
	// cache, or a 2025 session's (its initialize, its snapshots).
	p := c.peer
	if c.Modern != nil {
		p = newPeer("", v.name, c.Modern.ClientCapabilities, c.Modern.LogLevel, nil)
	}
	if !p.tasks {
		return errorResponse(id, needsTasksExtension(method))
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(orEmpty(c.Request.Params), &params); err != nil {
		return errorResponse(id, paramsError(method, err))
	}
	token, err := stringField(params, "taskId", method)
	if err != nil {
		return errorResponse(id, err)
	}
	var claims taskid.Claims
	opened, serr := r.taskKeys.Verify(ctx, func(key []byte) bool {
		var err error
		claims, err = taskid.Open(key, token, v.name, taskid.PrincipalDigest(c.Principal), time.Now())
		return err == nil
	})
	if serr != nil {
		return r.storeUnavailable(id, serr)
	}
	if !opened || v.backends[claims.Backend] == nil || !r.taskVisible(v, c, claims.Tool) ||
		claims.Kind == taskid.Gateway && r.opts.Tasks == nil {
		return errorResponse(id, unknownTask(token))
	}
	noteRouted(ctx, &target{backend: claims.Backend, public: claims.Tool, kind: "tool"})
	if claims.Kind == taskid.Gateway {
		resp := r.gatewayTaskMethod(ctx, c, params, token, claims) // tasks_run.go
		if c.Modern == nil || resp.Error != nil {
			return resp
		}
		return r.finishModern(ctx, resp, method, nil)
	}
	params["taskId"] = wire.Quoted(claims.TaskID)
	sent := wire.RawObject(params)
	if c.Modern != nil {
		p.backends = map[string]*store.BackendSnapshot{claims.Backend: r.backendDiscovery(ctx, v, claims.Backend, c.Header).snap}
	}
	resp, cerr := r.withBackend(ctx, v, claims.Backend, method, p, c.Header, func(conn *upstream.Conn) (*jsonrpc.Response, error) {
		return conn.Call(ctx, method, sent, nil)
	})
	if cerr != nil {
		return errorResponse(id, backendError(claims.Backend, cerr))
	}
	if resp.Error != nil {
		return &jsonrpc.Response{ID: id, Error: resp.Error} // the backend's own refusal
	}
	result := resp.Result
	if method == "tasks/get" {
		if out, ok := wire.Splice(result, wire.Member{Key: "taskId", Value: wire.Quoted(token)}); ok {
			result = out
		}
	}
	if c.Modern == nil {
		return resultResponse(id, result) // a 2025 session: the task's fields as the backend wrote them
	}
	return r.finishModern(ctx, resultResponse(id, result), method, nil)
}

// taskVisible reports whether the caller's access rules still show the
// tool a task was created by: a task of a tool since hidden is unknown.
func (r *Router) taskVisible(v *vhost, c *Call, tool string) bool {
	a := modernAccess(v, c)
	return a == nil || a.Visible(tool)
}

// declaresExtension reports whether client capabilities declare
// extension id (capabilities.extensions[id], any value but null).
func declaresExtension(caps json.RawMessage, id string) bool {
	if !bytes.Contains(caps, []byte(id)) {
		return false // most clients: no decode
	}
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(caps, &c) != nil {
		return false
	}
	v, ok := c.Extensions[id]
	return ok && string(v) != "null"
}
