package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"sync"
	"time"
)

// Pool defaults: a process kept warm, up to four requests of one backend
// at once per instance, and a spare stopped after five idle minutes.
const (
	DefaultPoolMin  = 1
	DefaultPoolMax  = 4
	DefaultPoolIdle = 5 * time.Minute
)

// inheritedEnv are the gateway's environment variables a stdio process
// gets besides its configured env: what programs need to run (find
// executables, a home, a locale, a temp dir), never the gateway's own
// settings, which hold secrets (the JWT key, the Redis password).
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT"}

// StdioConfig says how to run a stdio backend (transport stdio).
type StdioConfig struct {
	// Command is the program to run (a path, or a name looked up in PATH);
	// Args its arguments.
	Command string
	Args    []string
	// Env is added to the few variables inherited from the gateway
	// (inheritedEnv). Values are already ${ENV}-expanded and may hold
	// secrets: never log them.
	Env map[string]string
	// Dir is the working directory ("" = the gateway's).
	Dir  string
	Pool PoolConfig
	// VHost is the virtual host the backend belongs to (the router sets
	// it, config does not): every log line of the pool and its processes
	// names it beside the backend, since one command may serve several
	// vhosts, each with a pool of its own.
	VHost string
}

// PoolConfig sizes the processes an instance keeps for one backend.
type PoolConfig struct {
	// Min processes are kept running (started at once, replaced when one
	// exits); Max bounds the processes at once, so the requests to the
	// backend running at once; a process above Min idle for Idle is
	// stopped. Zero Max and Idle mean the defaults.
	Min, Max int
	Idle     time.Duration
}

// stdioPool keeps the processes of one stdio backend. A request takes any
// idle process (starting one if fewer than Max run), uses it alone, and
// gives it back; no client session is tied to a process.
type stdioPool struct {
	c          *Client
	cfg        StdioConfig
	env        []string
	log        *slog.Logger // names the vhost and the backend
	clientInfo json.RawMessage

	closing context.Context // ended by Close: process starts give up
	stopAll context.CancelFunc
	wg      sync.WaitGroup // process goroutines and the keeper
	kept    chan struct{}  // closed when the keeper returns

	mu      sync.Mutex
	all     map[*process]bool // every process started and not yet reaped
	idle    []*process        // least recently used first
	pending int               // processes being started
	changed chan struct{}     // closed and replaced when a process is freed or ends
	poke    chan struct{}     // wakes the keeper (buffered 1)
	closed  bool
	waiting int    // processes whose call waits on a client (awaitClient)
	started uint64 // processes started, handshake done
	crashed uint64 // processes that exited unasked
}

func newStdioPool(c *Client, log *slog.Logger, clientInfo json.RawMessage) *stdioPool {
	cfg := *c.cfg.Stdio
	if cfg.Pool.Max <= 0 {
		cfg.Pool.Max = DefaultPoolMax
	}
	if cfg.Pool.Idle <= 0 {
		cfg.Pool.Idle = DefaultPoolIdle
	}
	cfg.Pool.Min = min(max(cfg.Pool.Min, 0), cfg.Pool.Max)
	if len(clientInfo) == 0 {
		clientInfo = json.RawMessage(`{"name":"mcpgw","version":"0"}`)
	}
	if cfg.VHost != "" {
		log = log.With("vhost", cfg.VHost)
	}
	log = log.With("backend", c.cfg.Key)
	p := &stdioPool{c: c, cfg: cfg, env: processEnv(cfg.Env), log: log, clientInfo: clientInfo,
		all: map[*process]bool{}, changed: make(chan struct{}), poke: make(chan struct{}, 1), kept: make(chan struct{})}
	p.closing, p.stopAll = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.keep()
	return p
}

// processEnv is the environment of a process: inheritedEnv, then env.
func processEnv(env map[string]string) []string {
	var out []string
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok && env[k] == "" {
			out = append(out, k+"="+v)
		}
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

// broadcastLocked wakes every acquire waiting for a process.
func (p *stdioPool) broadcastLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *stdioPool) pokeKeeper() {
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// acquire returns a process for one Conn's exclusive use: an idle one
// (the most recently used, so spares age out), a new one while fewer than
// Max run besides those waiting on a client, or the first one freed. It
// waits under ctx.
func (p *stdioPool) acquire(ctx context.Context) (*process, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, p.c.newError("open", 0, ErrClosed)
		}
		for len(p.idle) > 0 {
			pr := p.idle[len(p.idle)-1]
			p.idle = p.idle[:len(p.idle)-1]
			if pr.alive() {
				p.mu.Unlock()
				return pr, nil
			}
		}
		if len(p.all)+p.pending-p.waiting < p.cfg.Pool.Max {
			p.pending++
			p.mu.Unlock()
			return p.startCounted(ctx)
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, p.c.newError("open", 0, fmt.Errorf("waiting for a free process (all %d in use): %w", p.cfg.Pool.Max, context.Cause(ctx)))
		}
	}
}

// startCounted starts a process counted in pending (by the caller).
func (p *stdioPool) startCounted(ctx context.Context) (*process, error) {
	sctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(p.closing, cancel)
	pr, err := p.start(sctx)
	stop()
	cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending--
	if err != nil {
		p.broadcastLocked()
		return nil, err
	}
	if p.closed {
		pr.stop()
		return nil, p.c.newError("open", 0, ErrClosed)
	}
	p.all[pr] = true
	p.started++
	return pr, nil
}

// release gives a process back. One that may still be working on a call
// given up on (reusable false) is stopped rather than handed to the next
// request, whose answers it could confuse; the keeper replaces it.
func (p *stdioPool) release(pr *process, reusable bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || !reusable || !pr.alive() {
		pr.stop()
		return
	}
	pr.lastUsed = time.Now()
	p.idle = append(p.idle, pr)
	p.broadcastLocked()
	p.pokeKeeper()
}

// exited is called by a process's reader once it has been reaped.
func (p *stdioPool) exited(pr *process) {
	if pr.unasked {
		pr.logger().Warn("stdio backend process exited", "error", pr.exitErr)
	} else {
		pr.logger().Debug("stdio backend process stopped", "error", pr.exitErr)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr.unasked {
		p.crashed++
	}
	delete(p.all, pr)
	p.idle = slices.DeleteFunc(p.idle, func(x *process) bool { return x == pr })
	p.broadcastLocked()
	p.pokeKeeper()
}

// keep holds the pool at Min processes and stops those above Min idle for
// longer than Idle. A start that fails is retried with backoff (1s up to
// 30s), so a broken command costs a log line now and then, not a loop.
func (p *stdioPool) keep() {
	defer p.wg.Done()
	defer close(p.kept)
	var retryAt time.Time
	backoff := time.Second
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		now := time.Now()
		stale, start, missing, next, ok := p.tend(now, !now.Before(retryAt))
		if !ok {
			return
		}
		for _, pr := range stale {
			pr.stop()
		}
		if start {
			ctx, cancel := context.WithTimeout(p.closing, p.startTimeout())
			pr, err := p.startCounted(ctx)
			cancel()
			if err != nil {
				if p.closing.Err() == nil {
					p.log.Warn("stdio backend process failed to start", "retry_in", backoff, "error", err)
				}
				retryAt = time.Now().Add(backoff)
				backoff = min(backoff*2, 30*time.Second)
			} else {
				backoff, retryAt = time.Second, time.Time{}
				p.release(pr, true)
			}
			continue
		}
		if missing {
			if d := time.Until(retryAt); d > 0 && (next == 0 || d < next) {
				next = d
			}
		}
		if next > 0 {
			timer.Reset(next)
		}
		select {
		case <-p.closing.Done():
		case <-p.poke:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// tend, under the lock, takes the idle processes above Min that have
// been idle for Idle (stale), and says whether one should be started now
// (counted in pending if so), whether some are missing, and when the
// next idle process would go stale (0: none). ok is false once closed.
func (p *stdioPool) tend(now time.Time, mayStart bool) (stale []*process, start, missing bool, next time.Duration, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, false, false, 0, false
	}
	for len(p.idle) > 0 && len(p.all)-len(stale) > p.cfg.Pool.Min {
		pr := p.idle[0]
		if age := now.Sub(pr.lastUsed); age < p.cfg.Pool.Idle {
			next = p.cfg.Pool.Idle - age
			break
		}
		p.idle = p.idle[1:]
		stale = append(stale, pr)
	}
	missing = len(p.all)+p.pending < p.cfg.Pool.Min
	if missing && mayStart {
		p.pending++
		start = true
	}
	return stale, start, missing, next, true
}

// startTimeout bounds a start (process and handshake) the keeper makes.
func (p *stdioPool) startTimeout() time.Duration {
	if p.c.cfg.Timeout > 0 {
		return p.c.cfg.Timeout
	}
	return 30 * time.Second
}

// close stops every process and waits for them to be reaped. Processes in
// use are stopped when their Conn gives them back, or after grace.
func (p *stdioPool) close(grace time.Duration) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.broadcastLocked()
	p.mu.Unlock()
	p.stopAll()
	for _, pr := range idle {
		pr.stop()
	}
	<-p.kept
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		n, changed := len(p.all)+p.pending, p.changed
		p.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-changed:
			continue
		case <-deadline.C:
		}
		p.mu.Lock()
		for pr := range p.all {
			pr.stop()
		}
		p.mu.Unlock()
		break
	}
	p.wg.Wait()
}

// PoolStats is what a stdio backend's pool holds now, and what it has
// done since it was made (a reload that changes the backend makes a new
// pool, so the counts start again, as a Prometheus counter may).
type PoolStats struct {
	Running  int // processes started and not yet reaped (idle, in use or stopping)
	Idle     int
	Starting int
	// Started counts the processes started (handshake done); Crashed those
	// that exited without being asked to (killed, crashed, exited on
	// their own), each replaced by the next request or the pool's Min.
	Started, Crashed uint64
}

// Stats reports a stdio backend's pool (zero for other transports).
func (c *Client) Stats() PoolStats {
	p := c.pool
	if p == nil {
		return PoolStats{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Running: len(p.all), Idle: len(p.idle), Starting: p.pending, Started: p.started, Crashed: p.crashed}
}

// A call that waits on its client (a backend's elicitation, answered by a
// person, perhaps minutes later, perhaps through a parked call whose
// client holds no connection) holds its process all that time. Counted
// against Max, a few such calls would leave none for anyone else; not
// counted at all, clients could make the pool grow without end. So waiting
// processes have a bound of their own, Max: while one waits, the pool may
// start another for other requests, and at most Max wait at once (at most
// 2×Max processes run). A backend request that would make one more wait
// is refused (the backend gets an error answer, not the pool's last
// process); spares above Max stop when idle, as usual.

// errPoolWaiting refuses a call one more waiting process.
type errPoolWaiting struct{ max int }

func (e errPoolWaiting) Error() string {
	return fmt.Sprintf("all %d processes this backend may have waiting on clients are waiting; try again when one is answered", e.max)
}

// awaitClient counts a process as waiting on a client until release.
func (p *stdioPool) awaitClient() (release func(), err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting >= p.cfg.Pool.Max {
		return nil, errPoolWaiting{p.cfg.Pool.Max}
	}
	p.waiting++
	p.broadcastLocked() // an acquire may now start a process
	return sync.OnceFunc(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.waiting--
	}), nil
}
