package main

// The defaults the schema and reference state (jsonschema tags) against
// the loader's: a config that sets a field to its stated default loads
// the same as one that leaves it out. Checked for the sections the loader
// fills in itself; stream and backend defaults are applied further in
// (router, handler) and are not seen here.

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/config"
)

func TestStatedDefaultsAreTheLoaders(t *testing.T) {
	sections := map[string]func(*config.Config) any{
		"":          func(c *config.Config) any { return []any{c.SessionTTL, c.MaxBodyBytes, c.MaxBatch, c.MaxPageItems} },
		"store":     func(c *config.Config) any { return c.Store },
		"server":    func(c *config.Config) any { return c.Server },
		"limits":    func(c *config.Config) any { return c.Limits },
		"discovery": func(c *config.Config) any { return c.Discovery },
	}
	props := checkedInSchema(t)["properties"].(map[string]any)
	baseCfg, err := config.Parse([]byte(base), "base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for sec, get := range sections {
		fields := props
		if sec != "" {
			fields = props[sec].(map[string]any)["properties"].(map[string]any)
		}
		for name, f := range fields {
			d, ok := f.(map[string]any)["default"]
			if !ok {
				continue
			}
			def := fmt.Sprint(d)
			if n, ok := d.(float64); ok {
				def = strconv.FormatFloat(n, 'f', -1, 64)
			}
			snippet := fmt.Sprintf("%s: %v\n", name, def)
			if sec != "" {
				snippet = fmt.Sprintf("%s: {%s: %v}\n", sec, name, def)
			}
			cfg, err := config.Parse([]byte(base+snippet), "explicit.yaml")
			if err != nil {
				t.Errorf("%s.%s: its stated default %v does not load: %v", sec, name, def, err)
				continue
			}
			if !reflect.DeepEqual(get(cfg), get(baseCfg)) {
				t.Errorf("%s.%s: stated default %v, but setting it loads %+v where leaving it out loads %+v",
					sec, name, def, get(cfg), get(baseCfg))
			}
			checked++
		}
	}
	if checked < 15 {
		t.Fatalf("only %d defaults checked", checked)
	}
}

// TestStatedBoundsAreTheLoaders loads each stated minimum and maximum of
// the top-level sections' numbers, and one past each: the loader takes
// the bounds and refuses what lies past them.
func TestStatedBoundsAreTheLoaders(t *testing.T) {
	props := checkedInSchema(t)["properties"].(map[string]any)
	extra := map[string]string{"audit": "output: stdout, "}
	checked := 0
	for sec, s := range props {
		fields := map[string]any{sec: s}
		if sub, ok := s.(map[string]any)["properties"].(map[string]any); ok {
			fields = sub
		}
		for name, f := range fields {
			fs := f.(map[string]any)
			for _, bound := range []struct {
				key  string
				past float64
			}{{"minimum", -1}, {"maximum", 1}} {
				b, ok := fs[bound.key].(float64)
				if !ok {
					continue
				}
				for _, c := range []struct {
					v  float64
					ok bool
				}{{b, true}, {b + bound.past, false}} {
					v := strconv.FormatFloat(c.v, 'f', -1, 64)
					snippet := fmt.Sprintf("%s: %s\n", name, v)
					if sec != name {
						snippet = fmt.Sprintf("%s: {%s%s: %s}\n", sec, extra[sec], name, v)
					}
					_, err := config.Parse([]byte(base+snippet), "bounds.yaml")
					if (err == nil) != c.ok {
						t.Errorf("%s = %s (stated %s %v): loader error %v", strings.TrimPrefix(sec+"."+name, name+"."), v, bound.key, b, err)
					}
					checked++
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d bounds checked", checked)
	}
}
