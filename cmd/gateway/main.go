// Command gateway serves the MCP gateway over plain HTTP.
//
//	gateway --config gateway.yaml [--listen :8080] [--redis-url redis://host:6379]
//	gateway --demo
//	gateway check --config gateway.yaml [--probe]
//	gateway token keygen|mint|serve-jwks   (test tokens; docs/guide/try-jwks-auth.md)
//	gateway --version
//
// Flags override environment variables (MCPGW_CONFIG, MCPGW_LISTEN,
// MCPGW_REDIS_URL, MCPGW_LOG_LEVEL, MCPGW_LOG_FORMAT). The config's
// virtual_hosts reload on SIGHUP and when the file changes. Without a Redis
// URL the gateway keeps sessions in memory and must run as a single
// instance. `gateway --help` has the rest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpgw/gateway/cmd/internal/app"
	"github.com/mcpgw/gateway/internal/buildinfo"
	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/store/redisconn"
)

// version and commit are stamped at link time and never written after:
//
//	go build -ldflags "-X main.version=v1.2.0 -X main.commit=$(git rev-parse HEAD)" ./cmd/gateway
//
// (`make build` and infra/Dockerfile do). main reads them once and passes
// them on; when they are empty, buildinfo.Read uses what the toolchain
// recorded. They must be package variables: -X can set nothing else.
var version, commit string

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr, buildinfo.Read(version, commit)); err != nil {
		printFatal(os.Stderr, err)
		os.Exit(1)
	}
}

// run is the whole command: it returns nil for exit status 0 and an error,
// printed as one line, for 1.
func run(args []string, stdout, stderr io.Writer, bi buildinfo.Info) error {
	o, done, err := command(args, stdout, bi)
	if done || err != nil {
		return err
	}
	log, jsonOut, err := setUpLogging(stderr, o)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, stopDemo, err := loadConfig(ctx, o)
	if err != nil {
		return err
	}
	defer stopDemo()

	a, err := app.Build(cfg, o.redisURL, log, appOptions(o, bi)...)
	if err != nil {
		return err
	}
	defer a.Close()
	if err := startStore(ctx, a, log); err != nil {
		return err
	}
	// Patterns that match nothing are warned of once the backends list
	// (router/pattern_watch.go), and again after each reload.
	a.Router.WatchPatterns()
	// Goroutines of this function end before the app closes.
	var wg sync.WaitGroup
	runCtx, cancelRun := context.WithCancel(ctx)
	defer func() {
		cancelRun()
		wg.Wait()
	}()

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	stopAside, err := startAsideListeners(runCtx, o, a.Admin, log)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopAside()
	srv := newHTTPServer(a.Handler, cfg.Server, log)
	// GET streams never end on their own: end them first so Shutdown can
	// drain; their clients resume on another instance.
	srv.RegisterOnShutdown(a.Sessions.EndStreams)
	srv.RegisterOnShutdown(a.Router.EndListens) // 2026-07-28 listens end with their result
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	base := "http://" + displayAddr(ln.Addr())
	log.Info("gateway started", "version", bi.Version, "commit", bi.Commit, "listen", base, "config", cfg.Source)
	// Tests and scripts wait for this exact line: it is printed once the
	// listener accepts connections (in JSON mode as the message of a JSON
	// line on stdout).
	announce(stdout, jsonOut, "mcpgw: listening on "+base, "listen", base)
	if o.demo {
		announceDemo(stdout, jsonOut, base)
	} else {
		wg.Go(func() { watchConfig(runCtx, o.config, cfg, o.reloadEvery, a, log) })
	}
	if a.Audit != nil {
		wg.Go(func() { reopenAuditOnHUP(runCtx, a, log) })
	}

	return serveUntilDone(ctx, srv, errc, log)
}

// command runs what ends without serving (the check and token
// subcommands, --help, --version) and reports done; otherwise it returns
// the serving flags.
func command(args []string, stdout io.Writer, bi buildinfo.Info) (o *options, done bool, err error) {
	if len(args) > 0 && args[0] == "check" {
		return nil, true, runCheck(args[1:], stdout)
	}
	if len(args) > 0 && args[0] == "token" {
		return nil, true, runToken(args[1:], stdout) // reads no config and no environment
	}
	o, err = parseFlags(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage(stdout)
		return nil, true, nil
	case err != nil:
		return nil, true, err
	case o.version:
		fmt.Fprintln(stdout, "gateway", bi)
		return nil, true, nil
	}
	return o, false, nil
}

// setUpLogging makes the gateway's logger from the flags. The standard
// library's log package (net/http's own messages among them) and any
// library logging through slog's default go through the same handler: in
// JSON mode every line is JSON.
func setUpLogging(stderr io.Writer, o *options) (log *slog.Logger, jsonOut bool, err error) {
	log, err = newLogger(stderr, o.logLevel, o.logFormat)
	if err != nil {
		return nil, false, err
	}
	jsonOut = isJSON(o.logFormat)
	fatalJSON.Store(jsonOut)
	slog.SetDefault(log)
	routeRedisLogs(log, o.redisURL)
	return log, jsonOut, nil
}

// loadConfig is the demo's config (stop ends its backends) or the
// validated config file's (stop does nothing).
func loadConfig(ctx context.Context, o *options) (cfg *config.Config, stop func(), err error) {
	if o.demo {
		return demoConfig(ctx)
	}
	if cfg, err = validate(o.config, o.redisURL); err != nil {
		return nil, nil, err
	}
	return cfg, func() {}, nil
}

// serveUntilDone waits for the server to fail or for a signal, then
// shuts the server down, draining requests for at most 15 seconds.
func serveUntilDone(ctx context.Context, srv *http.Server, errc <-chan error, log *slog.Logger) error {
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// appOptions are what the flags ask of the assembled gateway.
func appOptions(o *options, bi buildinfo.Info) []app.Option {
	opts := []app.Option{app.WithBuildInfo(bi)}
	if o.adminListen != "" {
		opts = append(opts, app.WithAdminListener())
	}
	return opts
}

// startStore checks the store before the gateway serves. A store that
// can never work (refused credentials, a database index it does not have,
// a host name that does not resolve) stops start-up: waiting would not fix
// it. One that does not answer yet may be starting: the gateway starts,
// and /readyz answers 503 until then.
func startStore(ctx context.Context, a *app.App, log *slog.Logger) error {
	startCtx, cancelStart := context.WithTimeout(ctx, 3*time.Second)
	defer cancelStart()
	if err := a.Store.Ping(startCtx); err != nil {
		if redisconn.Unusable(err) {
			return fmt.Errorf("the session store cannot work with this URL (fix --redis-url or MCPGW_REDIS_URL): %w", err)
		}
		log.Warn("session store not reachable yet; /readyz answers 503 until it is", "error", err)
	} else if err := a.Start(startCtx); err != nil {
		log.Warn("the store's bus did not confirm the subscription yet; it keeps trying", "error", err)
	}
	return nil
}

// announceDemo prints the demo's help (in JSON mode as one JSON line).
func announceDemo(stdout io.Writer, jsonOut bool, base string) {
	if jsonOut {
		var help strings.Builder
		printDemoHelp(&help, base)
		announce(stdout, true, "demo gateway", "help", help.String())
	} else {
		printDemoHelp(stdout, base)
	}
}

// displayAddr turns ":8080" / "[::]:8080" into a URL host a user can paste.
func displayAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// startAsideListeners starts the listeners beside the MCP port that the
// flags ask for: the debug listener (--debug-listen) and the admin
// listener (--admin-listen, serving admin). stop ends them; on an error
// none is left running.
func startAsideListeners(ctx context.Context, o *options, admin http.Handler, log *slog.Logger) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	if o.debugListen != "" {
		addr, s, err := startDebugListener(ctx, o.debugListen)
		if err != nil {
			return nil, fmt.Errorf("--debug-listen: %w", err)
		}
		stops = append(stops, s)
		log.Info("debug listener started: Go runtime profiles at /debug/pprof/", "listen", "http://"+displayAddr(addr))
	}
	if o.adminListen != "" {
		addr, s, err := startAdminListener(ctx, o.adminListen, admin, o.adminProfiles)
		if err != nil {
			stop()
			return nil, fmt.Errorf("--admin-listen: %w", err)
		}
		stops = append(stops, s)
		log.Info("admin listener started: /healthz, /readyz, /metrics, /status; the MCP port serves none of them",
			"listen", "http://"+displayAddr(addr), "profiles", o.adminProfiles)
	}
	return stop, nil
}

// envBool is a boolean environment variable: false when unset; a value
// strconv.ParseBool does not take is refused by parseFlags.
func envBool(name string) bool {
	v, _ := strconv.ParseBool(os.Getenv(name))
	return v
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
