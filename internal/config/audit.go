package config

import (
	"net/netip"
	"path/filepath"
	"strings"
)

// The audit section turns on the audit trail: one JSON line per routed
// request and per refusal that names a caller or a target
// (handler/audit_trail.go, internal/audit).

// Audit configures the audit trail; Output "" leaves it off.
type Audit struct {
	// Output is "stdout", "stderr", or a file path (absolute; a relative
	// one is taken from the config file's directory), appended to,
	// created 0600, reopened on SIGHUP.
	Output string
	// Arguments says what a tools/call's arguments leave in a line:
	// AuditArgumentsHash (default: SHA-256 of their canonical JSON),
	// AuditArgumentsNone, or AuditArgumentsFull (the arguments themselves).
	Arguments string
	// Buffer bounds the lines waiting to be written (default 4096); past
	// it lines are dropped, counted and logged, never waited for.
	Buffer int
	// TrustedProxies are the addresses (CIDR prefixes) of the proxies in
	// front of the gateway: a request from one of them is audited with the
	// last address of X-Forwarded-For that is not one of them.
	TrustedProxies []netip.Prefix
}

// Values of audit.arguments.
const (
	AuditArgumentsHash = "hash"
	AuditArgumentsNone = "none"
	AuditArgumentsFull = "full"
)

// DefaultAuditBuffer is audit.buffer's default.
const DefaultAuditBuffer = 4096

type rawAudit struct {
	// Where the lines go: stdout, stderr, or a file path (relative to the
	// config file; created 0600, appended to, reopened on SIGHUP; not on
	// AWS Lambda). Required.
	Output string `yaml:"output" jsonschema:"required"`
	// What a tools/call's arguments leave in its line: hash (SHA-256 of
	// their canonical JSON), none, or full (the arguments themselves).
	Arguments string `yaml:"arguments" jsonschema:"enum=hash,enum=none,enum=full,default=hash"`
	// Lines waiting to be written; past it lines are dropped, counted and
	// logged, never waited for.
	Buffer *int64 `yaml:"buffer" jsonschema:"default=4096,minimum=1,maximum=1000000"`
	// CIDR prefixes (or addresses) of the proxies in front of the gateway:
	// a request from one is audited with the last X-Forwarded-For address
	// that is not one of them.
	TrustedProxies []string `yaml:"trusted_proxies"`
}

func (v *validator) audit(raw *rawAudit, cfg *Config) Audit {
	if raw == nil {
		return Audit{}
	}
	a := Audit{Output: strings.TrimSpace(raw.Output), Arguments: raw.Arguments,
		Buffer: v.countLimit("audit.buffer", raw.Buffer, DefaultAuditBuffer, 1_000_000)}
	switch a.Output {
	case "":
		v.errf("audit.output", "required: stdout, stderr or a file path")
	case "stdout", "stderr":
	default:
		if !filepath.IsAbs(a.Output) {
			a.Output = filepath.Join(v.baseDir, a.Output)
		}
		cfg.lambdaRefusals = append(cfg.lambdaRefusals, &Error{Source: v.source, Path: "audit.output", Line: v.line("audit.output"),
			Msg: "a file is not available on AWS Lambda: use stdout (CloudWatch Logs keeps it)"})
	}
	switch a.Arguments {
	case "":
		a.Arguments = AuditArgumentsHash
	case AuditArgumentsHash, AuditArgumentsNone, AuditArgumentsFull:
	default:
		v.errf("audit.arguments", "%q is not one of hash, none, full", a.Arguments)
	}
	for i, s := range raw.TrustedProxies {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			addr, aerr := netip.ParseAddr(s)
			if aerr != nil {
				v.errf(indexPath("audit.trusted_proxies", i), "%q is not an IP address or CIDR prefix", s)
				continue
			}
			p = netip.PrefixFrom(addr, addr.BitLen())
		}
		a.TrustedProxies = append(a.TrustedProxies, p.Masked())
	}
	return a
}
