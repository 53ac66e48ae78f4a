package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/internal/demobackend"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/upstream"
)

// demoConfig starts two in-process demo backends and returns a config with
// one "demo" vhost in front of them, auth none, so a newcomer sees the
// gateway work with nothing else installed.
func demoConfig(ctx context.Context) (*config.Config, func(), error) {
	var stops []func()
	stopAll := func() {
		for _, s := range stops {
			s()
		}
	}
	backends := map[string]*router.Backend{}
	for _, name := range []string{"gateway-one", "gateway-two"} {
		url, stop, err := demobackend.Start(ctx, "127.0.0.1:0", name, demobackend.Options{})
		if err != nil {
			stopAll()
			return nil, nil, fmt.Errorf("demo backend %s: %w", name, err)
		}
		stops = append(stops, stop)
		backends[name] = &router.Backend{
			Config:  upstream.Config{Key: name, URL: url, Transport: upstream.TransportStreamableHTTP, Timeout: 30 * time.Second},
			Session: router.SessionPerRequest,
		}
	}
	backends["gateway-one"].ToolNameAliases = map[string]string{"Public.Tool": "get_stats"}
	cfg := &config.Config{
		Source:       "--demo",
		SessionTTL:   time.Hour,
		AllowedHosts: []string{"localhost", "127.0.0.1", "::1"},
		MaxBodyBytes: config.DefaultMaxBodyBytes,
		Auth:         config.Auth{Mode: config.ModeNone},
		VirtualHosts: map[string]*router.VirtualHost{
			"demo": {Name: "demo", Backends: backends},
		},
	}
	return cfg, stopAll, nil
}

// printDemoHelp tells a newcomer what to try. The commands are pasted
// into bash or zsh as they are (tests/cli_test.go runs them in both): no
// word splitting of variables (zsh does none), no history expansion (no
// "!"), no comments (an interactive zsh does not take them).
func printDemoHelp(w io.Writer, base string) {
	url := base + "/servers/demo/mcp"
	fmt.Fprintf(w, `
Demo gateway ready: two demo backends (gateway-one, gateway-two) behind the "demo" virtual host.
MCP endpoint: %s

With curl, paste into bash or zsh. A 2026-07-28 request needs no session:

  curl -s %s \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'; echo

A 2025-11-25 client opens a session first:

  URL=%s
  SID=$(curl -s -D - -o /dev/null "$URL" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' \
        | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
  curl -s "$URL" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H "Mcp-Session-Id: $SID" \
    -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'; echo

Or with the MCP Inspector CLI:

  npx -y @modelcontextprotocol/inspector --cli %s --transport http --method tools/list

`, url, url, url, url)
}
