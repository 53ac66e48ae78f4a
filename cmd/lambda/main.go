// Command lambda serves the MCP gateway on AWS Lambda: the same
// http.Handler as cmd/gateway (built by cmd/internal/app), behind a Lambda
// Function URL with response streaming, or behind API Gateway or an
// Application Load Balancer through buffering adapters.
//
// Build it as the "bootstrap" of a provided.al2023 function:
//
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -o bootstrap ./cmd/lambda
//
// Environment (docs/guide/lambda.md has the whole story):
//
//	MCPGW_LAMBDA_MODE   url (default): Function URL, InvokeMode RESPONSE_STREAM
//	                    apigw-v2: API Gateway HTTP API (payload format 2.0)
//	                    apigw-v1: API Gateway REST API (proxy integration)
//	                    alb:      Application Load Balancer target group
//	MCPGW_CONFIG        config file path; relative paths are relative to the
//	                    working directory, which on Lambda is the bundle root
//	MCPGW_CONFIG_YAML   the config itself, inline (instead of MCPGW_CONFIG)
//	MCPGW_REDIS_URL     the shared store; without it sessions live in one
//	                    execution environment only, which breaks as soon as
//	                    Lambda runs two
//	MCPGW_LOG_LEVEL     debug, info, warn, error (default: Lambda's
//	                    AWS_LAMBDA_LOG_LEVEL when set, else info)
//	MCPGW_LAMBDA_STRIP_BASE_PATH  buffered modes: a path prefix to remove
//	                    first (a named API stage, a base path mapping)
//	MCPGW_LAMBDA_STREAM_MAX  url mode: the longest a GET stream or a
//	                    subscriptions/listen stays open in one invocation
//	                    (Go duration; default: until shortly before the
//	                    function's time limit)
//	MCPGW_LAMBDA_TASK_FUNCTION  the function (name or ARN) whose
//	                    asynchronous invocations run the tasks the gateway
//	                    runs for backends (default: this function,
//	                    AWS_LAMBDA_FUNCTION_NAME); it needs
//	                    lambda:InvokeFunction on it
//	OTEL_EXPORTER_OTLP_ENDPOINT and the other OTEL_* variables, or the
//	                    config's tracing section: OpenTelemetry tracing,
//	                    its spans flushed before each invocation ends
//
// Secrets referenced by the config (auth.jwt.hs_secret_env, ${ENV} in
// add_headers) are read from the environment like everywhere else.
//
// Everything that can be done once is done at init: the config is parsed
// and validated there, and a bad one stops the init with one log line and
// exit status 1, so Lambda reports an init error. The store is not touched
// at init; the gateway is assembled on the first request (see lazyApp).
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mcpgw/gateway/cmd/internal/app"
	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/internal/buildinfo"
	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/store/redisconn"
	"github.com/redis/go-redis/v9"
)

// version and commit are stamped at link time (the Makefile's
// build-GatewayFunction passes -ldflags "-X main.version=… -X
// main.commit=…") and never written after; main reads them once.
var version, commit string

func main() {
	start := time.Now()
	log := newLogger(os.Stderr, os.Getenv)
	// Secrets referenced as aws-secretsmanager:… or aws-ssm:… (see
	// secret_refs.go) become plain values before anything reads them.
	if err := resolveSecretEnv(); err != nil {
		log.Error("mcpgw lambda: init failed: " + strings.ReplaceAll(err.Error(), "\n", "; "))
		os.Exit(1)
	}
	// go-redis's own lines go through the same JSON logger. Its logger is
	// process-wide, so it is set once, here, before any client exists.
	redis.SetLogger(redisconn.NewLogger(log, os.Getenv(envRedisURL), redisconn.DefaultLogEvery))
	bi := buildinfo.Read(version, commit)
	fn, err := setup(os.Getenv, log, app.WithBuildInfo(bi))
	if err != nil {
		// One line that says what is wrong; Lambda reports the init error.
		log.Error("mcpgw lambda: init failed: " + strings.ReplaceAll(err.Error(), "\n", "; "))
		os.Exit(1)
	}
	log.Info("mcpgw lambda: initialized",
		"mode", string(fn.mode),
		"version", bi.Version,
		"commit", bi.Commit,
		"init_duration_ms", float64(time.Since(start).Microseconds())/1000,
		"config", fn.cfg.Source,
		"store", fn.storeKind)
	fn.mode.start(fn.handler, fn.basePath, fn.lazy)
}

// function is the gateway as one Lambda function serves it.
type function struct {
	mode      mode
	cfg       *config.Config
	storeKind string // "redis" or "memory", for the init log line
	basePath  string // buffered modes: prefix removed from every path
	// handler is the gateway's handler wrapped for the mode.
	handler http.Handler
	lazy    *lazyApp
}

// setup reads the environment, parses and validates the config and wraps
// the (lazily built) gateway for the mode. It does no network I/O.
func setup(getenv func(string) string, log *slog.Logger, options ...app.Option) (*function, error) {
	m, err := parseMode(getenv(envMode))
	if err != nil {
		return nil, err
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckLambda(); err != nil {
		return nil, err // stdio backends: a function keeps no processes
	}
	// app.Build validates these too, but only on the first request: check
	// them now so that a mistake is an init error, not a failing request.
	if err := auth.Check(cfg.Auth); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Source, err)
	}
	redisURL := strings.TrimSpace(getenv(envRedisURL))
	storeKind := "memory"
	if redisURL != "" {
		if _, err := redisconn.ParseURL(redisURL); err != nil {
			return nil, fmt.Errorf("%s: %w", envRedisURL, err)
		}
		storeKind = "redis"
	} else {
		log.Warn("mcpgw lambda: " + envRedisURL + " is not set: sessions live in one execution environment only and are lost when Lambda starts another; set it for anything but a single-environment trial")
	}
	streamMax, err := parseDurationEnv(getenv, envStreamMax)
	if err != nil {
		return nil, err
	}

	basePath := strings.TrimSpace(getenv(envStripBasePath))
	if basePath != "" && !m.buffered() {
		log.Warn("mcpgw lambda: " + envStripBasePath + " applies to the buffered modes only; ignored in mode url")
	}

	builtin := []app.Option{app.WithoutMetrics(), app.WithoutParking()}
	// Tasks run in asynchronous invocations of this function (tasks.go),
	// which find them in the shared store: without one, another execution
	// environment would not, and tasks: blocks stay plain calls.
	if name := cmp.Or(strings.TrimSpace(getenv(envTaskFunction)), strings.TrimSpace(getenv(envFunctionName))); name != "" && redisURL != "" {
		builtin = append(builtin, app.WithTaskLauncher(&asyncLauncher{function: name, log: log}))
	}
	lazy := &lazyApp{log: log, build: func() (*app.App, error) {
		a, err := app.Build(cfg, redisURL, log, append(builtin, options...)...)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), busStartTimeout)
		defer cancel()
		// A store that can never work (refused credentials, a database
		// index it lacks, a host name that does not resolve) is said as
		// such, as the server's start-up does: every request gets 503
		// naming it until the store or its secret is fixed. One that does
		// not answer yet may be starting: the request goes on.
		if err := a.Store.Ping(ctx); redisconn.Unusable(err) {
			_ = a.Close()
			return nil, fmt.Errorf("the session store cannot work with this URL (fix %s or the secret it names): %w", envRedisURL, err)
		}
		if err := a.Start(ctx); err != nil {
			log.Warn("mcpgw lambda: the store's bus did not confirm the subscription yet; it keeps trying", "error", err)
		}
		return a, nil
	}}
	h := m.wrap(lazy, streamMax, log)
	return &function{
		mode:      m,
		cfg:       cfg,
		storeKind: storeKind,
		basePath:  basePath,
		handler:   h,
		lazy:      lazy,
	}, nil
}

// busStartTimeout bounds how long the first request waits for the store's
// bus subscription: past it the request is served, and the subscription
// keeps trying in the background.
const busStartTimeout = 3 * time.Second

// Environment variables read by the function.
const (
	envMode          = "MCPGW_LAMBDA_MODE"
	envConfig        = "MCPGW_CONFIG"
	envConfigYAML    = "MCPGW_CONFIG_YAML"
	envRedisURL      = "MCPGW_REDIS_URL"
	envLogLevel      = "MCPGW_LOG_LEVEL"
	envLambdaLevel   = "AWS_LAMBDA_LOG_LEVEL" // set by Lambda's advanced logging controls
	envStripBasePath = "MCPGW_LAMBDA_STRIP_BASE_PATH"
	envStreamMax     = "MCPGW_LAMBDA_STREAM_MAX"
	envFunctionName  = "AWS_LAMBDA_FUNCTION_NAME" // set by Lambda: the function invokes itself to run tasks
	envTaskFunction  = "MCPGW_LAMBDA_TASK_FUNCTION"
)

// newLogger logs JSON lines to w (stderr: CloudWatch Logs), at the level
// of MCPGW_LOG_LEVEL, else of Lambda's AWS_LAMBDA_LOG_LEVEL, else info.
// An unknown level falls back to info with a warning rather than failing
// the init over a log setting.
func newLogger(w io.Writer, getenv func(string) string) *slog.Logger {
	lv := new(slog.LevelVar)
	log := slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv}))
	name, raw := envLogLevel, getenv(envLogLevel)
	if raw == "" {
		name, raw = envLambdaLevel, getenv(envLambdaLevel)
	}
	if raw == "" {
		return log
	}
	// Lambda's levels include TRACE and FATAL, which slog does not have.
	switch strings.ToUpper(strings.TrimSpace(raw)) {
	case "TRACE":
		lv.Set(slog.LevelDebug)
		return log
	case "FATAL":
		lv.Set(slog.LevelError)
		return log
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.TrimSpace(raw))); err != nil {
		log.Warn("mcpgw lambda: ignoring unknown log level", "variable", name, "value", raw)
		return log
	}
	lv.Set(level)
	return log
}

// parseDurationEnv reads an optional non-negative Go duration.
func parseDurationEnv(getenv func(string) string, name string) (time.Duration, error) {
	raw := strings.TrimSpace(getenv(name))
	if raw == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s: %q is not a duration such as 5m or 90s", name, raw)
	}
	return d, nil
}
