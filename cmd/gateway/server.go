package main

import (
	"cmp"
	"log/slog"
	"net/http"

	"github.com/mcpgw/gateway/internal/config"
)

// newHTTPServer is the plain HTTP server around the gateway's handler,
// bounded by the config's server section so idle or slow clients cannot
// hold connections: ReadHeaderTimeout closes a connection whose request
// headers do not arrive in time (a connection opened and left silent too),
// IdleTimeout one that waits too long for its next request.
//
// read_timeout is not http.Server.ReadTimeout: the handler bounds each
// body read itself and lifts the deadline once the body is in, so no
// deadline is left on the connection for net/http's background read to
// hit and cancel a GET stream or a long call with
// (handler/read_deadline.go, set from app.Build).
func newHTTPServer(h http.Handler, sc config.Server, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn), // net/http's own messages, as log lines
		ReadHeaderTimeout: cmp.Or(sc.ReadHeaderTimeout, config.DefaultReadHeaderTimeout),
		IdleTimeout:       cmp.Or(sc.IdleTimeout, config.DefaultIdleTimeout),
	}
}
