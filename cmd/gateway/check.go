package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/store/redisconn"
)

// runCheck is `gateway check --config FILE [--redis-url URL] [--lambda]
// [--probe [--probe-timeout D]]`: the validation start-up does, with the
// same messages, and nothing else: no listener, no store connection.
// --probe then connects (probe.go). With --lambda it also refuses what the
// Lambda function's init refuses (stdio backends), so a config meant for
// `sam deploy` is checked before it is bundled. A valid config prints a
// summary to stdout; an invalid one returns the error (printed by main,
// exit status 1).
func runCheck(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gateway check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	path := fs.String("config", os.Getenv("MCPGW_CONFIG"), "config file `path` (env MCPGW_CONFIG)")
	redisURL := fs.String("redis-url", os.Getenv("MCPGW_REDIS_URL"), "Redis `URL` to check the form of; pinged only with --probe (env MCPGW_REDIS_URL)")
	lambda := fs.Bool("lambda", false, "also refuse what cannot work on AWS Lambda (stdio backends), as the function's init does")
	doProbe := fs.Bool("probe", false, "also connect: list every backend's tools, fetch every issuer's discovery and JWKS, check the sign-in providers (auth.login, user_oauth) and their clients and any introspection endpoint, ping the Redis URL, match every access and rate limit pattern")
	probeTimeout := fs.Duration("probe-timeout", 10*time.Second, "bound on each probe (with --probe)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, checkUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return fmt.Errorf("check: %v (valid flags: %s)", err, checkFlags)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("check: unexpected argument %q (valid flags: %s)", fs.Arg(0), checkFlags)
	}
	if *path == "" {
		return fmt.Errorf("check: --config (or MCPGW_CONFIG) is required")
	}
	cfg, err := validate(*path, *redisURL)
	if err != nil {
		return err
	}
	target := ""
	if *lambda {
		if err := cfg.CheckLambda(); err != nil {
			return err
		}
		target = ", fits AWS Lambda"
	}
	backends := 0
	for _, vh := range cfg.VirtualHosts {
		backends += len(vh.Backends)
	}
	fmt.Fprintf(stdout, "%s: ok: %d virtual host(s), %d backend(s), auth %s%s\n", cfg.Source, len(cfg.VirtualHosts), backends, cfg.Auth.Mode, target)
	if !*doProbe {
		return nil
	}
	if *probeTimeout <= 0 {
		return fmt.Errorf("check: --probe-timeout must be positive, not %v", *probeTimeout)
	}
	return probe(cfg, *redisURL, *probeTimeout, stdout)
}

const checkFlags = "--config, --redis-url, --lambda, --probe, --probe-timeout"

const checkUsage = `Usage: gateway check --config FILE [--redis-url URL] [--lambda] [--probe [--probe-timeout 10s]]

Validates FILE (and the Redis URL's form) as start-up does, then exits: 0 valid, 1 not.
No listener is opened and no store is contacted. --lambda checks FILE for the AWS Lambda
function (cmd/lambda) as its init does.

--probe also connects, printing one line per thing checked ("ok", "FAIL", or "skip" when a
FAIL above stopped it): each backend is reached and its lists walked (stdio backends are
started, then stopped), each issuer's discovery document and JWKS are fetched (the
document's issuer must equal the configured one byte for byte), the identity provider of
auth.login and each user_oauth backend's authorization server are discovered as sign-in
discovers them and their token endpoints asked to authenticate the configured client (with
a made-up code: nothing is issued), an introspection endpoint is sent a made-up token, the
Redis URL is pinged, and every access and rate limit pattern must match something the
backends publish. Exit status 1 on any FAIL.

`

// validate is every check start-up makes before it opens anything: the
// config file (policy included), the auth keys it names, and the form of
// the Redis URL. `gateway check` and start-up share it, so their messages
// are the same.
func validate(path, redisURL string) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	if err := auth.Check(cfg.Auth); err != nil {
		return nil, fmt.Errorf("%s: auth: %w", cfg.Source, err)
	}
	if u := strings.TrimSpace(redisURL); u != "" {
		if _, err := redisconn.ParseURL(u); err != nil {
			return nil, fmt.Errorf("--redis-url: %w", err)
		}
	}
	return cfg, nil
}
