package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
)

// gateway check --probe goes past the offline checks and connects, with
// the code that serves requests: every backend is discovered and its lists
// walked by a router built from the config (stdio backends are started,
// then stopped), every issuer's discovery and JWK Set are fetched as the
// verifier fetches them, the sign-in providers are discovered and their
// clients checked (probe_signin.go), an introspection endpoint is asked
// about a made-up token (probe_introspect.go), the Redis URL is pinged,
// and every access and rate limit pattern is matched against what the
// backends publish, with the matcher enforcement uses. Each thing checked
// prints one line, "ok", "FAIL", or "skip" (not checkable because of a
// FAIL above); any FAIL makes the exit status 1.

// probeReport collects the lines of a probe; safe for concurrent use.
type probeReport struct {
	mu       sync.Mutex
	lines    []string
	problems int
}

func (p *probeReport) ok(format string, args ...any) { p.add("ok   ", format, args...) }

// skip is a line for what could not be checked because of a problem
// already reported: it is not counted again.
func (p *probeReport) skip(format string, args ...any) { p.add("skip ", format, args...) }

func (p *probeReport) fail(format string, args ...any) {
	p.mu.Lock()
	p.problems++
	p.mu.Unlock()
	p.add("FAIL ", format, args...)
}

func (p *probeReport) add(mark, format string, args ...any) {
	line := mark + strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")
	p.mu.Lock()
	p.lines = append(p.lines, line)
	p.mu.Unlock()
}

// probe runs every probe, each bounded by timeout, prints the lines and
// returns an error naming the number of problems (nil when none).
func probe(cfg *config.Config, redisURL string, timeout time.Duration, stdout io.Writer) error {
	rep := &probeReport{}
	var wg sync.WaitGroup
	wg.Go(func() { probeBackends(cfg, timeout, rep) })
	for _, s := range cfg.Auth.Issuers {
		wg.Go(func() { probeIssuer(s, timeout, rep) })
	}
	if cfg.Auth.Issuers == nil && cfg.Auth.JWT != nil {
		wg.Go(func() { probeIssuer(cfg.Auth.JWT, timeout, rep) })
	}
	probeSignIn(&wg, cfg, timeout, rep)
	probeIntrospections(&wg, cfg, timeout, rep)
	if u := strings.TrimSpace(redisURL); u != "" {
		wg.Go(func() { probeRedis(u, cfg, timeout, rep) })
	}
	wg.Wait()
	for _, l := range rep.lines {
		fmt.Fprintln(stdout, l)
	}
	if rep.problems > 0 {
		return fmt.Errorf("check --probe: %d problem(s) found (the FAIL lines above)", rep.problems)
	}
	return nil
}

// probeBackends walks every backend of every vhost through a router of
// the config's virtual hosts, then matches the patterns.
func probeBackends(cfg *config.Config, timeout time.Duration, rep *probeReport) {
	st := store.NewMemory()
	defer st.Close()
	rt := router.New(cfg.VirtualHosts, router.Options{Store: st, Logger: slog.New(slog.DiscardHandler),
		Info: router.Implementation{Name: "mcpgw-check", Version: "probe"}})
	defer rt.Close() // stops the stdio backends it started
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, vc := range rt.CheckVHosts(ctx) {
		for _, b := range vc.Backends {
			switch {
			case b.Err != "" && b.NeedsCaller:
				// Its requests carry a caller's credentials, and a probe
				// has no caller: what it met says nothing of the backend.
				rep.skip("backend %s/%s: not listed: its requests carry a caller's credentials, and a probe has none (%s)", vc.VHost, b.Key, timeoutSays(b.Err, ctx, timeout))
				continue
			case b.Err != "":
				rep.fail("backend %s/%s: %s", vc.VHost, b.Key, timeoutSays(b.Err, ctx, timeout))
				continue
			}
			rep.ok("backend %s/%s: reachable, lists %d tool(s), %d resource(s), %d template(s), %d prompt(s)",
				vc.VHost, b.Key, b.Tools, b.Resources, b.Templates, b.Prompts)
		}
		probePatterns(cfg, vc, rep)
	}
}

// probePatterns reports a vhost's unmatched patterns, one line each.
func probePatterns(cfg *config.Config, vc router.VHostCheck, rep *probeReport) {
	vh := cfg.VirtualHosts[vc.VHost]
	if vh == nil || (vh.Access == nil && vh.RateLimits == nil) {
		return
	}
	if !vc.Complete {
		rep.skip("patterns of %s: not checked: a backend could not be listed (see above)", vc.VHost)
		return
	}
	for _, u := range vc.Unmatched {
		rep.fail("pattern %s %q matches nothing virtual host %s publishes (%s)", router.PatternField(vc.VHost, u), u.Pattern, vc.VHost, u.Kind)
	}
	if len(vc.Unmatched) == 0 {
		rep.ok("patterns of %s: every access and rate limit pattern matches something", vc.VHost)
	}
}

// timeoutSays makes a failure that the probe's deadline caused say so.
func timeoutSays(msg string, ctx context.Context, timeout time.Duration) string {
	if ctx.Err() == nil {
		return msg
	}
	if msg == context.DeadlineExceeded.Error() {
		return fmt.Sprintf("no answer within %v (--probe-timeout)", timeout)
	}
	return fmt.Sprintf("%s (the probe timed out after %v: --probe-timeout)", msg, timeout)
}

func probeIssuer(s *config.JWTSettings, timeout time.Duration, rep *probeReport) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	what, err := auth.ProbeIssuer(ctx, s)
	if err != nil {
		rep.fail("issuer %s: %s", s.Issuer, timeoutSays(err.Error(), ctx, timeout))
		return
	}
	rep.ok("issuer %s: %s", s.Issuer, what)
}

// probeRedis pings the store at u; the line names the URL without its
// password.
func probeRedis(u string, cfg *config.Config, timeout time.Duration, rep *probeReport) {
	shown := u
	if pu, err := url.Parse(u); err == nil {
		shown = pu.Redacted()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	bound := timeout
	if t := cfg.Store.Timeout; t > 0 && t < bound {
		bound = t
	}
	rs, err := store.NewRedis(u, store.RedisOptions{Timeout: bound})
	if err == nil {
		err = rs.Ping(ctx)
		_ = rs.Close()
	}
	if err != nil {
		rep.fail("redis %s: %s", shown, timeoutSays(err.Error(), ctx, timeout))
		return
	}
	rep.ok("redis %s: reachable", shown)
}
