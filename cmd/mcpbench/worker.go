package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Workloads.
const (
	WorkloadCall = "call" // tools/call of Config.Tool with Config.Args
	WorkloadList = "list" // tools/list, every page: one request is one full walk
	WorkloadMix  = "mix"  // Config.MixCall percent call, the rest list
	// WorkloadInit opens a new session per request (initialize +
	// notifications/initialized) and leaves it open, for idle-session
	// measurements: the server reaps those sessions by its own TTL.
	WorkloadInit = "init"
)

// Config is one benchmark run against one URL.
type Config struct {
	URL         string
	Concurrency int           // workers, each with its own session
	Duration    time.Duration // measured time after the warm-up; 0: until Requests
	// Requests, when set, is exactly how many requests are sent after the
	// warm-up and measured; 0: until Duration.
	Requests int64
	Warmup   time.Duration // requests finishing before this are not counted
	Workload string        // call (default), list, mix, init
	Tool     string        // for call and mix (default echo)
	Args     json.RawMessage
	MixCall  int // percent of call requests in mix (default 80)
	Headers  http.Header
	// Proto is the protocolVersion offered in initialize (default
	// 2025-11-25); a modern one (2026-07-28 or later: IsModern) is carried
	// by every request instead, and workers open no session.
	Proto   string
	Timeout time.Duration // per HTTP request (default 30s)
	// Progress receives a line every second while the run lasts; nil: none.
	Progress io.Writer
	// Label prefixes the progress line ("A round 1/3").
	Label string
	// CPUPID, when set, is a process whose CPU per request over the
	// measured window is reported (Result.CPUMicrosPerRequest): the
	// gateway, or the bare proxy it is set against (proc_cpu.go).
	CPUPID int
	// MaxPages, when set, ends a list walk after that many pages (1: the
	// first page only); 0: every page.
	MaxPages int
}

// DefaultProto is the protocolVersion offered in initialize.
const DefaultProto = "2025-11-25"

func (cfg *Config) setDefaults() error {
	if err := checkURL(cfg.URL); err != nil {
		return err
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.Duration < 0 || cfg.Requests < 0 || cfg.Warmup < 0 {
		return errors.New("duration, request count and warm-up must not be negative")
	}
	if cfg.Duration == 0 && cfg.Requests == 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.Workload == "" {
		cfg.Workload = WorkloadCall
	}
	switch cfg.Workload {
	case WorkloadCall, WorkloadList, WorkloadMix, WorkloadInit:
	default:
		return fmt.Errorf("unknown workload %q (want call, list, mix or init)", cfg.Workload)
	}
	if cfg.Tool == "" {
		cfg.Tool = "echo"
	}
	if len(cfg.Args) == 0 {
		cfg.Args = json.RawMessage(`{"text":"hi"}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(cfg.Args, &obj); err != nil || obj == nil {
		return fmt.Errorf("tool arguments %q are not a JSON object", cfg.Args)
	}
	if cfg.Workload == WorkloadMix && (cfg.MixCall < 0 || cfg.MixCall > 100) {
		return fmt.Errorf("mix: %d is not a percentage", cfg.MixCall)
	}
	if cfg.Proto == "" {
		cfg.Proto = DefaultProto
	}
	if IsModern(cfg.Proto) && cfg.Workload == WorkloadInit {
		return fmt.Errorf("workload init opens sessions: protocol %s has none", cfg.Proto)
	}
	if cfg.MaxPages < 0 {
		return fmt.Errorf("-pages %d: must not be negative", cfg.MaxPages)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	return nil
}

func checkURL(s string) error {
	if s == "" {
		return errors.New("no URL: pass -url or a positional URL")
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("bad URL %q: %v", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bad URL %q: want http://host[:port]/path or https://host[:port]/path", s)
	}
	return nil
}

// Operations a request can be; a mix has several.
const (
	opCall = iota
	opList
	opInit
	numOps
)

var opNames = [numOps]string{WorkloadCall, WorkloadList, WorkloadInit}

type opStats struct {
	hist         Histogram
	pages, items int64 // list: pages fetched and tools seen, over measured walks
	maxPage      int   // list: the bytes of the largest page's result
}

// worker owns one session and its own statistics; they are merged when
// the run ends, so workers share nothing but a few atomics.
type worker struct {
	r       *runner
	client  *Client
	rng     *rand.Rand
	ops     [numOps]opStats
	errs    map[string]int64
	samples map[string]string // the first message of each error key
	reinits int64
	cursor  []byte // scratch for list params
	// walkMaxPage is the bytes of the largest page of the latest walk.
	walkMaxPage int
}

type runner struct {
	cfg        Config
	ccfg       *ClientConfig
	callParams json.RawMessage

	measureFrom time.Time
	deadline    time.Time // zero: none
	tickets     atomic.Int64
	ok, failed  atomic.Int64 // measured, for the progress line
	lastDone    atomic.Int64 // unix nanos of the last measured completion
}

// Run runs one benchmark and returns its figures. Cancelling ctx stops it
// early: requests still in flight are dropped and the result, marked
// Interrupted, covers the time until then. An error means the run could
// not start (bad configuration, or a session could not be initialized).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	hc := newHTTPClient(cfg.Concurrency, cfg.Timeout)
	defer hc.CloseIdleConnections()
	r := &runner{
		cfg:  cfg,
		ccfg: &ClientConfig{URL: cfg.URL, HTTP: hc, Headers: cfg.Headers, Proto: cfg.Proto},
	}
	r.callParams, _ = json.Marshal(struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{cfg.Tool, cfg.Args})

	workers := r.newWorkers()

	// Every session is open (a modern client: has had its server/discover
	// answered) before the clock starts.
	if cfg.Workload != WorkloadInit {
		if err := openAll(ctx, workers); err != nil {
			closeAll(workers)
			return nil, err
		}
	}

	started := time.Now()
	r.measureFrom = started.Add(cfg.Warmup)
	if cfg.Duration > 0 {
		r.deadline = r.measureFrom.Add(cfg.Duration)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopProgress := r.progress(runCtx, started)

	cpu := openCPUWindow(cfg.CPUPID, r.measureFrom)
	defer cpu.close()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(runCtx)
		}()
	}
	wg.Wait()
	end := time.Now()
	cpuUsed := cpu.used()
	interrupted := ctx.Err() != nil
	stopProgress()
	closeAll(workers)

	switch {
	case interrupted:
	case cfg.Requests > 0 && r.ok.Load()+r.failed.Load() == cfg.Requests:
		end = time.Unix(0, r.lastDone.Load()) // the count was reached
	case !r.deadline.IsZero():
		end = r.deadline
	}
	res := r.result(workers, started, end, interrupted)
	if cpuUsed >= 0 && res.Requests > 0 {
		res.CPUPID = cfg.CPUPID
		res.CPUMicrosPerRequest = float64(cpuUsed) / float64(res.Requests)
		res.CPUMicrosPerItem = cpuPerItem(cpuUsed, res)
	}
	return res, nil
}

// newWorkers makes the run's workers, each with a client of its own.
func (r *runner) newWorkers() []*worker {
	workers := make([]*worker, r.cfg.Concurrency)
	for i := range workers {
		workers[i] = &worker{
			r:       r,
			client:  NewClient(r.ccfg),
			rng:     rand.New(rand.NewPCG(uint64(i)+1, uint64(time.Now().UnixNano()))),
			errs:    map[string]int64{},
			samples: map[string]string{},
		}
	}
	return workers
}

// cpuWindow measures the CPU a process in front of the URL uses over the
// measured window: read when the window opens (a timer: the warm-up runs
// meanwhile) and when the workers are done. nil: no process to watch.
type cpuWindow struct {
	pid   int
	start chan int64
	timer *time.Timer
}

func openCPUWindow(pid int, at time.Time) *cpuWindow {
	if pid <= 0 {
		return nil
	}
	c := &cpuWindow{pid: pid, start: make(chan int64, 1)}
	c.timer = time.AfterFunc(time.Until(at), func() {
		if us, err := procCPUMicros(pid); err == nil {
			c.start <- us
		}
	})
	return c
}

func (c *cpuWindow) close() {
	if c != nil {
		c.timer.Stop()
	}
}

// used is the CPU used since the window opened, in microseconds; -1 when
// unknown (no process, or the window never opened).
func (c *cpuWindow) used() int64 {
	if c == nil {
		return -1
	}
	us, err := procCPUMicros(c.pid)
	if err != nil {
		return -1
	}
	select {
	case start := <-c.start:
		return us - start
	default: // the window never opened
		return -1
	}
}

// cpuPerItem is the CPU per listed item of a list run (0 for another
// workload): the gateway's own cost of a list, whatever the number of
// items in the vhost (make bench's list-scale). A run with more than 1%
// of its walks failed has none; with fewer (the bare proxy drops one now
// and then), their CPU counts towards the items of the others, so the
// figure errs high, never low.
func cpuPerItem(cpuMicros int64, res *Result) float64 {
	o := res.Ops[WorkloadList]
	if o == nil || o.ToolsPerRequest <= 0 || o.OK == 0 || res.Errors*100 > res.Requests {
		return 0
	}
	return float64(cpuMicros) / (o.ToolsPerRequest * float64(o.OK))
}

// openAll opens every worker's client concurrently (Client.Open) and
// returns the first failure, naming the URL.
func openAll(ctx context.Context, workers []*worker) error {
	errc := make(chan error, len(workers))
	for _, w := range workers {
		go func() { errc <- w.client.Open(ctx) }()
	}
	var first error
	for range workers {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted while opening clients: %w", ctx.Err())
		}
		return fmt.Errorf("%s: %w", workers[0].r.cfg.URL, first)
	}
	return nil
}

// closeAll ends every session (DELETE), concurrently and briefly: a slow
// server must not hold the report back.
func closeAll(workers []*worker) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.client.Close(ctx)
		}()
	}
	wg.Wait()
}

// loop sends requests back to back until the run ends. With a request
// count, a request is counted when it starts after the warm-up (exactly
// Requests are sent and measured: the idle-session and store-traffic
// measurements rely on it); with a duration only, when it completes inside
// the measured window.
func (w *worker) loop(ctx context.Context) {
	r := w.r
	for ctx.Err() == nil {
		if !r.deadline.IsZero() && !time.Now().Before(r.deadline) {
			return
		}
		ticket := false
		if r.cfg.Requests > 0 && !time.Now().Before(r.measureFrom) {
			if r.tickets.Add(1) > r.cfg.Requests {
				return
			}
			ticket = true
		}
		op := w.pickOp()
		start := time.Now()
		pages, items, err := w.do(ctx, op)
		end := time.Now()
		if ctx.Err() != nil {
			return // interrupted: this request does not count
		}
		if err != nil {
			w.afterError(ctx, err)
		}
		if r.cfg.Requests > 0 && !ticket || end.Before(r.measureFrom) {
			continue // warm-up
		}
		if !r.deadline.IsZero() && end.After(r.deadline) {
			return
		}
		if err != nil {
			key := errorKey(err)
			w.errs[key]++
			if _, ok := w.samples[key]; !ok {
				w.samples[key] = err.Error()
			}
			r.failed.Add(1)
		} else {
			s := &w.ops[op]
			s.hist.Record(end.Sub(start))
			s.pages += pages
			s.items += items
			s.maxPage = max(s.maxPage, w.walkMaxPage)
			r.ok.Add(1)
		}
		for { // keep the latest completion time
			last := r.lastDone.Load()
			if end.UnixNano() <= last || r.lastDone.CompareAndSwap(last, end.UnixNano()) {
				break
			}
		}
	}
}

func (w *worker) pickOp() int {
	switch w.r.cfg.Workload {
	case WorkloadList:
		return opList
	case WorkloadInit:
		return opInit
	case WorkloadMix:
		if w.rng.IntN(100) < w.r.cfg.MixCall {
			return opCall
		}
		return opList
	}
	return opCall
}

// do runs one request of the workload. A list request is a walk of every
// page; pages and items say how many it fetched.
func (w *worker) do(ctx context.Context, op int) (pages, items int64, err error) {
	switch op {
	case opCall:
		res, err := w.client.Call(ctx, "tools/call", w.r.callParams)
		if err == nil && bytes.Contains(res, []byte(`"isError":true`)) {
			err = &RequestError{Kind: KindToolError, Method: "tools/call", Message: snippet(res)}
		}
		return 0, 0, err
	case opList:
		return w.listAll(ctx)
	default:
		c := NewClient(w.r.ccfg)
		return 0, 0, c.Initialize(ctx) // left open on purpose
	}
}

// maxPages stops a walk whose server keeps returning a nextCursor.
const maxPages = 10000

func (w *worker) listAll(ctx context.Context) (pages, items int64, err error) {
	var page struct {
		Tools      []struct{} `json:"tools"`
		NextCursor string     `json:"nextCursor"`
	}
	var params json.RawMessage
	w.walkMaxPage = 0
	for {
		res, err := w.client.Call(ctx, "tools/list", params)
		if err != nil {
			return pages, items, err
		}
		w.walkMaxPage = max(w.walkMaxPage, len(res))
		page.Tools, page.NextCursor = page.Tools[:0], ""
		if err := json.Unmarshal(res, &page); err != nil {
			return pages, items, &RequestError{Kind: KindProtocol, Method: "tools/list", Message: "bad result: " + snippet(res)}
		}
		pages++
		items += int64(len(page.Tools))
		if page.NextCursor == "" || w.r.cfg.MaxPages > 0 && pages >= int64(w.r.cfg.MaxPages) {
			return pages, items, nil
		}
		if pages >= maxPages {
			return pages, items, &RequestError{Kind: KindProtocol, Method: "tools/list", Message: fmt.Sprintf("still a nextCursor after %d pages", pages)}
		}
		w.cursor = append(w.cursor[:0], `{"cursor":`...)
		w.cursor, _ = appendJSONString(w.cursor, page.NextCursor)
		w.cursor = append(w.cursor, '}')
		params = w.cursor
	}
}

func appendJSONString(b []byte, s string) ([]byte, error) {
	q, err := json.Marshal(s)
	return append(b, q...), err
}

// afterError reacts to a failed request: a 404 means the server forgot the
// session (expired, or a restarted server), so open a new one as a real
// client would; a transport error gets a short pause so a dead server is
// not hammered in a tight loop.
func (w *worker) afterError(ctx context.Context, err error) {
	var re *RequestError
	if !errors.As(err, &re) {
		return
	}
	switch {
	case re.Kind == KindHTTP && re.Status == http.StatusNotFound && w.client.SessionID() != "":
		w.reinits++
		if ierr := w.client.Initialize(ctx); ierr != nil && ctx.Err() == nil {
			sleep(ctx, 100*time.Millisecond)
		}
	case re.Kind == KindTransport || re.Kind == KindTimeout:
		sleep(ctx, 10*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// progress prints a line every second until the returned stop is called.
// On a terminal the line is rewritten in place.
func (r *runner) progress(ctx context.Context, started time.Time) (stop func()) {
	out := r.cfg.Progress
	if out == nil {
		return func() {}
	}
	tty := isTerminal(out)
	done := make(chan struct{})
	finished := make(chan struct{})
	label := ""
	if r.cfg.Label != "" {
		label = "[" + r.cfg.Label + "] "
	}
	// Ticks fall every second of the warm-up, then every second of the
	// measurement, so each rate covers a whole second.
	nextTick := func(prev time.Time) time.Time {
		next := prev.Add(time.Second)
		if prev.Before(r.measureFrom) && !next.Before(r.measureFrom) {
			next = r.measureFrom.Add(time.Second)
		}
		return next
	}
	go func() {
		defer close(finished)
		next := nextTick(started)
		timer := time.NewTimer(time.Until(next))
		defer timer.Stop()
		var lastN int64
		printed := false
		for {
			select {
			case <-done:
			case <-ctx.Done():
			case <-timer.C:
				var line string
				if next.Before(r.measureFrom) {
					line = fmt.Sprintf("%swarm-up %.0fs of %s", label, next.Sub(started).Seconds(), r.cfg.Warmup)
				} else {
					n, e := r.ok.Load(), r.failed.Load()
					line = fmt.Sprintf("%s%5.0fs  %9d req  %9.1f req/s  %d errors",
						label, next.Sub(r.measureFrom).Seconds(), n+e, float64(n-lastN), e)
					lastN = n
				}
				if tty {
					fmt.Fprint(out, "\r\033[K"+line)
				} else {
					fmt.Fprintln(out, line)
				}
				printed = true
				next = nextTick(next)
				timer.Reset(time.Until(next))
				continue
			}
			if tty && printed {
				fmt.Fprint(out, "\r\033[K")
			}
			return
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
