package config

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestConfig_TasksBlock(t *testing.T) {
	cfg := mustParse(t, withBackends(`fx:
  url: http://127.0.0.1:9001/mcp
  tasks:
    optional: ["slow_*", confirm_delete, wizard]
    required: [nightly_report]
    input_before_task: [wizard, confirm_delete]
    ttl: 2h
plain:
  url: http://127.0.0.1:9002/mcp
`+"  tasks:\n    optional: [wizard]\n"))
	fx := cfg.BackendTasks["demo"]["fx"]
	if fx == nil || fx.TTL != 2*time.Hour {
		t.Fatalf("fx tasks = %+v", fx)
	}
	for tool, want := range map[string]TaskMode{
		"slow_compute": TaskOptional, "slow_": TaskOptional, "confirm_delete": TaskOptional,
		"nightly_report": TaskRequired, "greet": TaskNever, "xslow_compute": TaskNever,
	} {
		if got := fx.Mode(tool); got != want {
			t.Errorf("Mode(%s) = %q, want %q", tool, got, want)
		}
	}
	if !fx.InputFirst("confirm_delete") || fx.InputFirst("slow_compute") {
		t.Error("InputFirst wrong")
	}
	if p := cfg.BackendTasks["demo"]["plain"]; p == nil || p.TTL != DefaultTaskTTL || p.Mode("wizard") != TaskOptional {
		t.Errorf("plain tasks = %+v, want the default TTL", p)
	}
	var none *BackendTasks
	if none.Mode("x") != TaskNever || none.InputFirst("x") {
		t.Error("a backend without tasks runs one")
	}
	if cfg := mustParse(t, minimal); len(cfg.BackendTasks) != 0 {
		t.Errorf("BackendTasks without any block: %v", cfg.BackendTasks)
	}
}

func TestConfig_TasksLimits(t *testing.T) {
	cfg := mustParse(t, minimal)
	if cfg.Limits.TasksPerPrincipal != 16 || cfg.Limits.TaskTTLMax != 24*time.Hour {
		t.Fatalf("defaults %d, %s", cfg.Limits.TasksPerPrincipal, cfg.Limits.TaskTTLMax)
	}
	cfg = mustParse(t, "limits:\n  tasks_per_principal: 3\n  task_ttl_max: 3h\n"+minimal)
	if cfg.Limits.TasksPerPrincipal != 3 || cfg.Limits.TaskTTLMax != 3*time.Hour {
		t.Fatalf("set %d, %s", cfg.Limits.TasksPerPrincipal, cfg.Limits.TaskTTLMax)
	}
}

func TestConfig_TasksErrorsNameFileFieldAndLine(t *testing.T) {
	p := "virtual_hosts.demo.backends.fx.tasks"
	for name, c := range map[string]struct{ yaml, want string }{
		"ttl over the cap": {withBackends("fx:\n  url: http://h\n  tasks:\n    optional: [a]\n    ttl: 48h\n"),
			p + ".ttl: must be at most limits.task_ttl_max (24h0m0s), not 48h0m0s (line 10)"},
		"ttl under the lowered cap": {"limits:\n  task_ttl_max: 1m\n" + withBackends("fx:\n  url: http://h\n  tasks:\n    optional: [a]\n    ttl: 5m\n"),
			p + ".ttl: must be at most limits.task_ttl_max (1m0s), not 5m0s (line 12)"},
		"bad ttl": {withBackends("fx:\n  url: http://h\n  tasks:\n    optional: [a]\n    ttl: soon\n"),
			p + `.ttl: "soon" is not a duration`},
		"no tools": {withBackends("fx:\n  url: http://h\n  tasks:\n    ttl: 1h\n"),
			p + ": names no tool: give optional or required (line 8)"},
		"both lists": {withBackends("fx:\n  url: http://h\n  tasks:\n    optional: [a]\n    required: [a]\n"),
			p + `.required[0]: "a" is listed as optional too`},
		"input for no task": {withBackends("fx:\n  url: http://h\n  tasks:\n    optional: [a]\n    input_before_task: [b]\n"),
			p + `.input_before_task[0]: "b" runs as no task: name it in optional or required too`},
		"bad name": {withBackends("fx:\n  url: http://h\n  tasks:\n    optional: [\"a b\"]\n"),
			p + `.optional[0]: "a b" is not a tool name`},
		"twice": {withBackends("fx:\n  url: http://h\n  tasks:\n    optional: [a, a]\n"),
			p + `.optional[1]: "a" is listed twice`},
		"unknown field": {withBackends("fx:\n  url: http://h\n  tasks:\n    optional: [a]\n    always: [b]\n"),
			p + ".always: unknown field (valid fields: optional, required, input_before_task, ttl)"},
		"not a list": {withBackends("fx:\n  url: http://h\n  tasks:\n    optional: a\n"),
			p + ".optional: must be a list"},
		"limit zero": {"limits:\n  tasks_per_principal: 0\n" + minimal,
			"limits.tasks_per_principal: must be between 1 and 10000, not 0 (line 2)"},
		"cap too small": {"limits:\n  task_ttl_max: 10ms\n" + minimal,
			"limits.task_ttl_max: must be at least 1s, not 10ms"},
	} {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml, c.want) })
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"a", "a", true}, {"a", "ab", false}, {"*", "", true}, {"slow_*", "slow_compute", true},
		{"*_job", "failing_job", true}, {"*_job", "job", false}, {"a*b*c", "a-x-b-y-c", true},
		{"a*b*c", "acb", false}, {"ab*ba", "aba", false}, {"x.*", "x.y/z", true},
	} {
		if got := globMatch(c.pattern, c.name); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v", c.pattern, c.name, got)
		}
	}
}

// The tasks guide's example, limits included, is a config the gateway
// takes, and its tools are tasks as the guide says.
func TestConfig_GuideTasksExampleParses(t *testing.T) {
	doc, err := os.ReadFile("../../docs/guide/tasks.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```yaml\nlimits:\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("docs/guide/tasks.md has no yaml example starting with limits:")
	}
	cfg := mustParse(t, "auth: {mode: none}\nlimits:\n"+block)
	if cfg.Limits.TasksPerPrincipal != 16 || cfg.Limits.TaskTTLMax != 24*time.Hour {
		t.Fatalf("the guide's limits parsed as %+v", cfg.Limits)
	}
	rp := cfg.BackendTasks["demo"]["reports"]
	if rp.Mode("slow_x") != TaskOptional || rp.Mode("confirm_delete") != TaskOptional ||
		rp.Mode("nightly_report") != TaskRequired || rp.Mode("echo") == TaskOptional || rp.TTL != time.Hour {
		t.Fatalf("the guide's tasks example parsed as %+v", rp)
	}
}
