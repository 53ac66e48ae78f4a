package router

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/mcpgw/gateway/router/policy"
)

// A pattern that matches nothing is silent: a misspelt deny leaves the
// tool it meant visible and callable, a misspelt rate limit glob never
// counts a call. Once the gateway process asks (WatchPatterns), each
// virtual host is checked (vhost_check.go) in the background as soon as
// every one of its backends has listed, again on each reload, when a
// backend announces a list change, and every DiscoveryMaxTTL; a check a
// backend failed is retried, backing off, and reports nothing, since the
// missing backend may publish what a pattern names. Each pattern that
// matches nothing is logged once, as a warning naming the vhost, its
// config field and the pattern, until it matches again or is fixed; the
// latest report is in Status (GET /status). Lambda never asks: a check
// costs every backend a walk of its lists.

// patternWatch is the router's state of the watch.
type patternWatch struct {
	on     bool // set once by WatchPatterns, under the base's mu
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	// logged holds the unmatched patterns already logged, per vhost.
	logged map[string]map[string]bool
}

// patternCheckTimeout bounds one check of a vhost.
const patternCheckTimeout = 2 * time.Minute

// WatchPatterns starts checking every virtual host's patterns, now and
// after every reload, until Close.
func (r *Router) WatchPatterns() {
	r.mu.Lock()
	if r.fed.patterns.on || r.closed {
		r.mu.Unlock()
		return
	}
	r.fed.patterns.on = true
	t := r.table.Load()
	r.mu.Unlock()
	r.fed.watchTable(t)
}

// watchTable starts one watcher per vhost of t, when the watch is on.
func (fd *federation) watchTable(t *routingTable) {
	fd.mu.Lock()
	on := fd.patterns.on
	fd.mu.Unlock()
	if !on {
		return
	}
	fd.patterns.mu.Lock()
	for name := range fd.patterns.logged { // a vhost no longer watched starts afresh
		if v, ok := t.vhosts[name]; !ok || (v.access == nil && v.limits == nil) {
			delete(fd.patterns.logged, name)
		}
	}
	fd.patterns.mu.Unlock()
	for _, v := range t.vhosts {
		if v.access != nil || v.limits != nil {
			fd.watchVHost(t, v)
		}
	}
}

// recheckPatterns asks v's watcher for a check now (a backend's list
// changed); it does nothing when no watcher runs.
func (v *vhost) recheckPatterns() {
	select {
	case v.recheck <- struct{}{}:
	default:
	}
}

// watchVHost checks v until t is retired or the router closes: at once,
// then on a recheck, every DiscoveryMaxTTL, and after a failed check
// sooner, backing off from ReprobeInterval.
func (fd *federation) watchVHost(t *routingTable, v *vhost) {
	if !fd.holdOpen() {
		return
	}
	go func() {
		defer fd.cleanup.Done()
		retry := fd.opts.ReprobeInterval
		for {
			ctx, cancel := context.WithTimeout(fd.patterns.ctx, patternCheckTimeout)
			vc := fd.checkVHost(ctx, v)
			cancel()
			if fd.patterns.ctx.Err() != nil || fd.table.Load() != t {
				return
			}
			v.patterns.Store(&vc)
			wait := fd.opts.DiscoveryMaxTTL
			if vc.Complete {
				fd.reportPatterns(vc)
				retry = fd.opts.ReprobeInterval
			} else {
				wait, retry = retry, min(2*retry, fd.opts.DiscoveryMaxTTL)
			}
			timer := time.NewTimer(wait)
			select {
			case <-fd.patterns.ctx.Done():
			case <-t.retired:
			case <-v.recheck:
			case <-timer.C:
			}
			timer.Stop()
			if fd.patterns.ctx.Err() != nil || fd.table.Load() != t {
				return
			}
		}
	}()
}

// reportPatterns logs each pattern of a complete check that matches
// nothing and was not logged since it last matched.
func (fd *federation) reportPatterns(vc VHostCheck) {
	fd.patterns.mu.Lock()
	defer fd.patterns.mu.Unlock()
	if fd.patterns.logged == nil {
		fd.patterns.logged = map[string]map[string]bool{}
	}
	before := fd.patterns.logged[vc.VHost]
	now := make(map[string]bool, len(vc.Unmatched))
	for _, u := range vc.Unmatched {
		id := u.Field + "\x00" + u.Pattern
		now[id] = true
		if before[id] {
			continue
		}
		fd.log.Warn(unmatchedMessage(u.Kind), "vhost", vc.VHost, "field", PatternField(vc.VHost, u), "pattern", u.Pattern)
	}
	fd.patterns.logged[vc.VHost] = now
}

// PatternField is an unmatched pattern's place in the config file, as
// gateway check names fields: virtual_hosts.NAME.access[0].deny[1].
func PatternField(vhost string, u policy.UnmatchedPattern) string {
	return "virtual_hosts." + vhost + "." + u.Field
}

// unmatchedMessage says what an unmatched pattern of kind means.
func unmatchedMessage(kind string) string {
	switch kind {
	case policy.PatternDeny:
		return "access deny pattern matches nothing the virtual host publishes: it hides nothing (misspelt?)"
	case policy.PatternAllow:
		return "access allow pattern matches nothing the virtual host publishes: it shows nothing"
	}
	return "rate limit tools pattern matches no tool of the virtual host: it limits nothing"
}

// UncheckedBackends names the backends a check could not list, with why.
func (vc *VHostCheck) UncheckedBackends() []string {
	var out []string
	for _, b := range vc.Backends {
		if b.Err != "" {
			out = append(out, b.Key+": "+strings.TrimSpace(b.Err))
		}
	}
	return out
}
