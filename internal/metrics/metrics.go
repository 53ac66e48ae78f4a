// Package metrics exposes the gateway's Prometheus metrics: HTTP traffic on
// the MCP endpoint, open SSE streams, and backend exchanges (it implements
// router.Observer). It keeps its own registry, so nothing registered on the
// global default one by a dependency leaks onto /metrics, and tests can
// build as many as they like.
//
// Every label value comes from a closed set (configured vhosts and
// backends, known MCP methods, a few HTTP methods), so a client cannot
// grow the number of series by sending made-up names.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// durationBuckets span a cached ping (sub-millisecond) to a tool call near
// the default 30 s backend timeout.
var durationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Metrics holds the gateway's collectors. A nil *Metrics is valid and
// records nothing, so callers need no "enabled" checks.
type Metrics struct {
	reg *prometheus.Registry

	requests *prometheus.CounterVec   // vhost, method, rpc_method, code
	duration *prometheus.HistogramVec // vhost, method, rpc_method
	inFlight prometheus.Gauge
	sseGET   prometheus.Gauge
	ssePOST  prometheus.Gauge

	backendRequests *prometheus.CounterVec   // vhost, backend, outcome
	backendDuration *prometheus.HistogramVec // vhost, backend
	listCache       *prometheus.CounterVec   // vhost, backend, result
	plugins         *prometheus.CounterVec   // plugin, decision

	series seriesCache
}

// New builds the collectors on a fresh registry, with the Go runtime and
// process collectors operators expect next to the gateway's own.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpgw_http_requests_total",
		Help: "HTTP requests on the MCP endpoint, by virtual host, HTTP method, JSON-RPC method and status code.",
	}, []string{"vhost", "method", "rpc_method", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcpgw_http_request_duration_seconds",
		Help:    "Time to serve a request on the MCP endpoint (for GET, the lifetime of the SSE stream).",
		Buckets: durationBuckets,
	}, []string{"vhost", "method", "rpc_method"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mcpgw_http_requests_in_flight",
		Help: "Requests on the MCP endpoint being served now, open SSE streams included.",
	})
	streams := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcpgw_sse_streams_open",
		Help: "Open SSE streams: kind=get for standalone session streams, kind=post for a call's streamed answer.",
	}, []string{"kind"})
	m.sseGET, m.ssePOST = streams.WithLabelValues("get"), streams.WithLabelValues("post")
	m.backendRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpgw_backend_requests_total",
		Help: "Exchanges with backends, by virtual host, backend and outcome (ok, rpc_error, transport_error, timeout, cancelled).",
	}, []string{"vhost", "backend", "outcome"})
	m.backendDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcpgw_backend_request_duration_seconds",
		Help:    "Time of one exchange with a backend, connection set-up and any handshake included.",
		Buckets: durationBuckets,
	}, []string{"vhost", "backend"})

	m.listCache = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpgw_list_cache_lookups_total",
		Help: "List pages looked up in a backend's list cache (list_cache), by virtual host, backend and result (hit, miss).",
	}, []string{"vhost", "backend", "result"})

	m.plugins = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpgw_plugin_decisions_total",
		Help: "Decisions of the configured plugins (deny_pattern, redact, max_result_bytes, validate_arguments) and rate limits (rate_limit), by plugin and decision (allow, deny, redact, error).",
	}, []string{"plugin", "decision"})

	m.reg.MustRegister(m.requests, m.duration, m.inFlight, streams,
		m.backendRequests, m.backendDuration, m.listCache, m.plugins,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.series.init(m)
	return m
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// BackendCall implements router.Observer. vhost and backend come from the
// router's configuration and outcome from its closed set, so they are safe
// labels; method is not a label (tools/call dominates and per-method detail
// belongs to the HTTP metrics).
func (m *Metrics) BackendCall(vhost, backend, method string, d time.Duration, outcome string) {
	if m == nil {
		return
	}
	m.backendRequests.WithLabelValues(vhost, backend, outcome).Inc()
	m.backendDuration.WithLabelValues(vhost, backend).Observe(d.Seconds())
}

// ListCacheLookup implements router.ListCacheObserver; its labels come
// from the configuration and a fixed pair.
func (m *Metrics) ListCacheLookup(vhost, backend string, hit bool) {
	if m == nil {
		return
	}
	result := "miss"
	if hit {
		result = "hit"
	}
	m.listCache.WithLabelValues(vhost, backend, result).Inc()
}

// PluginDecision implements router.PluginObserver; plugin and decision
// come from the plugins' fixed sets.
func (m *Metrics) PluginDecision(plugin, decision string) {
	if m == nil {
		return
	}
	m.plugins.WithLabelValues(plugin, decision).Inc()
}

// StreamKind tells the two kinds of SSE stream apart.
type StreamKind int

const (
	// StreamGET is a session's standalone stream (GET).
	StreamGET StreamKind = iota
	// StreamPOST is one call's answer sent as an event stream.
	StreamPOST
)

// StreamOpened counts an SSE stream as open; pair it with StreamClosed.
func (m *Metrics) StreamOpened(k StreamKind) {
	if m != nil {
		m.streamGauge(k).Inc()
	}
}

// StreamClosed undoes StreamOpened.
func (m *Metrics) StreamClosed(k StreamKind) {
	if m != nil {
		m.streamGauge(k).Dec()
	}
}

func (m *Metrics) streamGauge(k StreamKind) prometheus.Gauge {
	if k == StreamGET {
		return m.sseGET
	}
	return m.ssePOST
}
