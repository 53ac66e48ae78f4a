package config

import (
	"net/url"
	"strings"
)

// Tracing is the tracing section: where spans go and how many are kept.
// Both fields may be left to the standard OpenTelemetry variables
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_TRACES_SAMPLER), which win over the file like every environment
// setting of the gateway (internal/tracing decides).
type Tracing struct {
	// OTLPEndpoint (tracing.otlp_endpoint) is the base URL of an OTLP/HTTP
	// collector, e.g. http://collector:4318; spans are POSTed to
	// <endpoint>/v1/traces, as with OTEL_EXPORTER_OTLP_ENDPOINT. Empty:
	// tracing is off unless the environment names an endpoint.
	OTLPEndpoint string
	// SampleRatio (tracing.sample_ratio) is the share of new traces kept,
	// 0 to 1; a request that arrives with a trace context follows the
	// caller's sampling decision. nil: 1 (every trace), unless
	// OTEL_TRACES_SAMPLER says otherwise.
	SampleRatio *float64
}

type rawTracing struct {
	// Base URL of an OTLP/HTTP collector (e.g. http://collector:4318);
	// spans are POSTed to {otlp_endpoint}/v1/traces.
	// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT wins over it.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// The share of new traces kept, 0 to 1; a request arriving with a
	// trace context follows the caller's decision. OTEL_TRACES_SAMPLER
	// wins over it.
	SampleRatio *float64 `yaml:"sample_ratio" jsonschema:"default=1,minimum=0,maximum=1"`
}

// tracing validates the tracing section; absent, tracing is left to the
// environment.
func (v *validator) tracing(raw *rawTracing) Tracing {
	if raw == nil {
		return Tracing{}
	}
	t := Tracing{OTLPEndpoint: strings.TrimSpace(raw.OTLPEndpoint), SampleRatio: raw.SampleRatio}
	if t.OTLPEndpoint != "" {
		u, err := url.Parse(t.OTLPEndpoint)
		switch {
		case err != nil:
			v.errf("tracing.otlp_endpoint", "is not a valid URL")
		case u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "":
			hint := ""
			if u.Scheme == "" || u.Host == "" {
				hint = " (missing scheme? write e.g. http://collector:4318)"
			}
			v.errf("tracing.otlp_endpoint", "%q is not an http(s) URL%s", u.Redacted(), hint)
		case u.RawQuery != "" || u.Fragment != "":
			// A query may hold a token: not quoted.
			v.errf("tracing.otlp_endpoint", "must not have a query or fragment")
		}
	}
	if r := raw.SampleRatio; r != nil && (*r < 0 || *r > 1 || *r != *r) {
		v.errf("tracing.sample_ratio", "must be between 0 and 1, not %v", *r)
	}
	return t
}
