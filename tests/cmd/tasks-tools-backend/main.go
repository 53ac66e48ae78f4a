// Command tasks-tools-backend serves the tasks-* scenarios' tools as plain
// go-sdk tools (internal/testsupport/taskstools), on a backend that knows
// nothing of tasks: the backend of the conformance runs in which the
// gateway runs the tasks itself (a backend `tasks:` block, printed by
// -print-config).
//
//	tasks-tools-backend -http 127.0.0.1:9100 [-stateless=false]
//
// It prints "tasks-tools-backend: listening on http://ADDR/mcp" when it
// is ready and stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpgw/gateway/internal/testsupport/taskstools"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "tasks-tools-backend:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stdout, out io.Writer) error {
	fs := flag.NewFlagSet("tasks-tools-backend", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("http", "127.0.0.1:0", "address to listen on (port 0: a free one)")
	stateless := fs.Bool("stateless", true, "serve both protocol generations statelessly (false: 2025 sessions, which can be sent elicitation requests)")
	printConfig := fs.Bool("print-config", false, "print the backend's `tasks:` block for the gateway and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *printConfig {
		_, err := fmt.Fprint(stdout, taskstools.GatewayTasksConfig)
		return err
	}
	url, _, stop, err := taskstools.Start(ctx, *addr, *stateless, taskstools.Options{})
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(out, "tasks-tools-backend: listening on %s (stateless %v)\n", url, *stateless)
	<-ctx.Done()
	fmt.Fprintln(out, "tasks-tools-backend: shutting down")
	return nil
}
