package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/mcpgw/gateway/store/redisconn"
	"github.com/redis/go-redis/v9"
)

// The valid values of --log-level and --log-format, as messages name them.
const (
	logLevels  = "debug, info, warn, error"
	logFormats = "text, json"
)

// newLogger is the process's one logger: slog, text or JSON lines on w.
// An unknown level or format is an error naming the valid values.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: unknown level %q (valid: %s)", level, logLevels)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: unknown format %q (valid: %s)", format, logFormats)
}

// routeRedisLogs sends go-redis's own log lines (dial failures, topology
// changes) through log, rate-limited and without the URL's password. The
// go-redis logger is a process-wide setting of that library, so this runs
// once, at start-up, before any Redis client exists; redis.SetLogger swaps
// it atomically, which keeps it safe even if a client already logged.
func routeRedisLogs(log *slog.Logger, redisURL string) {
	redis.SetLogger(redisconn.NewLogger(log, redisURL, redisconn.DefaultLogEvery))
}

// isJSON reports whether --log-format asks for JSON lines.
func isJSON(format string) bool { return strings.EqualFold(format, "json") }

// fatalJSON: the error that ends the process is written as a JSON line
// (--log-format json was given).
var fatalJSON atomic.Bool

// printFatal writes the error that ends the process: "gateway: ERR", or in
// JSON mode one JSON line, so a log collector reading stderr sees JSON
// only.
func printFatal(w io.Writer, err error) {
	if fatalJSON.Load() {
		slog.New(slog.NewJSONHandler(w, nil)).Error("gateway: " + err.Error())
		return
	}
	fmt.Fprintln(w, "gateway:", err)
}

// announce writes a line a person or a script reads on stdout (the
// listening address, the demo's help): as is, or in JSON mode as the
// message of one JSON line with attrs.
func announce(w io.Writer, json bool, msg string, attrs ...any) {
	if json {
		slog.New(slog.NewJSONHandler(w, nil)).Info(msg, attrs...)
		return
	}
	fmt.Fprintln(w, msg)
}
