package config

import "testing"

func TestConfig_TracingSection(t *testing.T) {
	half := 0.5
	for _, c := range []struct {
		name, yaml string
		endpoint   string
		ratio      *float64
	}{
		{"absent: off unless the environment says", "", "", nil},
		{"endpoint only: every trace", "tracing:\n  otlp_endpoint: http://collector:4318\n", "http://collector:4318", nil},
		{"ratio as a float", "tracing:\n  otlp_endpoint: https://c.example/otlp\n  sample_ratio: 0.5\n", "https://c.example/otlp", &half},
		{"ratio as an integer", "tracing:\n  sample_ratio: 1\n", "", new(1.0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := mustParse(t, c.yaml+minimal).Tracing
			if got.OTLPEndpoint != c.endpoint {
				t.Errorf("otlp_endpoint = %q, want %q", got.OTLPEndpoint, c.endpoint)
			}
			if (got.SampleRatio == nil) != (c.ratio == nil) || got.SampleRatio != nil && *got.SampleRatio != *c.ratio {
				t.Errorf("sample_ratio = %v, want %v", got.SampleRatio, c.ratio)
			}
		})
	}
}

func TestConfig_TracingErrorsNameFieldAndLine(t *testing.T) {
	for name, c := range map[string]struct{ yaml, want string }{
		"no scheme":      {"tracing:\n  otlp_endpoint: collector:4318\n", `tracing.otlp_endpoint: "collector:4318" is not an http(s) URL (missing scheme? write e.g. http://collector:4318) (line 2)`},
		"grpc scheme":    {"tracing:\n  otlp_endpoint: grpc://collector:4317\n", `tracing.otlp_endpoint: "grpc://collector:4317" is not an http(s) URL (line 2)`},
		"query":          {"tracing:\n  otlp_endpoint: http://c:4318/?token=x\n", "tracing.otlp_endpoint: must not have a query or fragment (line 2)"},
		"ratio above 1":  {"tracing:\n  sample_ratio: 1.5\n", "tracing.sample_ratio: must be between 0 and 1, not 1.5 (line 2)"},
		"negative ratio": {"tracing:\n  sample_ratio: -0.1\n", "tracing.sample_ratio: must be between 0 and 1, not -0.1 (line 2)"},
		"ratio a string": {"tracing:\n  sample_ratio: half\n", "tracing.sample_ratio: must be a number (line 2)"},
		"unknown field":  {"tracing:\n  endpoint: http://c:4318\n", "tracing.endpoint: unknown field (valid fields: otlp_endpoint, sample_ratio) (line 2)"},
	} {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml+minimal, c.want) })
	}
}
