package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

type options struct {
	config, listen, redisURL, logLevel, logFormat string
	debugListen, adminListen                      string
	demo, version, adminProfiles                  bool
	reloadEvery                                   time.Duration
}

// newFlagSet declares the serve flags on a silent FlagSet: parse errors
// are reported by the caller, as one line that lists the valid flags.
func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.config, "config", os.Getenv("MCPGW_CONFIG"), "config file `path` (env MCPGW_CONFIG); required unless --demo")
	fs.StringVar(&o.listen, "listen", envOr("MCPGW_LISTEN", ":8080"), "listen `address` (env MCPGW_LISTEN)")
	fs.StringVar(&o.redisURL, "redis-url", os.Getenv("MCPGW_REDIS_URL"), "Redis `URL`: redis://, rediss://, redis+cluster://, redis+sentinel:// (env MCPGW_REDIS_URL); empty = in-memory store, single instance")
	fs.StringVar(&o.logLevel, "log-level", envOr("MCPGW_LOG_LEVEL", "info"), "log `level`: "+logLevels+" (env MCPGW_LOG_LEVEL); debug logs one line per request")
	fs.StringVar(&o.logFormat, "log-format", envOr("MCPGW_LOG_FORMAT", "text"), "log `format`: "+logFormats+" (env MCPGW_LOG_FORMAT)")
	fs.StringVar(&o.debugListen, "debug-listen", os.Getenv("MCPGW_DEBUG_LISTEN"), "serve Go's runtime profiles (/debug/pprof/) on this `address` (env MCPGW_DEBUG_LISTEN); off when empty; keep it on localhost")
	fs.StringVar(&o.adminListen, "admin-listen", os.Getenv("MCPGW_ADMIN_LISTEN"), "serve /healthz, /readyz, /metrics and /status on this `address` instead of the MCP port, which then serves none of them (env MCPGW_ADMIN_LISTEN); keep it private")
	fs.BoolVar(&o.adminProfiles, "admin-profiles", envBool("MCPGW_ADMIN_PROFILES"), "also serve Go's runtime profiles (/debug/pprof/) on the admin listener (env MCPGW_ADMIN_PROFILES=true); needs --admin-listen")
	fs.DurationVar(&o.reloadEvery, "reload-interval", 5*time.Second, "how often to check the config file for changes (0: only on SIGHUP)")
	fs.BoolVar(&o.demo, "demo", false, "run two in-process demo backends behind a \"demo\" vhost with no auth")
	fs.BoolVar(&o.version, "version", false, "print version, commit and Go version, and exit")
	return fs
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := newFlagSet(o)
	if err := fs.Parse(args); err != nil {
		return nil, flagError(fs, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (commands: check, token; flags: %s)", fs.Arg(0), flagNames(fs))
	}
	if o.version {
		return o, nil
	}
	if o.demo && o.config != "" {
		return nil, errors.New("--demo and --config cannot be combined")
	}
	if v := os.Getenv("MCPGW_ADMIN_PROFILES"); v != "" {
		if _, err := strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("MCPGW_ADMIN_PROFILES=%q: want true or false", v)
		}
	}
	if o.adminProfiles && o.adminListen == "" {
		return nil, errors.New("--admin-profiles needs --admin-listen (or MCPGW_ADMIN_LISTEN): profiles are never served on the MCP port")
	}
	if !o.demo && o.config == "" {
		return nil, errors.New("--config (or MCPGW_CONFIG) is required; try --demo for a self-contained demo, or --help")
	}
	return o, nil
}

// flagError is a parse error with the valid flags named; flag.ErrHelp
// (-h, --help) passes through: it asks for the usage text on stdout.
func flagError(fs *flag.FlagSet, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return fmt.Errorf("%v (valid flags: %s; see --help)", err, flagNames(fs))
}

func flagNames(fs *flag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	return strings.Join(names, ", ")
}

// printUsage is `gateway --help`: what the command is, how to call it,
// examples, then every flag.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `gateway: one MCP endpoint per virtual host (/servers/{vhost}/mcp) in front of many MCP servers; stateless, sessions in Redis.

Usage:
  gateway --config FILE [flags]     serve the virtual hosts of FILE
  gateway --demo [flags]            serve two built-in demo backends (no config, no auth)
  gateway check --config FILE       validate FILE as start-up would, then exit: 0 valid, 1 not
  gateway check --probe --config FILE   also connect: backends, issuers, sign-in providers, Redis, patterns
  gateway token keygen|mint|serve-jwks  test keys and tokens to try JWKS auth locally
  gateway --version                 print version, commit and Go version

Examples:
  gateway --demo
  gateway --config gateway.yaml --redis-url redis://localhost:6379/0
  gateway --config gateway.yaml --log-level debug --log-format json
  gateway check --config gateway.yaml
  gateway check --probe --config gateway.yaml --redis-url redis://localhost:6379/0
  gateway token keygen && gateway token serve-jwks     (then, elsewhere: gateway token mint)

Flags (each also set by the environment variable named):
`)
	fs := newFlagSet(&options{})
	fs.SetOutput(w)
	fs.PrintDefaults()
}
