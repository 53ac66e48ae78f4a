// Package tracing builds the gateway's OpenTelemetry tracer provider: an
// OTLP/HTTP exporter behind a batch span processor, configured by the
// config's tracing section or the standard OTEL_* variables, or nothing
// at all when neither names an endpoint. The provider is handed to the
// router (router.Options.TracerProvider); nothing is registered globally,
// so two gateways in one process (tests, an embedder) never share one.
package tracing

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/mcpgw/gateway/internal/config"
)

// The standard variables this package reads itself; the exporter reads
// the rest of OTEL_EXPORTER_OTLP_* (headers, timeout, TLS, compression)
// from the process environment.
const (
	envSDKDisabled    = "OTEL_SDK_DISABLED"
	envTracesExporter = "OTEL_TRACES_EXPORTER"
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envSampler        = "OTEL_TRACES_SAMPLER"
)

// tracesPath is what an OTLP/HTTP base endpoint gets for traces, as with
// OTEL_EXPORTER_OTLP_ENDPOINT.
const tracesPath = "/v1/traces"

// Provider is the gateway's tracer provider, or none.
type Provider struct {
	sdk *sdktrace.TracerProvider // nil: tracing is off
}

// Settings say how New decides.
type Settings struct {
	Config config.Tracing
	// Getenv reads the OTEL_* variables that turn tracing on or off and
	// choose the sampler (os.Getenv in the entry points).
	Getenv func(string) string
	// ServiceVersion is reported as service.version.
	ServiceVersion string
	// Logger receives export failures, at most one line every 30s.
	Logger *slog.Logger
}

// Enabled reports whether tracing is on for s: an endpoint in the config
// or the environment, and neither OTEL_SDK_DISABLED=true nor
// OTEL_TRACES_EXPORTER=none.
func (s Settings) Enabled() bool {
	env := s.getenv
	if b, _ := strconv.ParseBool(strings.TrimSpace(env(envSDKDisabled))); b {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(env(envTracesExporter)), "none") {
		return false
	}
	return s.Config.OTLPEndpoint != "" || env(envEndpoint) != "" || env(envTracesEndpoint) != ""
}

func (s Settings) getenv(k string) string {
	if s.Getenv == nil {
		return ""
	}
	return s.Getenv(k)
}

// New builds the provider s asks for. It does no network I/O: the
// exporter connects when it first sends. When tracing is off the
// Provider's TracerProvider is nil, and the router skips every span.
func New(ctx context.Context, s Settings) (*Provider, error) {
	if !s.Enabled() {
		return &Provider{}, nil
	}
	var opts []otlptracehttp.Option
	// The environment wins over the file, as for every gateway setting:
	// with an OTEL_ endpoint set the exporter takes it itself.
	if s.getenv(envEndpoint) == "" && s.getenv(envTracesEndpoint) == "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimRight(s.Config.OTLPEndpoint, "/")+tracesPath))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "mcpgw"), attribute.String("service.version", s.ServiceVersion)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, err
	}
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	tpOpts := []sdktrace.TracerProviderOption{
		sdktrace.WithBatcher(&loggedExporter{SpanExporter: exp, log: log, every: rate.Sometimes{Interval: 30 * time.Second}}),
		sdktrace.WithResource(res),
	}
	if s.getenv(envSampler) == "" {
		ratio := 1.0
		if s.Config.SampleRatio != nil {
			ratio = *s.Config.SampleRatio
		}
		// A request that comes with a trace context keeps its caller's
		// decision, so a trace is kept or dropped whole.
		tpOpts = append(tpOpts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))))
	}
	return &Provider{sdk: sdktrace.NewTracerProvider(tpOpts...)}, nil
}

// TracerProvider is the provider to hand to the router; nil when tracing
// is off (a nil Provider too).
func (p *Provider) TracerProvider() trace.TracerProvider {
	if p == nil || p.sdk == nil {
		return nil
	}
	return p.sdk
}

// ForceFlush exports every span ended so far, within ctx: on Lambda
// before an invocation ends, since a frozen environment exports nothing.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p == nil || p.sdk == nil {
		return nil
	}
	return p.sdk.ForceFlush(ctx)
}

// Shutdown exports what is left and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.sdk == nil {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// loggedExporter reports export failures to the gateway's logger, at most
// once per interval, and hides them from the SDK: it would hand them to
// OpenTelemetry's process-wide error handler, which logs in another format
// on every failed batch.
type loggedExporter struct {
	sdktrace.SpanExporter
	log   *slog.Logger
	every rate.Sometimes
}

func (e *loggedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		e.every.Do(func() {
			e.log.Warn("exporting trace spans failed (repeats are not logged for 30s)", "spans", len(spans), "error", err)
		})
	}
	return nil
}
