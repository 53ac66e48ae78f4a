// The operator endpoints: probes, metrics and the status view. They sit
// outside the MCP chain (no Host allow-list, no token: a kubelet or a
// scraper sends neither), so they belong where only operators reach. By
// default they share the MCP port; with an admin listener
// (Options.AdminElsewhere, gateway --admin-listen) they move to a port of
// their own, which a NetworkPolicy can keep private, and the MCP port
// serves none of them.
package handler

import (
	"log/slog"
	"net/http"
)

// Admin returns the operator endpoints of opts alone, for an admin
// listener: GET /healthz, /readyz, and /metrics and /status when opts
// serve them. Pair it with New(opts) where opts.AdminElsewhere is set.
func Admin(opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &server{opts: opts, log: opts.Logger}
	mux := http.NewServeMux()
	s.routeOperator(mux)
	return mux
}

// routeOperator registers the operator endpoints on mux, each on its
// exact path, so no vhost path reaches them.
func (s *server) routeOperator(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	if s.opts.Metrics != nil {
		// A scraper sends no allowed Host, Origin or token; keep the
		// port it is served on off the public network (see docs).
		mux.Handle("GET /metrics", s.opts.Metrics.Handler())
	}
	if s.opts.Status {
		s.statusPage = newStatusPage()
		mux.HandleFunc("GET /status", s.serveStatus)
	}
}
