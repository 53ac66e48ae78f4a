// Command mcpbench is a load generator for MCP servers over Streamable
// HTTP: a backend, the gateway, or anything else that speaks the transport.
//
//	mcpbench [flags] URL                  one run
//	mcpbench [flags] URL_A URL_B          A B A B ... rounds and the median ratio B/A
//	mcpbench summary name=cmp.json ...    a Markdown table of comparisons (scripts/bench.sh)
//
// Each of -c workers opens its own session (initialize and
// notifications/initialized, not timed; with -proto 2026-07-28 there is no
// session, and each worker's first request is an untimed server/discover),
// then sends requests back to back:
// tools/call (-workload call), a walk of every tools/list page (list), a
// mix of both (mix), or new sessions left open (init). After -warmup the
// run measures for -d or -n requests and reports requests per second,
// latency percentiles of the successful requests and errors by kind. Ctrl-C
// stops early and still reports.
//
// See BENCHMARKS.md for the standard run (make bench).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// headerFlag collects repeated -H 'Name: value' flags.
type headerFlag struct{ h http.Header }

func (f *headerFlag) String() string { return "" }

func (f *headerFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return fmt.Errorf("%q is not 'Name: value'", s)
	}
	if f.h == nil {
		f.h = http.Header{}
	}
	f.h.Add(name, strings.TrimSpace(value))
	return nil
}

type options struct {
	cfg         Config
	urlA        string
	urlB        string
	rounds      int
	jsonPath    string
	quiet       bool
	args        string
	durationSet bool // -d was given
	cpuA, cpuB  int  // -cpu-pid-a, -cpu-pid-b
	// B's own request, when comparing two kinds (-b-workload, -b-tool,
	// -b-args; "": A's).
	bWorkload, bTool, bArgs string
}

// sideBFlags registers -b-workload, -b-tool and -b-args.
func (o *options) sideBFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.bWorkload, "b-workload", "", "comparing: B's -workload, when B runs another request than A")
	fs.StringVar(&o.bTool, "b-tool", "", "comparing: B's -tool")
	fs.StringVar(&o.bArgs, "b-args", "", "comparing: B's -args")
}

// sideB adjusts B's config for its own request; nil when B runs A's.
func (o *options) sideB() func(*Config) {
	if o.bWorkload == "" && o.bTool == "" && o.bArgs == "" {
		return nil
	}
	return func(c *Config) {
		if o.bWorkload != "" {
			c.Workload = o.bWorkload
			c.MaxPages = 0
		}
		if o.bTool != "" {
			c.Tool = o.bTool
		}
		if o.bArgs != "" {
			c.Args = json.RawMessage(o.bArgs)
		}
	}
}

const usageText = `usage:
  mcpbench [flags] URL                  benchmark one MCP endpoint
  mcpbench [flags] URL_A URL_B          alternate rounds A B A B ... and report the median ratio B/A
  mcpbench summary name=cmp.json ...    print comparisons (-json files) as one Markdown table

examples:
  mcpbench -c 16 -d 10s http://127.0.0.1:8080/servers/demo/mcp
  mcpbench -workload list -n 2000 -H 'Authorization: Bearer TOKEN' http://host/servers/x/mcp
  mcpbench -proto 2026-07-28 http://127.0.0.1:8080/servers/demo/mcp     no session: _meta and headers on every request
  mcpbench -rounds 3 -d 5s -json out.json http://127.0.0.1:9001/mcp http://127.0.0.1:8080/servers/x/mcp

flags:
`

func parseArgs(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	var headers headerFlag
	fs := flag.NewFlagSet("mcpbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.urlA, "url", "", "MCP endpoint `URL` (or the first positional argument)")
	fs.StringVar(&o.urlB, "compare", "", "second `URL`: alternate rounds against -url and this one (or the second positional argument)")
	fs.IntVar(&o.cfg.Concurrency, "c", 16, "concurrent workers, each with its own session")
	fs.DurationVar(&o.cfg.Duration, "d", 10*time.Second, "measured `duration` of a run (of each round when comparing)")
	fs.Int64Var(&o.cfg.Requests, "n", 0, "measured request `count` instead of a duration (with -d too: whichever ends first)")
	fs.DurationVar(&o.cfg.Warmup, "warmup", time.Second, "warm-up before measuring: requests finishing in it are not counted")
	fs.StringVar(&o.cfg.Workload, "workload", WorkloadCall, "call: tools/call; list: tools/list, every page is one request; mix: -mix % call, the rest list; init: new sessions, left open")
	fs.StringVar(&o.cfg.Tool, "tool", "echo", "tool `name` for call and mix")
	fs.StringVar(&o.args, "args", `{"text":"hi"}`, "tool arguments, a JSON object")
	fs.IntVar(&o.cfg.MixCall, "mix", 80, "`percent` of tools/call requests in -workload mix")
	fs.Var(&headers, "H", "extra request header 'Name: value' (repeatable), e.g. -H 'Authorization: Bearer T'")
	fs.StringVar(&o.cfg.Proto, "proto", DefaultProto, "protocol `version`: offered in initialize; 2026-07-28 or later: no session, no initialize, the version and client in params._meta and the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers of every request")
	fs.DurationVar(&o.cfg.Timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.IntVar(&o.cfg.MaxPages, "pages", 0, "list: end a walk after this many pages (1: the first page only); 0: every page")
	o.sideBFlags(fs)
	fs.IntVar(&o.rounds, "rounds", 3, "rounds per URL when comparing")
	fs.IntVar(&o.cpuA, "cpu-pid-a", 0, "`pid` of the process in front of A (a bare proxy) whose CPU per request to report, from /proc (Linux); with one URL, the process in front of it")
	fs.IntVar(&o.cpuB, "cpu-pid-b", 0, "`pid` of the process in front of B (the gateway) whose CPU per request to report")
	fs.StringVar(&o.jsonPath, "json", "", "also write the figures as JSON to `file` (- for stdout, which then gets no table)")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress line on stderr")

	// Flags may come before or after the URLs.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "d" {
			o.durationSet = true
		}
	})
	if err := o.check(pos); err != nil {
		return nil, err
	}
	o.cfg.URL = o.urlA
	o.cfg.CPUPID = o.cpuA // a single run samples the process in front of its URL
	o.cfg.Args = json.RawMessage(o.args)
	o.cfg.Headers = headers.h
	if !o.quiet {
		o.cfg.Progress = stderr
	}
	// Catch configuration mistakes before anything is sent.
	c := o.cfg
	if err := c.setDefaults(); err != nil {
		return nil, err
	}
	if o.urlB != "" {
		if err := checkURL(o.urlB); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// check takes the positional URLs and refuses flags that contradict each
// other.
func (o *options) check(pos []string) error {
	for _, p := range pos {
		switch {
		case o.urlA == "":
			o.urlA = p
		case o.urlB == "":
			o.urlB = p
		default:
			return fmt.Errorf("too many URLs: %s", strings.Join(pos, " "))
		}
	}
	if o.urlA == "" {
		return errors.New("no URL given")
	}
	if o.cfg.Requests > 0 && !o.durationSet {
		o.cfg.Duration = 0 // -n alone: until the count
	}
	if o.cfg.Concurrency <= 0 {
		return fmt.Errorf("-c %d: need at least one worker", o.cfg.Concurrency)
	}
	if o.rounds <= 0 {
		return fmt.Errorf("-rounds %d: need at least one", o.rounds)
	}
	if o.cfg.Duration <= 0 && o.cfg.Requests <= 0 {
		return errors.New("-d and -n are both zero: nothing would end the run")
	}
	return nil
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "summary" {
		rows, err := loadSummaryRows(args[1:])
		if err == nil && len(rows) == 0 {
			err = errors.New("summary: no name=file.json arguments")
		}
		if err != nil {
			fmt.Fprintln(stderr, "mcpbench:", err)
			return 2
		}
		writeSummary(stdout, rows)
		return 0
	}

	o, err := parseArgs(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "mcpbench:", err)
		fmt.Fprintln(stderr, "run mcpbench -h for usage")
		return 2
	}

	var out interface{ WriteText(io.Writer) }
	var failed bool
	if o.urlB == "" {
		res, err := Run(ctx, o.cfg)
		if err != nil {
			fmt.Fprintln(stderr, "mcpbench:", err)
			return 1
		}
		out, failed = res, res.OK == 0
	} else {
		cmp, err := CompareSides(ctx, o.cfg, o.sideB(), o.urlB, o.rounds, o.cpuA, o.cpuB)
		if err != nil {
			fmt.Fprintln(stderr, "mcpbench:", err)
			return 1
		}
		out, failed = cmp, len(cmp.Rounds) == 0
	}
	if o.jsonPath != "-" {
		out.WriteText(stdout)
	}
	if o.jsonPath != "" {
		if err := writeJSON(o.jsonPath, stdout, out); err != nil {
			fmt.Fprintln(stderr, "mcpbench: -json:", err)
			return 1
		}
	}
	if ctx.Err() != nil {
		return 130
	}
	if failed {
		fmt.Fprintln(stderr, "mcpbench: no successful request")
		return 1
	}
	return 0
}
