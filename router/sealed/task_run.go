package sealed

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mcpgw/gateway/internal/seal"
	"github.com/mcpgw/gateway/store"
)

// A task the gateway runs for a backend may be run by another instance
// than the one that created it (on Lambda: an asynchronous invocation of
// the same function). What that instance needs to make the call is kept
// with the task in the store (store.Task.Run), sealed: the arguments, the
// caller's claims and bearer token (for a token exchange), its headers.
// The seal is bound to the task (owner and id as additional data), so a
// spec moved to another task, or another owner's, does not open.

// taskRunVersion is mixed into the key derivation and sealed as
// additional data.
const taskRunVersion = "mcpgw-task-run-v1"

// TaskRun is what a task's run needs to make its call.
type TaskRun struct {
	VHost   string `json:"v"`
	Backend string `json:"b"` // backend key
	Name    string `json:"n"` // the backend's own tool name
	Public  string `json:"p"` // the published tool name
	// Params are the tools/call params as the pre-hooks left them.
	Params json.RawMessage `json:"a"`
	// Hooked: the call went through hooks, whose post-hooks run on the
	// result.
	Hooked bool `json:"h,omitempty"`
	// The caller: access rules read Claims; Token is only ever exchanged
	// (credentials.Caller).
	Principal string         `json:"u"`
	Claims    map[string]any `json:"c,omitempty"`
	Token     string         `json:"k,omitempty"`
	// Caller: the request carried a verified caller (credentials.Caller)
	// for the backend request's credentials.
	Caller bool `json:"w,omitempty"`
	// Header is the downstream request's headers, without its credentials
	// (passthrough_headers).
	Header http.Header `json:"r,omitempty"`
	// Session is a 2025 session's id ("" for a 2026-07-28 request);
	// Capabilities and LogLevel the client's; Snapshot what the caller
	// knew of the backend.
	Session      store.SessionID        `json:"s,omitempty"`
	Capabilities json.RawMessage        `json:"x,omitempty"`
	LogLevel     string                 `json:"l,omitempty"`
	Snapshot     *store.BackendSnapshot `json:"y,omitempty"`
}

// ErrBadTaskRun is every failure to open a task's run spec.
var ErrBadTaskRun = errors.New("the task's run spec does not open")

func taskRunAD(owner, id string) []byte {
	return []byte(taskRunVersion + "\x00" + owner + "\x00" + id)
}

// SealTaskRun seals run for owner's task id under key.
func SealTaskRun(key []byte, owner, id string, run *TaskRun) ([]byte, error) {
	plain, err := json.Marshal(run)
	if err != nil {
		return nil, err
	}
	box, err := seal.New(key, taskRunVersion)
	if err != nil {
		return nil, err
	}
	return box.Seal(plain, taskRunAD(owner, id)), nil
}

// OpenTaskRun opens owner's task id's run spec: ErrBadTaskRun for
// anything SealTaskRun did not make for that task with that key.
func OpenTaskRun(key []byte, owner, id string, blob []byte) (*TaskRun, error) {
	box, err := seal.New(key, taskRunVersion)
	if err != nil {
		return nil, ErrBadTaskRun
	}
	plain, ok := box.Open(blob, taskRunAD(owner, id))
	if !ok {
		return nil, ErrBadTaskRun
	}
	var run TaskRun
	if err := json.Unmarshal(plain, &run); err != nil || run.VHost == "" || run.Backend == "" || run.Name == "" {
		return nil, ErrBadTaskRun
	}
	return &run, nil
}
