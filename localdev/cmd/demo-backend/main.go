// Command demo-backend runs one demo MCP backend (see package demobackend)
// as its own process, which is how docker-compose provides the gateway with
// upstreams that are separate hosts rather than in-process handlers.
package main

import (
	"context"
	"flag"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpgw/gateway/internal/demobackend"
)

func main() {
	listen := flag.String("listen", ":9001", "address to listen on")
	name := flag.String("name", "demo", "server name, shown in serverInfo and the instructions")
	stateless := flag.Bool("stateless", false, "serve Streamable HTTP without Mcp-Session-Id")
	pageSize := flag.Int("page-size", 0, "maximum items per list page (0: SDK default)")
	latency := flag.Duration("latency", 0, "hold every POST this long before serving it, as a backend far away would (make bench)")
	initDelay := flag.Duration("init-delay", 0, "hold every initialize this long before serving it, as FastMCP does (make bench)")
	extraTools := flag.Int("extra-tools", 0, "serve this many more tools of realistic size (names, descriptions, input schemas), for list benchmarks (make bench)")
	flag.Parse()
	log.SetPrefix("demo-backend: ")

	if *pageSize < 0 {
		log.Fatalf("--page-size must not be negative, got %d", *pageSize)
	}
	if *extraTools < 0 {
		log.Fatalf("--extra-tools must not be negative, got %d", *extraTools)
	}
	if *latency < 0 {
		log.Fatalf("--latency must not be negative, got %s", *latency)
	}
	if *initDelay < 0 {
		log.Fatalf("--init-delay must not be negative, got %s", *initDelay)
	}

	// SIGTERM is what docker sends on `compose down`; handling it lets
	// in-flight requests finish instead of being cut after the grace period.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	url, stop, err := demobackend.Start(ctx, *listen, *name, demobackend.Options{
		PageSize:   *pageSize,
		Stateless:  *stateless,
		Latency:    *latency,
		InitDelay:  *initDelay,
		ExtraTools: *extraTools,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		log.Fatalf("listen on %s: %v", *listen, err)
	}
	log.Printf("%s listening on %s (stateless=%t)", *name, url, *stateless)

	<-ctx.Done()
	log.Printf("%s shutting down", *name)
	stop()
}
