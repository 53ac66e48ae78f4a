package metrics

import "github.com/prometheus/client_golang/prometheus"

// ObserveAuditDropped exports mcpgw_audit_dropped_total{reason}: the audit
// lines dropped, for each of reasons (the audit writer's: a full buffer, a
// failed write, a shutdown that could not wait), read at scrape time from
// dropped. Every series is exported from the start, at 0, so an alert on
// a rise needs no series to appear first.
func (m *Metrics) ObserveAuditDropped(dropped func(reason string) uint64, reasons []string) {
	if m == nil {
		return
	}
	for _, reason := range reasons {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "mcpgw_audit_dropped_total",
			Help:        "Audit lines dropped, by reason: buffer_full (the output did not keep up), write_failed (the output refused a line: a full disk, a reader gone), shutdown (the output took nothing within the shutdown wait).",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 { return float64(dropped(reason)) }))
	}
}
