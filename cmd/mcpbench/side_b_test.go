package main

import (
	"io"
	"testing"
)

// -b-workload, -b-tool and -b-args give B a request of its own; without
// them B runs A's.
func TestParseArgs_SideB(t *testing.T) {
	o, err := parseArgs([]string{"-workload", "list", "-pages", "1", "-b-workload", "call", "-b-tool", "search_tools",
		"-b-args", `{"query":"x"}`, "http://127.0.0.1:1/a", "http://127.0.0.1:1/b"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	o.sideB()(&c)
	if c.Workload != WorkloadCall || c.Tool != "search_tools" || string(c.Args) != `{"query":"x"}` || c.MaxPages != 0 {
		t.Fatalf("B's config: %+v", c)
	}
	if o.cfg.Workload != WorkloadList || o.cfg.MaxPages != 1 {
		t.Fatalf("A's config changed: %+v", o.cfg)
	}
	o, err = parseArgs([]string{"http://127.0.0.1:1/a", "http://127.0.0.1:1/b"}, io.Discard)
	if err != nil || o.sideB() != nil {
		t.Fatalf("no -b-* flags: %v, sideB %v", err, o.sideB() != nil)
	}
}
