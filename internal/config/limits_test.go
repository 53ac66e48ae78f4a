package config

import (
	"testing"
	"time"
)

func TestConfig_MaxBatch(t *testing.T) {
	if cfg := mustParse(t, minimal); cfg.MaxBatch != DefaultMaxBatch || DefaultMaxBatch != 50 {
		t.Fatalf("default max_batch = %d", cfg.MaxBatch)
	}
	if cfg := mustParse(t, "max_batch: 10\n"+minimal); cfg.MaxBatch != 10 {
		t.Fatalf("max_batch = %d, want 10", cfg.MaxBatch)
	}
	for name, c := range map[string]struct{ yaml, want string }{
		"zero":        {"max_batch: 0\n", "max_batch: must be between 1 and 1000, not 0 (line 1)"},
		"too large":   {"max_batch: 1001\n", "max_batch: must be between 1 and 1000"},
		"not integer": {"max_batch: ten\n", "max_batch: must be an integer"},
	} {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml+minimal, c.want) })
	}
}

func TestConfig_ServerSection(t *testing.T) {
	cfg := mustParse(t, minimal)
	want := Server{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	if cfg.Server != want {
		t.Fatalf("server defaults %+v, want %+v", cfg.Server, want)
	}
	cfg = mustParse(t, "server:\n  read_header_timeout: 2s\n  read_timeout: 5s\n  idle_timeout: 30s\n"+minimal)
	if want := (Server{2 * time.Second, 5 * time.Second, 30 * time.Second}); cfg.Server != want {
		t.Fatalf("server %+v, want %+v", cfg.Server, want)
	}
	for name, c := range map[string]struct{ yaml, want string }{
		"zero":          {"server:\n  read_timeout: 0s\n", "server.read_timeout: must be positive, not 0s (line 2)"},
		"negative":      {"server:\n  idle_timeout: -1s\n", "server.idle_timeout: must be positive"},
		"not duration":  {"server:\n  read_header_timeout: soon\n", "server.read_header_timeout: \"soon\" is not a duration"},
		"unknown field": {"server:\n  write_timeout: 1s\n", "server.write_timeout: unknown field (valid fields: read_header_timeout, read_timeout, idle_timeout)"},
		"not a mapping": {"server: 10s\n", "server: must be a mapping"},
	} {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml+minimal, c.want) })
	}
}

func TestConfig_LimitsSection(t *testing.T) {
	if cfg := mustParse(t, minimal); cfg.Limits.InflightResponseBytes != 256<<20 {
		t.Fatalf("default inflight_response_bytes = %d, want 256MiB", cfg.Limits.InflightResponseBytes)
	}
	for in, want := range map[string]int64{
		"268435456": 268435456,
		"256MiB":    256 << 20,
		"1 GiB":     1 << 30,
		"500MB":     500e6,
		"2048KiB":   2 << 20,
		"1048576B":  1 << 20,
	} {
		cfg := mustParse(t, "limits:\n  inflight_response_bytes: "+in+"\n"+minimal)
		if got := cfg.Limits.InflightResponseBytes; got != want {
			t.Errorf("inflight_response_bytes %s = %d, want %d", in, got, want)
		}
	}
	for name, c := range map[string]struct{ yaml, want string }{
		"too small":   {"limits:\n  inflight_response_bytes: 1KiB\n", "limits.inflight_response_bytes: must be at least 1048576 bytes, not 1024 (line 2)"},
		"not a size":  {"limits:\n  inflight_response_bytes: lots\n", `limits.inflight_response_bytes: "lots" is not a size`},
		"bad unit":    {"limits:\n  inflight_response_bytes: 5TiB\n", "is not a size"},
		"overflow":    {"limits:\n  inflight_response_bytes: 9999999999GiB\n", "is too large"},
		"unknown":     {"limits:\n  max_streams: 5\n", "limits.max_streams: unknown field (valid fields: inflight_response_bytes, listens_per_principal, listen_uris, parked_calls_per_principal, tasks_per_principal, finished_task_bytes_per_principal, task_ttl_max)"},
		"not mapping": {"limits: 5\n", "limits: must be a mapping"},
		"negative":    {"limits:\n  inflight_response_bytes: -5MiB\n", "must be at least"},
		"tiny budget": {"limits:\n  finished_task_bytes_per_principal: 1KiB\n", "limits.finished_task_bytes_per_principal: must be at least 65536 bytes, not 1024 (line 2)"},
	} {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml+minimal, c.want) })
	}
}

func TestConfig_FinishedTaskBytes(t *testing.T) {
	if got := mustParse(t, minimal).Limits.FinishedTaskBytesPerPrincipal; got != 64<<20 {
		t.Fatalf("default finished_task_bytes_per_principal = %d, want 64MiB", got)
	}
	if got := mustParse(t, "limits:\n  finished_task_bytes_per_principal: 1GiB\n"+minimal).Limits.FinishedTaskBytesPerPrincipal; got != 1<<30 {
		t.Fatalf("finished_task_bytes_per_principal 1GiB = %d", got)
	}
}

func TestConfig_ClientBounds(t *testing.T) {
	cfg := mustParse(t, minimal)
	if got := cfg.Limits; got.ListensPerPrincipal != 8 || got.ListenURIs != 100 || got.ParkedCallsPerPrincipal != 8 {
		t.Fatalf("default client bounds %+v, want 8 listens, 100 URIs, 8 parked calls", got)
	}
	cfg = mustParse(t, "limits:\n  listens_per_principal: 2\n  listen_uris: 5\n  parked_calls_per_principal: 3\n"+minimal)
	if got := cfg.Limits; got.ListensPerPrincipal != 2 || got.ListenURIs != 5 || got.ParkedCallsPerPrincipal != 3 {
		t.Fatalf("client bounds %+v, want 2, 5, 3", got)
	}
	for name, c := range map[string]struct{ yaml, want string }{
		"zero listens":  {"limits:\n  listens_per_principal: 0\n", "limits.listens_per_principal: must be between 1 and 1000, not 0 (line 2)"},
		"huge uris":     {"limits:\n  listen_uris: 100000\n", "limits.listen_uris: must be between 1 and 10000, not 100000"},
		"negative park": {"limits:\n  parked_calls_per_principal: -1\n", "limits.parked_calls_per_principal: must be between 1 and 1000, not -1"},
		"not integer":   {"limits:\n  listen_uris: many\n", "limits.listen_uris: must be an integer"},
	} {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml+minimal, c.want) })
	}
}
