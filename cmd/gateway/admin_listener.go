package main

import (
	"context"
	"net"
	"net/http"
)

// The admin listener (--admin-listen) serves the operator endpoints on an
// address of their own: /healthz and /readyz for probes, /metrics for
// scrapers, /status for people, and with --admin-profiles Go's runtime
// profiles. None of them asks for a token or an allowed Host, so on a
// shared port they are as public as the MCP endpoint; on their own port a
// NetworkPolicy or a firewall can keep them private, and the MCP port
// serves none of them (app.WithAdminListener).

// startAdminListener serves ops (and the profiles when asked) on addr
// until ctx ends or stop is called; it returns the address it listens on.
func startAdminListener(ctx context.Context, addr string, ops http.Handler, profiles bool) (net.Addr, func(), error) {
	mux := http.NewServeMux()
	mux.Handle("/", ops)
	if profiles {
		routeProfiles(mux)
	}
	return serveAside(ctx, addr, mux)
}
