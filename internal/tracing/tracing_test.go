package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/internal/testsupport"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSettings_EnabledByAnEndpointUnlessDisabled(t *testing.T) {
	file := config.Tracing{OTLPEndpoint: "http://collector:4318"}
	for _, c := range []struct {
		name string
		cfg  config.Tracing
		env  map[string]string
		want bool
	}{
		{"nothing set: off", config.Tracing{}, nil, false},
		{"the file's endpoint", file, nil, true},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", config.Tracing{}, map[string]string{envEndpoint: "http://c:4318"}, true},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", config.Tracing{}, map[string]string{envTracesEndpoint: "http://c:4318/v1/traces"}, true},
		{"OTEL_SDK_DISABLED wins", file, map[string]string{envSDKDisabled: "true"}, false},
		{"OTEL_TRACES_EXPORTER=none wins", file, map[string]string{envTracesExporter: "none"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := (Settings{Config: c.cfg, Getenv: envOf(c.env)}).Enabled(); got != c.want {
				t.Errorf("Enabled() = %v, want %v", got, c.want)
			}
		})
	}
}

// Spans go where the environment says when it names an endpoint (it wins
// over the file, like every setting), else to the file's; sample_ratio 0
// keeps no new trace but follows a sampled caller.
func TestNew_ExportsWhereConfiguredAndSamples(t *testing.T) {
	fileRC, envRC := testsupport.StartOTLPReceiver(t), testsupport.StartOTLPReceiver(t)
	zero := 0.0
	sampledParent := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled, Remote: true}))
	for _, c := range []struct {
		name     string
		cfg      config.Tracing
		envURL   bool
		ctx      context.Context
		wantFile int
		wantEnv  int
	}{
		{"the file's endpoint", config.Tracing{OTLPEndpoint: fileRC.URL}, false, context.Background(), 1, 0},
		{"the environment's wins", config.Tracing{OTLPEndpoint: fileRC.URL}, true, context.Background(), 0, 1},
		{"ratio 0 drops a new trace", config.Tracing{OTLPEndpoint: fileRC.URL, SampleRatio: &zero}, false, context.Background(), 0, 0},
		{"ratio 0 follows a sampled caller", config.Tracing{OTLPEndpoint: fileRC.URL, SampleRatio: &zero}, false, sampledParent, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{}
			if c.envURL {
				env[envEndpoint] = envRC.URL
				t.Setenv(envEndpoint, envRC.URL) // the exporter reads the process environment
			}
			beforeFile, beforeEnv := len(fileRC.Spans()), len(envRC.Spans())
			p, err := New(context.Background(), Settings{Config: c.cfg, Getenv: envOf(env), ServiceVersion: "test"})
			if err != nil {
				t.Fatal(err)
			}
			_, span := p.TracerProvider().Tracer("test").Start(c.ctx, "probe")
			span.End()
			if err := p.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := len(fileRC.Spans()) - beforeFile; got != c.wantFile {
				t.Errorf("file's collector got %d spans, want %d", got, c.wantFile)
			}
			if got := len(envRC.Spans()) - beforeEnv; got != c.wantEnv {
				t.Errorf("environment's collector got %d spans, want %d", got, c.wantEnv)
			}
		})
	}
}

func TestNew_OffHasNoProvider(t *testing.T) {
	p, err := New(context.Background(), Settings{Getenv: envOf(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if p.TracerProvider() != nil {
		t.Error("tracing off, yet a provider")
	}
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Error(err)
	}
}
