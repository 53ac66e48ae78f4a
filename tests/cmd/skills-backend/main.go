// Command skills-backend serves one of the Skills extension fixtures
// (package internal/testsupport/skillserver: a go-sdk server of skill://
// resources, with skills/list, skills/get and resources/directory/read)
// over Streamable HTTP: the backend of the conformance suite's SEP-2640
// scenarios (scripts/conformance.sh, BACKEND_MODE=skills and skills-multi).
//
//	skills-backend -http 127.0.0.1:9100 [-fixture one|two] [-stateful]
//
// It prints "skills-backend: listening on http://ADDR/mcp" when it is
// ready and stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpgw/gateway/internal/testsupport/skillserver"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "skills-backend:", err)
		os.Exit(2)
	}
}

// run serves until ctx is done; it reports on out.
func run(ctx context.Context, args []string, out io.Writer) error {
	flags := flag.NewFlagSet("skills-backend", flag.ContinueOnError)
	flags.SetOutput(out)
	addr := flags.String("http", "127.0.0.1:0", "address to listen on (port 0: a free one)")
	fixture := flags.String("fixture", "two", "which skill tree: one or two")
	stateful := flags.Bool("stateful", false, "serve 2025-era sessions only (go-sdk's stateful handler)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	trees := map[string]fs.FS{"one": skillserver.FixtureOne, "two": skillserver.FixtureTwo}
	tree, ok := trees[*fixture]
	if !ok {
		return fmt.Errorf("-fixture must be one or two, not %q", *fixture)
	}
	cat, err := skillserver.Load(tree)
	if err != nil {
		return err
	}
	url, stop, err := skillserver.Serve(ctx, *addr, cat, skillserver.Options{Name: "skills-" + *fixture, Stateful: *stateful})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "skills-backend: listening on %s\n", url)
	<-ctx.Done()
	stop()
	return nil
}
