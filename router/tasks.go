package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mcpgw/gateway/internal/taskid"
	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/naming"
	"github.com/mcpgw/gateway/router/upstream"
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
// notifications/tasks reach a subscriptions/listen that names the task
// (below). Not yet: on a 2025 session's GET stream.

// taskKeyName names the task-id key in the store.
const taskKeyName = "task-id"

// maxTaskTokenLife is how long a sealed task id lives when its task has
// no TTL (ttlMs null or absent); a task with a TTL is good for that, and
// a minute more for a poll in flight.
const maxTaskTokenLife = 24 * time.Hour

// sealTaskResult replaces the backend's task id in a CreateTaskResult
// with the client's sealed one; any other result passes as it is. An
// error wraps errStoreUnavailable when the key could not be read.
func (gt *gatewayTasks) sealTaskResult(ctx context.Context, v *vhost, c *Call, t *target, result json.RawMessage) (_ json.RawMessage, isTask bool, _ error) {
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
	token, err := gt.sealTaskID(ctx, taskid.Claims{Kind: taskid.Backend, VHost: v.name, Backend: t.backend,
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
func (gt *gatewayTasks) sealTaskID(ctx context.Context, claims taskid.Claims) (string, error) {
	key, err := gt.taskKeys.Sign(ctx)
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
func (gt *gatewayTasks) routeTask(ctx context.Context, v *vhost, c *Call) *jsonrpc.Response {
	method, id := c.Request.Method, c.Request.ID
	// The client side: a 2026-07-28 request's _meta and the discovery
	// cache, or a 2025 session's (its initialize, its snapshots).
	p := c.Caller.taskPeer(ctx, gt.link, v, c, "")
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
	opened, serr := gt.taskKeys.Verify(ctx, func(key []byte) bool {
		var err error
		claims, err = taskid.Open(key, token, v.name, taskid.PrincipalDigest(c.Principal), time.Now())
		return err == nil
	})
	if serr != nil {
		return gt.storeUnavailable(id, serr)
	}
	if !opened || v.backends[claims.Backend] == nil || !gt.taskVisible(v, c, claims.Tool) ||
		claims.Kind == taskid.Gateway && gt.opts.Tasks == nil {
		return errorResponse(id, unknownTask(token))
	}
	noteRouted(c, &target{backend: claims.Backend, public: claims.Tool, kind: "tool"})
	if claims.Kind == taskid.Gateway {
		resp := gt.gatewayTaskMethod(ctx, c, params, token, claims) // tasks_run.go
		return c.Caller.finish(ctx, gt.base, resp, method, nil)
	}
	params["taskId"] = wire.Quoted(claims.TaskID)
	sent := wire.RawObject(params)
	p = c.Caller.taskPeer(ctx, gt.link, v, c, claims.Backend)
	resp, cerr := gt.link.withBackend(ctx, v, claims.Backend, method, p, c.Header, func(conn *upstream.Conn) (*jsonrpc.Response, error) {
		return conn.Call(ctx, method, sent, nil)
	})
	if cerr != nil {
		return errorResponse(id, backendError(claims.Backend, cerr))
	}
	if resp.Error != nil {
		return &jsonrpc.Response{ID: id, Error: resp.Error} // the backend's own refusal
	}
	result := resp.Result
	if wire.MethodOf(method).TaskAction == wire.TaskReads {
		result = clientTaskResult(v, claims.Backend, token, result)
	}
	return c.Caller.finish(ctx, gt.base, resultResponse(id, result), method, nil) // a 2025 session's: as the backend wrote them
}

// clientTaskResult is a backend's DetailedTask as the client sees it: its
// id, and on a multi-backend vhost the URIs of its inlined result
// published as a synchronous call's are.
func clientTaskResult(v *vhost, backend, token string, detailed json.RawMessage) json.RawMessage {
	repl := []wire.Member{{Key: "taskId", Value: wire.Quoted(token)}}
	if !v.single() && naming.MayNameURIs(detailed) {
		var d struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(detailed, &d) == nil && len(d.Result) > 0 {
			repl = append(repl, wire.Member{Key: "result", Value: naming.PublishResultURIs(backend, "tools/call", d.Result)})
		}
	}
	if out, ok := wire.Splice(detailed, repl...); ok {
		return out
	}
	return detailed
}

// taskVisible reports whether the caller's access rules still show the
// tool a task was created by: a task of a tool since hidden is unknown.
func (gt *gatewayTasks) taskVisible(v *vhost, c *Call, tool string) bool {
	return c.d.access.Visible(tool)
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

// A subscriptions/listen may name tasks (notifications.taskIds): each
// status change of one is sent to the client as notifications/tasks, a
// full DetailedTask under the client's id. A backend's task is listened
// for at the backend (its own id in that backend's part of the listen,
// its notifications given back the client's id); a task the gateway runs
// is watched here: the runner announces every status it writes on the
// bus (taskrun.StatusChanged), and the instance holding the listen loads
// the task and sends it. An id that does not open for the caller is
// left out of the acknowledgement, like a URI no backend owns.

// listenTasks are the tasks one listen asked for, opened.
type listenTasks struct {
	// byBackend: a backend's task ids, and the client's id of each.
	byBackend map[string]map[string]string
	// gateway: the tasks the gateway runs, by the client's id.
	gateway map[string]taskid.Claims
}

// openListenTasks opens a listen's taskIds; the store failing is an error.
func (gt *gatewayTasks) openListenTasks(ctx context.Context, v *vhost, c *Call, tokens []string) (*listenTasks, error) {
	lt := &listenTasks{byBackend: map[string]map[string]string{}, gateway: map[string]taskid.Claims{}}
	owner := taskid.PrincipalDigest(c.Principal)
	for _, token := range tokens {
		var claims taskid.Claims
		opened, err := gt.taskKeys.Verify(ctx, func(key []byte) bool {
			var err error
			claims, err = taskid.Open(key, token, v.name, owner, time.Now())
			return err == nil
		})
		switch {
		case err != nil:
			return nil, err
		case !opened || v.backends[claims.Backend] == nil || !gt.taskVisible(v, c, claims.Tool):
			continue
		case claims.Kind == taskid.Gateway:
			if gt.opts.Tasks != nil {
				lt.gateway[token] = claims
			}
		default:
			if lt.byBackend[claims.Backend] == nil {
				lt.byBackend[claims.Backend] = map[string]string{}
			}
			lt.byBackend[claims.Backend][claims.TaskID] = token
		}
	}
	return lt, nil
}

// backendIDs are backend key's task ids, for its part of the listen.
func (lt *listenTasks) backendIDs(key string) []string {
	ids := make([]string, 0, len(lt.byBackend[key]))
	for id := range lt.byBackend[key] {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// clientTaskNotification is a backend's notifications/tasks with the
// client's id for the task; nil for a task this listen did not ask for.
func (lt *listenTasks) clientTaskNotification(v *vhost, key string, n *jsonrpc.Request) *jsonrpc.Request {
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(n.Params, &p) != nil {
		return nil
	}
	token, ok := lt.byBackend[key][p.TaskID]
	if !ok {
		return nil
	}
	return &jsonrpc.Request{Method: methodTaskStatus, Params: clientTaskResult(v, key, token, n.Params)}
}

const methodTaskStatus = "notifications/tasks"

// watchGatewayTasks sends the current status of each task the gateway
// runs that the listen asked for, then every change, until ctx ends.
func (gt *gatewayTasks) watchGatewayTasks(ctx context.Context, lt *listenTasks, send func(*jsonrpc.Request)) {
	if len(lt.gateway) == 0 {
		return
	}
	wake := make(chan string, len(lt.gateway))
	stop := gt.taskWatch.add(lt.gateway, wake)
	defer stop()
	last := map[string]string{} // client id -> the status last sent
	notify := func(token string) {
		claims := lt.gateway[token]
		t, err := gt.opts.Tasks.Get(ctx, claims.Principal, claims.TaskID)
		if err != nil || last[token] == t.Status+t.UpdatedAt.String() {
			return
		}
		last[token] = t.Status + t.UpdatedAt.String()
		params, err := json.Marshal(taskrun.Detailed(t, token, time.Now()))
		if err == nil {
			send(&jsonrpc.Request{Method: methodTaskStatus, Params: params})
		}
	}
	for token := range lt.gateway {
		notify(token)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case token := <-wake:
			notify(token)
		}
	}
}

// taskWatchers are the listens of this instance waiting for status
// changes of tasks the gateway runs, by owner and task id.
type taskWatchers struct {
	mu sync.Mutex
	m  map[string]map[chan<- string]string // owner "\x00" id -> listener -> the client's id
}

// add registers wake for the tasks; stop unregisters it.
func (w *taskWatchers) add(tasks map[string]taskid.Claims, wake chan<- string) (stop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]map[chan<- string]string{}
	}
	keys := make([]string, 0, len(tasks))
	for token, c := range tasks {
		k := c.Principal + "\x00" + c.TaskID
		if w.m[k] == nil {
			w.m[k] = map[chan<- string]string{}
		}
		w.m[k][wake] = token
		keys = append(keys, k)
	}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, k := range keys {
			delete(w.m[k], wake)
			if len(w.m[k]) == 0 {
				delete(w.m, k)
			}
		}
	}
}

// changed wakes the listeners of a task; it never blocks (a listener
// with a wake pending loads the task anyway).
func (w *taskWatchers) changed(owner, id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wake, token := range w.m[owner+"\x00"+id] {
		select {
		case wake <- token:
		default:
		}
	}
}
