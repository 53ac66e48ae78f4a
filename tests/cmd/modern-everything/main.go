// Command modern-everything serves the MCP conformance fixture over revision
// 2026-07-28 only, refusing the session protocol (package
// internal/testsupport/modernonly): the backend of the conformance runs in which the
// gateway translates between a 2025-11-25 client and a modern-only server
// (scripts/conformance.sh, BACKEND_MODE=modern-only).
//
//	modern-everything -http 127.0.0.1:9100 [-watch-interval 3s]
//
// It prints "modern-everything: listening on http://ADDR/mcp" when it is
// ready (it serves every path) and stops on SIGINT or SIGTERM.
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
	"time"

	"github.com/mcpgw/gateway/internal/testsupport/modernonly"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "modern-everything:", err)
		os.Exit(2)
	}
}

// run serves until ctx is done; it reports on out.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("modern-everything", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("http", "127.0.0.1:0", "address to listen on (port 0: a free one)")
	watch := fs.Duration("watch-interval", modernonly.DefaultWatchInterval, "how often "+modernonly.WatchedURI+" changes (0: never)")
	verbose := fs.Bool("v", false, "log go-sdk's server activity")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *watch < 0 {
		return fmt.Errorf("-watch-interval must not be negative, got %s", *watch)
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level}))

	url, stop, err := modernonly.Start(ctx, *addr, *watch, modernonly.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(out, "modern-everything: listening on %s (MCP %s only; %s %s)\n",
		url, modernonly.ProtocolVersion, modernonly.WatchedURI, describe(*watch))
	<-ctx.Done()
	fmt.Fprintln(out, "modern-everything: shutting down")
	return nil
}

func describe(d time.Duration) string {
	if d == 0 {
		return "never changes"
	}
	return "changes every " + d.String()
}
