// Command gateway serves the MCP gateway over plain HTTP.
//
//	gateway --config gateway.yaml [--listen :8080] [--redis-url redis://host:6379]
//	gateway --demo
//
// Flags override environment variables (MCPGW_CONFIG, MCPGW_LISTEN,
// MCPGW_REDIS_URL, MCPGW_LOG_LEVEL). The config's virtual_hosts reload on
// SIGHUP and when the file changes. Without a Redis URL the gateway keeps
// sessions in memory and must run as a single instance.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpgw/gateway/cmd/internal/app"
	"github.com/mcpgw/gateway/internal/config"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

type options struct {
	config, listen, redisURL, logLevel string
	demo                               bool
	reloadEvery                        time.Duration
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.config, "config", os.Getenv("MCPGW_CONFIG"), "config file `path` (env MCPGW_CONFIG); required unless --demo")
	fs.StringVar(&o.listen, "listen", envOr("MCPGW_LISTEN", ":8080"), "listen `address` (env MCPGW_LISTEN)")
	fs.StringVar(&o.redisURL, "redis-url", os.Getenv("MCPGW_REDIS_URL"), "Redis `URL`: redis://, rediss://, redis+cluster://, redis+sentinel:// (env MCPGW_REDIS_URL); empty = in-memory store, single instance")
	fs.StringVar(&o.logLevel, "log-level", envOr("MCPGW_LOG_LEVEL", "info"), "log `level`: debug, info, warn, error (env MCPGW_LOG_LEVEL)")
	fs.DurationVar(&o.reloadEvery, "reload-interval", 5*time.Second, "how often to check the config file for changes (0: only on SIGHUP)")
	fs.BoolVar(&o.demo, "demo", false, "run two in-process demo backends behind a \"demo\" vhost with no auth")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if o.demo && o.config != "" {
		return nil, errors.New("--demo and --config cannot be combined")
	}
	if !o.demo && o.config == "" {
		return nil, errors.New("--config (or MCPGW_CONFIG) is required; try --demo for a self-contained demo")
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var cfg *config.Config
	var stopDemo func()
	if o.demo {
		cfg, stopDemo, err = demoConfig(ctx)
		if err != nil {
			return err
		}
		defer stopDemo()
	} else if cfg, err = config.Load(o.config); err != nil {
		return err
	}

	a, err := app.Build(cfg, o.redisURL, log)
	if err != nil {
		return err
	}
	defer a.Close()
	// Say at once when the store is not reachable: the gateway still
	// starts (Redis may come up later), but /readyz answers 503 until then.
	startCtx, cancelStart := context.WithTimeout(ctx, 3*time.Second)
	if err := a.Store.Ping(startCtx); err != nil {
		log.Warn("session store not reachable yet; /readyz answers 503 until it is", "error", err)
	} else if err := a.Start(startCtx); err != nil {
		log.Warn("the store's bus did not confirm the subscription yet; it keeps trying", "error", err)
	}
	cancelStart()
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
	srv := newHTTPServer(a.Handler, cfg.Server)
	// GET streams never end on their own: end them first so Shutdown can
	// drain; their clients resume on another instance.
	srv.RegisterOnShutdown(a.Sessions.EndStreams)
	srv.RegisterOnShutdown(a.Router.EndListens) // 2026-07-28 listens end with their result
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	base := "http://" + displayAddr(ln.Addr())
	// Tests and scripts wait for this exact line: it is printed once the
	// listener accepts connections.
	fmt.Fprintf(stdout, "mcpgw: listening on %s\n", base)
	if o.demo {
		printDemoHelp(stdout, base)
	} else {
		wg.Go(func() { watchConfig(runCtx, o.config, o.reloadEvery, a, log) })
	}

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

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
