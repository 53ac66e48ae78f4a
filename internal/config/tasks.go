package config

import (
	"slices"
	"strings"
	"time"

	"github.com/mcpgw/gateway/router"
)

// A backend's `tasks:` block makes the gateway run some of its tools as
// tasks (SEP-2663, io.modelcontextprotocol/tasks) for a backend that does
// not implement the extension itself:
//
//	tasks:
//	  optional: ["slow_*", confirm_delete]  # a task when the client negotiated the extension, synchronous otherwise
//	  required: [nightly_report]            # only as a task: -32021 for a client without the extension
//	  input_before_task: [wizard]           # the first input_required round is answered before the task exists
//	  ttl: 1h                               # how long a finished task's result is kept
//
// Names are the backend's own tool names (before prefixing or aliasing),
// '*' matching any run of characters.

// Defaults and caps of tasks.
const (
	// DefaultTaskTTL is a backend's tasks.ttl when absent.
	DefaultTaskTTL = time.Hour
	// DefaultTaskTTLMax is limits.task_ttl_max when absent.
	DefaultTaskTTLMax = 24 * time.Hour
	// DefaultTasksPerPrincipal is limits.tasks_per_principal when absent.
	DefaultTasksPerPrincipal = 16
	// DefaultFinishedTaskBytesPerPrincipal is
	// limits.finished_task_bytes_per_principal when absent.
	DefaultFinishedTaskBytesPerPrincipal = 64 << 20
)

// TaskMode is how the gateway runs one tool of a backend (the router's
// type: a backend's BackendTasks is its router.TaskPolicy).
type TaskMode = router.TaskMode

const (
	// TaskNever: a plain call (the tool is named in no list).
	TaskNever = router.TaskNever
	// TaskOptional: a task when the client declared the extension.
	TaskOptional = router.TaskOptional
	// TaskRequired: only as a task.
	TaskRequired = router.TaskRequired
)

// BackendTasks is a backend's validated `tasks:` block.
type BackendTasks struct {
	Optional        []string // globs of the backend's tool names
	Required        []string
	InputBeforeTask []string
	// TTL is how long a finished task is kept (ttlMs counts it from the
	// task's creation, so the gateway reports its run time plus TTL).
	TTL time.Duration
}

// Mode returns how tool (the backend's own name) runs: required wins
// over optional when both lists match it.
func (b *BackendTasks) Mode(tool string) TaskMode {
	if b == nil {
		return TaskNever
	}
	switch {
	case matchAny(b.Required, tool):
		return TaskRequired
	case matchAny(b.Optional, tool):
		return TaskOptional
	}
	return TaskNever
}

// ResultTTL is tasks.ttl (router.TaskPolicy).
func (b *BackendTasks) ResultTTL() time.Duration { return b.TTL }

// InputFirst reports whether tool's first input_required round is
// answered before its task is created.
func (b *BackendTasks) InputFirst(tool string) bool {
	return b != nil && matchAny(b.InputBeforeTask, tool)
}

type rawTasks struct {
	// Backend tool names ('*' any run) run as a task when the client
	// negotiated the tasks extension, as a plain call otherwise.
	Optional []string `yaml:"optional"`
	// Backend tool names run only as a task: -32021 for a client without
	// the extension.
	Required []string `yaml:"required"`
	// Tools (also listed above) whose first input_required round is
	// answered before the task is created.
	InputBeforeTask []string `yaml:"input_before_task"`
	// How long a finished task's result is kept. At least 1s, at most
	// limits.task_ttl_max.
	TTL *rawDuration `yaml:"ttl" jsonschema:"default=1h"`
}

// backendTasks validates every backend's tasks block, by vhost and backend
// key; backends without one are absent.
func (v *validator) backendTasks(vhosts map[string]*rawVHost, limits Limits) map[string]map[string]*BackendTasks {
	out := map[string]map[string]*BackendTasks{}
	for _, vh := range sortedKeys(vhosts) {
		if vhosts[vh] == nil {
			continue
		}
		for _, key := range sortedKeys(vhosts[vh].Backends) {
			raw := vhosts[vh].Backends[key]
			if raw == nil || raw.Tasks == nil {
				continue
			}
			path := joinPath(joinPath(joinPath(joinPath("virtual_hosts", vh), "backends"), key), "tasks")
			if t := v.tasks(path, raw.Tasks, limits); t != nil {
				if out[vh] == nil {
					out[vh] = map[string]*BackendTasks{}
				}
				out[vh][key] = t
			}
		}
	}
	return out
}

func (v *validator) tasks(path string, raw *rawTasks, limits Limits) *BackendTasks {
	t := &BackendTasks{
		Optional:        v.toolGlobs(joinPath(path, "optional"), raw.Optional),
		Required:        v.toolGlobs(joinPath(path, "required"), raw.Required),
		InputBeforeTask: v.toolGlobs(joinPath(path, "input_before_task"), raw.InputBeforeTask),
		TTL:             v.duration(joinPath(path, "ttl"), raw.TTL, DefaultTaskTTL, time.Second),
	}
	if raw.TTL != nil && t.TTL > limits.TaskTTLMax {
		v.errf(joinPath(path, "ttl"), "must be at most limits.task_ttl_max (%s), not %s", limits.TaskTTLMax, t.TTL)
	}
	if len(t.Optional) == 0 && len(t.Required) == 0 {
		v.errf(path, "names no tool: give optional or required")
	}
	for i, g := range t.Required {
		if slices.Contains(t.Optional, g) {
			v.errf(indexPath(joinPath(path, "required"), i), "%q is listed as optional too", g)
		}
	}
	for i, g := range t.InputBeforeTask {
		// A name must run as a task; a glob must be listed as one as is.
		covered := slices.Contains(t.Optional, g) || slices.Contains(t.Required, g)
		if !covered && !strings.Contains(g, "*") {
			covered = t.Mode(g) != TaskNever
		}
		if !covered {
			v.errf(indexPath(joinPath(path, "input_before_task"), i), "%q runs as no task: name it in optional or required too", g)
		}
	}
	return t
}

// toolGlobs checks a list of tool-name globs.
func (v *validator) toolGlobs(path string, list []string) []string {
	var out []string
	seen := map[string]bool{}
	for i, g := range list {
		g = strings.TrimSpace(g)
		switch {
		case !validToolName(g):
			v.errf(indexPath(path, i), "%q is not a tool name (1-128 bytes, no spaces or control characters; '*' matches any run)", g)
		case seen[g]:
			v.errf(indexPath(path, i), "%q is listed twice", g)
		default:
			seen[g] = true
			out = append(out, g)
		}
	}
	return out
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if globMatch(g, name) {
			return true
		}
	}
	return false
}

// globMatch matches name against pattern, '*' standing for any run of
// characters ('/' and '.' included: tool names are not paths).
func globMatch(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return strings.HasSuffix(name, last)
}
