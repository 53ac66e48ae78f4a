// Command stdio-everything is an MCP server on stdin and stdout (package
// internal/testsupport/stdioserver): the stdio backend the gateway's
// end-to-end tests configure with `transport: stdio`.
//
//	stdio-everything
//
// It serves until its stdin is closed, as the MCP stdio transport asks,
// and writes "stdio-everything: started" to stderr first.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mcpgw/gateway/internal/testsupport/stdioserver"
)

func main() {
	fmt.Fprintln(os.Stderr, "stdio-everything: started")
	if err := stdioserver.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "stdio-everything:", err)
		os.Exit(2)
	}
}
