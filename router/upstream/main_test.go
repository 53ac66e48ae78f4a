package upstream

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport/stdioserver"
)

// stdioServerEnv makes the test binary, run as a stdio backend by the
// stdio tests, serve MCP on stdin and stdout instead of running tests.
const stdioServerEnv = "MCPGW_TEST_STDIO_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "1" {
		if err := stdioserver.Run(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "stdio server:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
