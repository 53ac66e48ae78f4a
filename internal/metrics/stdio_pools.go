package metrics

import "github.com/prometheus/client_golang/prometheus"

// PoolSample is one stdio backend's process pool on this instance, as the
// router reports it (router.BackendStatus.Pool).
type PoolSample struct {
	VHost, Backend          string
	Running, Idle, Starting int
	// Started and Crashed count since the pool was made: a reload that
	// changes the backend makes a new pool, which Prometheus reads as a
	// counter reset.
	Started, Crashed uint64
}

// ObservePools publishes the stdio backends' pools, read from samples at
// each scrape (nothing is kept between scrapes, so a backend a reload
// removed disappears with it):
//
//	mcpgw_stdio_processes{vhost,backend,state}       gauge: busy, idle, starting
//	mcpgw_stdio_process_starts_total{vhost,backend}  counter
//	mcpgw_stdio_process_crashes_total{vhost,backend} counter: exits nobody asked for
//
// A rising crash count is what to alert on: each crash fails the call the
// process was serving and costs the next request a process start. Call it
// once, before serving; vhost and backend come from the configuration.
func (m *Metrics) ObservePools(samples func() []PoolSample) {
	if m == nil {
		return
	}
	m.reg.MustRegister(&poolCollector{samples: samples})
}

var (
	poolProcesses = prometheus.NewDesc("mcpgw_stdio_processes",
		"Processes of a stdio backend on this instance, by state (busy: serving a request or stopping; idle; starting).",
		[]string{"vhost", "backend", "state"}, nil)
	poolStarts = prometheus.NewDesc("mcpgw_stdio_process_starts_total",
		"Processes of a stdio backend this instance started (handshake done).",
		[]string{"vhost", "backend"}, nil)
	poolCrashes = prometheus.NewDesc("mcpgw_stdio_process_crashes_total",
		"Processes of a stdio backend that ended without the gateway asking (crashed, killed, exited on their own, or wrote something that is not MCP on stdout).",
		[]string{"vhost", "backend"}, nil)
)

// poolCollector reads the pools at scrape time.
type poolCollector struct {
	samples func() []PoolSample
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolProcesses
	ch <- poolStarts
	ch <- poolCrashes
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.samples() {
		for state, n := range map[string]int{"busy": s.Running - s.Idle, "idle": s.Idle, "starting": s.Starting} {
			ch <- prometheus.MustNewConstMetric(poolProcesses, prometheus.GaugeValue, float64(n), s.VHost, s.Backend, state)
		}
		ch <- prometheus.MustNewConstMetric(poolStarts, prometheus.CounterValue, float64(s.Started), s.VHost, s.Backend)
		ch <- prometheus.MustNewConstMetric(poolCrashes, prometheus.CounterValue, float64(s.Crashed), s.VHost, s.Backend)
	}
}
