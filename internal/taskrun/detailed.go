package taskrun

import (
	"time"

	"github.com/mcpgw/gateway/store"
)

// What a client sees of a task: the DetailedTask tasks/get answers and
// notifications/tasks carry, and the CreateTaskResult of its creation
// (SEP-2663), built from the record whatever instance reads it.

// Detailed is t's DetailedTask as tasks/get answers it (and
// notifications/tasks carries it), under the client's taskID: ttlMs counts
// from creation, so it is the time the task has run (until it ended) plus
// its TTL.
func Detailed(t *store.Task, taskID string, now time.Time) map[string]any {
	end := now
	if store.TaskTerminal(t.Status) {
		end = t.UpdatedAt
	}
	d := map[string]any{
		"taskId":         taskID,
		"status":         t.Status,
		"createdAt":      t.CreatedAt.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt":  t.UpdatedAt.UTC().Format(time.RFC3339Nano),
		"ttlMs":          (end.Sub(t.CreatedAt) + t.TTL).Milliseconds(),
		"pollIntervalMs": t.PollInterval.Milliseconds(),
	}
	if t.StatusMessage != "" {
		d["statusMessage"] = t.StatusMessage
	}
	switch t.Status {
	case store.TaskInputRequired:
		d["inputRequests"] = t.Outstanding()
	case store.TaskCompleted:
		d["result"] = t.Result
	case store.TaskFailed:
		d["error"] = t.Error
	}
	return d
}

// Created is the CreateTaskResult for a task Start returned (without the
// result envelope's _meta, which the router adds).
func Created(t *store.Task, taskID string, now time.Time) map[string]any {
	d := Detailed(t, taskID, now)
	for _, k := range []string{"inputRequests", "result", "error"} {
		delete(d, k)
	}
	d["resultType"] = "task"
	return d
}
