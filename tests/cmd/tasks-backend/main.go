// Command tasks-backend serves the SEP-2663 tasks fixture
// (internal/testsupport/tasksbackend): an MCP 2026-07-28 server that
// implements the Tasks extension, with every tool the conformance suite's
// tasks-* scenarios name. scripts/conformance-tasks.sh runs those
// scenarios against it.
//
//	tasks-backend -http 127.0.0.1:9100 [-ttl 5m] [-v]
//
// It prints "tasks-backend: listening on http://ADDR/mcp" when it is ready
// (it serves every path) and stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpgw/gateway/internal/testsupport/tasksbackend"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "tasks-backend:", err)
		os.Exit(2)
	}
}

// run serves until ctx is done; it reports on out.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("tasks-backend", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("http", "127.0.0.1:0", "address to listen on (port 0: a free one)")
	ttl := fs.Duration("ttl", tasksbackend.DefaultTTL, "each task's ttlMs, from its creation")
	verbose := fs.Bool("v", false, "log every task transition")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *ttl <= 0 {
		return fmt.Errorf("-ttl must be positive, got %s", *ttl)
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level}))
	url, _, stop, err := tasksbackend.Start(ctx, *addr, tasksbackend.Options{TTL: *ttl, Logger: logger})
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(out, "tasks-backend: listening on %s (MCP %s, extension %s)\n", url, tasksbackend.ProtocolVersion, tasksbackend.ExtensionID)
	<-ctx.Done()
	fmt.Fprintln(out, "tasks-backend: shutting down")
	return nil
}
