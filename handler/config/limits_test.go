package config

import "testing"

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
