package config

import "time"

// The discovery: block bounds how long an instance trusts what it learned
// of a backend for 2026-07-28 requests (which generation it speaks, its
// capabilities): the backend's own ttlMs, within min_ttl and max_ttl.
// Past it the entry still serves while it is refreshed in the background
// (router/discovery.go), so the bounds set how fresh capabilities are,
// not how often a request waits.

// Discovery defaults.
const (
	DefaultDiscoveryMinTTL = 30 * time.Second
	DefaultDiscoveryMaxTTL = 10 * time.Minute
)

// Discovery is the discovery: block, validated.
type Discovery struct {
	// MinTTL (min_ttl, default 30s, at least 1s) is the least time a
	// backend's discovery is trusted before it is refreshed, whatever
	// its ttlMs (a go-sdk backend says 0).
	MinTTL time.Duration
	// MaxTTL (max_ttl, default 10m, at least min_ttl) is the most.
	MaxTTL time.Duration
}

type rawDiscovery struct {
	// The least time a backend's discovery is trusted before it is
	// refreshed, whatever its ttlMs. At least 1s.
	MinTTL *rawDuration `yaml:"min_ttl" jsonschema:"default=30s"`
	// The most time a backend's discovery is trusted. At least min_ttl.
	MaxTTL *rawDuration `yaml:"max_ttl" jsonschema:"default=10m"`
}

// discovery validates the discovery: block.
func (v *validator) discovery(raw *rawDiscovery) Discovery {
	if raw == nil {
		raw = &rawDiscovery{}
	}
	d := Discovery{MinTTL: v.duration("discovery.min_ttl", raw.MinTTL, DefaultDiscoveryMinTTL, time.Second)}
	d.MaxTTL = v.duration("discovery.max_ttl", raw.MaxTTL, max(DefaultDiscoveryMaxTTL, d.MinTTL), d.MinTTL)
	return d
}
