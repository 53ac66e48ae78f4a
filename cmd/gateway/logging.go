package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/mcpgw/gateway/store"
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
	redis.SetLogger(store.NewRedisLogger(log, redisURL, store.DefaultRedisLogEvery))
}
