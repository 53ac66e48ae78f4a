package config

import (
	"testing"
	"time"
)

func TestConfig_StoreSection(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       time.Duration
	}{
		{"absent", "", DefaultStoreTimeout},
		{"empty", "store: {}\n", DefaultStoreTimeout},
		{"null", "store:\n", DefaultStoreTimeout},
		{"set", "store:\n  timeout: 500ms\n", 500 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := mustParse(t, c.yaml+minimal).Store.Timeout; got != c.want {
				t.Errorf("store.timeout = %v, want %v", got, c.want)
			}
		})
	}
}

func TestConfig_StoreSectionErrorsNameFieldAndLine(t *testing.T) {
	for name, c := range map[string]struct{ yaml, want string }{
		"not a duration": {"store:\n  timeout: soon\n", `store.timeout: "soon" is not a duration (use e.g. 30s, 5m, 1h) (line 2)`},
		"zero":           {"store:\n  timeout: 0s\n", "store.timeout: must be positive, not 0s (line 2)"},
		"too short":      {"store:\n  timeout: 1ms\n", "store.timeout: must be at least 10ms, not 1ms (line 2)"},
		"unknown field":  {"store:\n  timout: 2s\n", "store.timout: unknown field (valid fields: timeout) (line 2)"},
		"not a mapping":  {"store: 2s\n", "store: must be a mapping, not a scalar (line 1)"},
		"not a string":   {"store:\n  timeout: [2s]\n", "store.timeout: must be a string, not a list (line 2)"},
	} {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml+minimal, c.want) })
	}
}
