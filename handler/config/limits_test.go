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
