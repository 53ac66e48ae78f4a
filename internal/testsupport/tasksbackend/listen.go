package tasksbackend

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
)

// listener is one subscriptions/listen stream that asked for task status
// notifications.
type listener struct {
	subscription json.RawMessage // the listen request's id
	taskIDs      map[string]bool
	out          chan []byte // notifications to send; dropped when full
}

// listenKeepAlive is how often an idle listen stream gets a comment.
const listenKeepAlive = 15 * time.Second

// listen serves subscriptions/listen: notifications.taskIds (the only kind
// of notification this server has) are acknowledged, for the tasks it
// knows, in notifications/subscriptions/acknowledged, and each of their
// status changes is sent as notifications/tasks carrying the DetailedTask,
// tagged with the subscription id. The stream ends when the client goes
// away, or with an empty result when the server stops.
func (s *Server) listen(c *call) error {
	var p struct {
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
	}
	if raw, ok := c.params["notifications"]; ok {
		if err := json.Unmarshal(raw, &p.Notifications); err != nil {
			return errorf(wire.CodeInvalidParams, "params.notifications: %v", err)
		}
	}
	if len(p.Notifications.TaskIDs) > 0 && !c.tasks {
		return missingTasks("notifications.taskIds")
	}
	flusher, ok := c.w.(http.Flusher)
	if !ok {
		return errorf(wire.CodeInternalError, "streaming unsupported")
	}
	l := &listener{subscription: c.id, taskIDs: map[string]bool{}, out: make(chan []byte, 64)}
	honoured := []string{}
	s.mu.Lock()
	for _, id := range p.Notifications.TaskIDs {
		if _, known := s.tasks[id]; known && !l.taskIDs[id] {
			l.taskIDs[id] = true
			honoured = append(honoured, id)
		}
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()

	c.w.Header().Set("Content-Type", "text/event-stream")
	c.w.Header().Set("Cache-Control", "no-cache")
	c.w.WriteHeader(http.StatusOK)
	ack, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
		"params": map[string]any{"notifications": map[string]any{"taskIds": honoured},
			"_meta": map[string]any{metaSubscription: c.id}}})
	if !sendEvent(c.w, flusher, ack) {
		return nil
	}
	keepAlive := time.NewTicker(listenKeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-c.r.Context().Done():
			return nil
		case <-s.base.Done():
			end, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "result": complete(map[string]any{})})
			sendEvent(c.w, flusher, end)
			return nil
		case <-keepAlive.C:
			if _, err := fmt.Fprint(c.w, ": keep-alive\n\n"); err != nil {
				return nil
			}
			flusher.Flush()
		case msg := <-l.out:
			if !sendEvent(c.w, flusher, msg) {
				return nil
			}
		}
	}
}

func sendEvent(w http.ResponseWriter, f http.Flusher, msg []byte) bool {
	if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg); err != nil {
		return false
	}
	f.Flush()
	return true
}

// notifyLocked queues notifications/tasks with t's DetailedTask for every
// listener of t. Called with s.mu held.
func (s *Server) notifyLocked(t *task) {
	var d map[string]any
	for l := range s.listeners {
		if !l.taskIDs[t.id] {
			continue
		}
		if d == nil {
			d = s.detail(t)
		}
		params := map[string]any{}
		for k, v := range d {
			params[k] = v
		}
		params["_meta"] = map[string]any{metaSubscription: l.subscription}
		msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/tasks", "params": params})
		if err != nil {
			continue
		}
		select {
		case l.out <- msg:
		default: // a slow listener misses an update; tasks/get still has it
		}
	}
}
